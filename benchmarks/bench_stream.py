"""Streaming inference of the language model at batch 1, in milliseconds
per token: ``LanguageModel.step`` on the TF graph and on the exported
float and uint8 TFLite files (``lm.export_model(..., batch_size=1,
num_steps=1)``), each file in ``tf.lite.Interpreter`` and LiteRT (where
installed), the uint8 / float ratio per runtime (issue 20's aim: at most
0.6 in LiteRT), where the time goes, and a 95 % magnitude-sparse copy.

The model is ptb-small size with weights from one short epoch on random
ids (speed does not depend on the values): a vocabulary of 7,000 tied to
a 200-d embedding, 2 x 200 LSTM layers (``model='plain'``), then one
quantization-aware epoch for the uint8 file. A token is one call: the
state read back and fed again. ``step`` rows include the library's work
around the model (padding, quantizing the state, the float64
log-softmax); ``invoke`` rows time only ``set_tensor`` / ``invoke`` /
``get_tensor`` of the ids, states and logits. The interpreters'
``num_threads`` is left unset (one thread) unless a row says 2;
"no XNNPACK" is the interpreter without its default delegate
(``OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES``). Every row is
timed in the same interleaved rounds (``_timing.interleaved_times``);
ratios are per-round medians of process CPU time (wall for 2 threads).

Where the time goes: the tied decoder (``[1, 200] x [7000, 200]^T``, the
same table, bias and, for uint8, the trained ranges) and the embedding
gather are exported alone and timed the same way; the LSTM stack is the
rest. Sparse: the smallest 95 % of each kernel and of the embedding set
to zero, exported as usual and with the converter's
``tf.lite.Optimize.EXPERIMENTAL_SPARSITY`` (TF >= 2.4; with ``DEFAULT``
for uint8), file bytes and the tensors stored in sparse format.

Run: ``.venv/bin/python benchmarks/run.py bench_stream``
(or ``python benchmarks/bench_stream.py [--rounds N] [--tiny]``).
"""
import contextlib
import inspect
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from tf1_awd_sparse.base import compat as _compat  # noqa: E402
from tf1_awd_sparse.awd_lm.corpus import data  # noqa: E402
from tf1_awd_sparse.awd_lm.inference import lm  # noqa: E402
from tf1_awd_sparse.awd_lm.config import modeldir, presets  # noqa: E402
from tf1_awd_sparse.awd_lm.config.params import as_params  # noqa: E402
from tf1_awd_sparse.awd_lm.training import train  # noqa: E402
from tf1_awd_sparse.export import graphdef  # noqa: E402
import _timing  # noqa: E402
from _timing import Calls, interleaved_times  # noqa: E402

FULL = dict(vocab=7000, units=200, layers=2)
TINY = dict(vocab=60, units=8, layers=2)
SPARSITY = 0.95


def train_runs(root, vocab, units, layers):
    """A float and a quantization-aware run directory of the benchmark's
    model, one epoch each on random ids; returns ``{'float': dir,
    'uint8': dir}``."""
    rng = np.random.RandomState(0)
    words = [data.EOS] + ["w%d" % i for i in range(1, vocab)]
    splits = [rng.randint(0, vocab, n).astype(np.int32)
              for n in (1400, 200, 200)]
    corpus = data.Corpus(words, splits[0], splits[1], splits[2],
                         {s: 0 for s in data.SPLITS}, "random ids")
    params = presets.params_for("demo", "plain", {
        "emb_size": units, "hidden_size": units, "num_layers": layers,
        "batch_size": 20, "eval_batch_size": 10, "bptt": 35,
        "max_epochs": 1, "quant_epochs": 1, "quant_delay": 0,
        "quant": True})
    float_params, quant_params = presets.split_quant(as_params(params))
    quiet = dict(log=lambda *a: None, threads=1)
    dirs = {"float": os.path.join(root, "float"),
            "uint8": os.path.join(root, "uint8")}
    train.run(corpus, float_params, dirs["float"], **quiet)
    train.run(corpus, quant_params, dirs["uint8"],
              init_from=train.best_checkpoint(dirs["float"]), **quiet)
    return dirs


def sparse_copy(run_dir, out_dir, fraction):
    """A copy of ``run_dir``'s model whose every 2-D float variable (the
    embedding and the kernels) has its smallest ``fraction`` of entries by
    magnitude set to zero; returns ``out_dir`` (a model directory)."""
    config = modeldir.read_config(os.path.join(run_dir,
                                               modeldir.CONFIG_FILE))
    reader = tf.train.load_checkpoint(os.path.join(run_dir,
                                                   config["checkpoint"]))
    graph = tf.Graph()
    with graph.as_default():
        variables = {}
        for name in sorted(reader.get_variable_to_shape_map()):
            value = reader.get_tensor(name)
            if value.ndim == 2 and value.dtype == np.float32:
                cut = np.quantile(np.abs(value), fraction)
                value = np.where(np.abs(value) > cut, value, 0.0).astype(
                    np.float32)
            variables[name] = tf.Variable(value, name="v%d" % len(variables))
        saver = tf.train.Saver(variables)
        with tf.Session(graph=graph) as session:
            session.run(tf.global_variables_initializer())
            os.makedirs(out_dir)
            saver.save(session, os.path.join(out_dir, "model.ckpt"),
                       write_meta_graph=False)
    modeldir.write_config(out_dir, config["params"], config["words"],
                          config.get("produced_by", {}), "model.ckpt")
    return out_dir


@contextlib.contextmanager
def converter_optimizations(names):
    """Within the block, the library's converter (``tf.lite.TFLiteConverter``
    of `_compat.tf`) applies ``tf.lite.Optimize`` members ``names``."""
    original = _compat.tf.lite.TFLiteConverter
    members = [getattr(_compat.tf.lite.Optimize, n) for n in names]

    class Optimizing(original):
        def convert(self):
            self.optimizations = members
            return original.convert(self)

    _compat.tf.lite.TFLiteConverter = Optimizing
    try:
        yield
    finally:
        _compat.tf.lite.TFLiteConverter = original


def sparsity_available():
    """Whether this TensorFlow's converter has EXPERIMENTAL_SPARSITY."""
    return hasattr(getattr(tf.lite, "Optimize", None),
                   "EXPERIMENTAL_SPARSITY")


def runtimes():
    """``[(label, interpreter class, kwargs)]`` available here: TF's and
    LiteRT's interpreters, and where the constructor allows it each
    without XNNPACK and with 2 threads."""
    found = [("tf.lite", tf.lite.Interpreter)]
    try:
        from ai_edge_litert.interpreter import Interpreter
        found.append(("litert", Interpreter))
    except ImportError:
        pass
    result = []
    for label, make in found:
        result.append((label, make, {}))
        arguments = inspect.signature(make.__init__).parameters
        if "experimental_op_resolver_type" in arguments:
            resolver = sys.modules[make.__module__].OpResolverType
            result.append((label + " no XNNPACK", make, {
                "experimental_op_resolver_type":
                    resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES}))
        if "num_threads" in arguments:
            result.append((label + " 2 threads", make, {"num_threads": 2}))
    return result


def invoke_fn(path, make, kwargs):
    """A callable that runs one streaming token through a file: every
    input set (ids, and the last call's final states for the states),
    ``invoke``, every output read."""
    interpreter = make(model_path=path, **kwargs)
    interpreter.allocate_tensors()
    inputs = interpreter.get_input_details()
    outputs = {d["name"]: d["index"]
               for d in interpreter.get_output_details()}
    feed = {d["index"]: np.zeros(d["shape"], d["dtype"]) for d in inputs}
    loop = {outputs["final" + d["name"][len("state"):]]: d["index"]
            for d in inputs if d["name"].startswith("state_")}

    def call():
        for index, value in feed.items():
            interpreter.set_tensor(index, value)
        interpreter.invoke()
        for index in outputs.values():
            value = interpreter.get_tensor(index)
            if index in loop:
                feed[loop[index]] = value
    return call


def step_fn(model):
    """A callable that reads one token with ``model.step``, the state
    carried."""
    ids, holder = np.ones([1], np.int32), [None]

    def call():
        _, holder[0] = model.step(ids, holder[0])
    return call


def part_file(run_dir, path, part):
    """Writes one part of a run's model alone as a TFLite file, with the
    run's weights (and, for a quantization-aware run, its ranges):
    ``part='decoder'``: the top layer's output ``h`` ``[1, units]`` to the
    tied decoder's ``logits`` ``[1, vocab]``; ``'gather'``: ids ``[1, 1]``
    to their embedding rows. Returns the file's bytes."""
    from tf1_awd_sparse.ops import fake_quant as fq
    config = modeldir.read_config(os.path.join(run_dir,
                                               modeldir.CONFIG_FILE))
    params = config["params"]
    reader = tf.train.load_checkpoint(os.path.join(run_dir,
                                                   config["checkpoint"]))
    quantized = bool(params.quantization.quant)
    top = "lm/layer_%d/lstm_%d/quant/output/" % ((params.model.num_layers
                                                   - 1,) * 2)
    graph = tf.Graph()
    with graph.as_default():
        values = reader.get_tensor("lm/embedding")
        table = tf.constant(values)
        if quantized:
            table = fq.quantize_weight(table, 8)
        if part == "gather":
            source = tf.placeholder(tf.int32, [1, 1], name="inputs")
            out = tf.gather(table, source)
            stats = {"inputs": (0.0, 1.0)} if quantized else None
            if quantized:  # TOCO wants a range: the table's grid
                out = fq.fake_quant(out, float(values.min()),
                                    float(values.max()), 8,
                                    narrow_range=True, name="logits")
        else:
            source = tf.placeholder(tf.float32, [1, params.model.emb_size],
                                    name="h")
            h, stats = source, None
            if quantized:
                lo, hi = [float(reader.get_tensor(top + e))
                          for e in ("min", "max")]
                scale, zero_point = graphdef.nudged_quantization(lo, hi)
                h, stats = fq.fake_quant(h, lo, hi, 8), {
                    "h": (float(zero_point), 1.0 / scale)}
            out = tf.nn.bias_add(tf.matmul(h, table, transpose_b=True),
                                 reader.get_tensor("lm/softmax_bias"))
            if quantized:
                out = fq.fake_quant(out, *[float(reader.get_tensor(
                    "lm/decoder/quant/logits/" + e)) for e in ("min", "max")],
                    num_bits=8, name="logits")
        if not quantized:  # TOCO: the output must be the fake-quant's
            out = tf.identity(out, name="logits")
        with tf.Session(graph=graph) as session:
            model_bytes = graphdef.convert(session, [source], [out], stats)
    with open(path, "wb") as handle:
        handle.write(model_bytes)
    return len(model_bytes)


def sparse_tensors(path):
    """Tensors of a file stored in TFLite's sparse format (None: this
    interpreter does not report it)."""
    interpreter = tf.lite.Interpreter(model_path=path)
    details = interpreter.get_tensor_details()
    if not details or "sparsity_parameters" not in details[0]:
        return None
    return sum(1 for d in details if d["sparsity_parameters"])


def _median_ratio(times, name, base):
    return float(np.median(np.array(times[name]) / np.array(times[base])))


def export_files(root, dirs):
    """The streaming TFLite files: every run directory's, each part of the
    dense and sparse runs alone, and the sparse runs with the converter's
    sparsity optimization where this TensorFlow has it. Returns (dict
    name -> path, dict name -> error line of a failed conversion)."""
    files, failed = {}, {}
    for key, run_dir in dirs.items():
        files[key] = os.path.join(root, key.replace(" ", "_") + ".tflite")
        lm.export_model(run_dir, files[key], batch_size=1, num_steps=1)
        for part in ("decoder", "gather"):
            if key.startswith("sparse") and part == "gather":
                continue
            name = "%s %s alone" % (key, part)
            files[name] = os.path.join(root, name.replace(" ", "_") +
                                       ".tflite")
            part_file(run_dir, files[name], part)
    if not sparsity_available():
        return files, failed
    for key in ("sparse float", "sparse uint8"):
        options = (["EXPERIMENTAL_SPARSITY"] if key.endswith("float") else
                   ["DEFAULT", "EXPERIMENTAL_SPARSITY"])
        for name, make in (
                (key + " sparse-format", lambda p: lm.export_model(
                    dirs[key], p, batch_size=1, num_steps=1)),
                (key + " decoder alone sparse-format",
                 lambda p: part_file(dirs[key], p, "decoder"))):
            path = os.path.join(root, name.replace(" ", "_") + ".tflite")
            try:
                with converter_optimizations(options):
                    make(path)
                files[name] = path
            except Exception as error:  # pylint: disable=broad-except
                failed[name] = str(error).strip().split("\n")[0][:150]
    return files, failed


#: The files' row order (those written).
ORDER = ["float", "uint8", "float decoder alone", "uint8 decoder alone",
         "float gather alone", "uint8 gather alone", "sparse float",
         "sparse float sparse-format", "sparse uint8",
         "sparse uint8 sparse-format", "sparse float decoder alone",
         "sparse float decoder alone sparse-format",
         "sparse uint8 decoder alone",
         "sparse uint8 decoder alone sparse-format"]


def timed_rows(dirs, files):
    """``[(row name, callable)]``: the TF graph first (the baseline), then
    ``step`` on each file, then every file's invoke in every runtime
    (variants only for the dense models)."""
    rows = [("TF graph step", step_fn(lm.LanguageModel.load(dirs["float"])))]
    default = _compat.interpreter_class(None).__module__.split(".")[0]
    for key in ("float", "uint8"):
        rows.append(("%s step (%s)" % (key, default),
                     step_fn(lm.LanguageModel.load(files[key]))))
    vocab = len(lm.LanguageModel.load(files["float"]).words)
    logits = np.zeros([1, 1, vocab], np.float32)
    rows.append(("log-softmax alone (step's numpy float64)",
                 lambda: lm.log_softmax(logits)))
    for label, make, kwargs in runtimes():
        for name in ORDER:
            if name in files and (not kwargs or name in ("float", "uint8")):
                rows.append(("%s, %s" % (name, label),
                             invoke_fn(files[name], make, kwargs)))
    return rows


def report(rows, wall, cpu, sizes, failed, rounds, tokens):
    """Prints the table of ``timed_rows``' times."""
    base = rows[0][0]
    print("streaming, batch 1, one token per call; median over %d rounds x "
          "%d tokens, 1 thread unless named; x TF graph: per-round ratio of "
          "CPU time (wall for 2 threads)" % (rounds, tokens))
    print("  %-44s %8s %8s %9s %10s" % ("model, runtime", "ms/token",
                                         "cpu ms", "x TF graph", "bytes"))
    for name, _ in rows:
        times = wall if "2 threads" in name else cpu
        ratio = 1.0 if name == base else _median_ratio(times, name, base)
        size = sizes.get(name.split(",")[0], "")
        print("  %-44s %8.3f %8.3f %9.2fx %10s" % (
            name, 1e3 * np.median(wall[name]) / tokens,
            1e3 * np.median(cpu[name]) / tokens, ratio, size))
    print("uint8 / float per token, same runtime (issue 20 aim: <= 0.6 in "
          "LiteRT):")
    for name, _ in rows:
        if name.startswith("uint8") and "alone" not in name:
            other = name.replace("uint8", "float")
            times = wall if "2 threads" in name else cpu
            print("  %-44s %6.2fx" % (name.replace("uint8", "uint8/float"),
                                      _median_ratio(times, name, other)))
    print("share of the whole model's invoke (same runtime):")
    for name, _ in rows:
        if " alone, " in name and not name.startswith("sparse"):
            whole = name.split(" ")[0] + ", " + name.split(", ")[1]
            print("  %-44s %6.0f %%" % (name, 100 * _median_ratio(
                cpu, name, whole)))
    for name, line in sorted(failed.items()):
        print("  %s: conversion failed: %s" % (name, line))


def main(argv=()):
    parser = _timing.stream_arguments(__doc__, 21, 40)
    args = parser.parse_args(list(argv))
    shape = TINY if args.tiny else FULL
    print("model: vocab %(vocab)d tied to a %(units)d-d embedding, "
          "%(layers)d x %(units)d LSTM; sparse: %(sparsity)d %% of each "
          "kernel and the embedding zero" % dict(shape, sparsity=int(
              100 * SPARSITY)))
    root = tempfile.mkdtemp(prefix="bench_stream_")
    try:
        dirs = train_runs(root, **shape)
        for key in ("float", "uint8"):
            dirs["sparse " + key] = sparse_copy(
                dirs[key], os.path.join(root, "sparse_" + key), SPARSITY)
        files, failed = export_files(root, dirs)
        sizes = {name: os.path.getsize(path) for name, path in files.items()}
        rows = timed_rows(dirs, files)
        wall, cpu = interleaved_times([(n, (Calls(), f)) for n, f in rows],
                                      args.rounds, args.tokens)
        report(rows, wall, cpu, sizes, failed, args.rounds, args.tokens)
        for name in ORDER:
            if "sparse" in name and name in files:
                count = sparse_tensors(files[name])
                if count is not None:
                    print("  %-44s %d tensors in sparse format, %d bytes"
                          % (name, count, sizes[name]))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
