"""Sparse storage of the language model's pruned weights in TFLite
(``sparse_storage.store_sparse``), streaming at batch 1, one token per
call, single thread: file bytes, milliseconds per token and the logits'
agreement with the dense file, for every stored format against the dense
uint8 file (``export_lm(..., weights="uint8")``, the deployment format).

Models: the demo preset's size (vocabulary 1,000, the demo corpus's
``hmm_vocab``, tied to a 128-d embedding, LSTM layers of 256 and 128) and
ptb-small's (vocabulary 6,990 tied to 200-d, 2 x 200 LSTM), random
weights (speed does not depend on the values) of which 95 % of every
matrix (the embedding and each LSTM kernel) is zero: the smallest 95 % by
magnitude ("unstructured", for the dense, csr and int8 files), or the
whole 1 x 4 (resp. 1 x 16) blocks along the fully-connected input
dimension of smallest mean magnitude ("1x4 blocks", "1x16 blocks"; where
the block does not divide that dimension, its last block is partial, as
``--pruning-block`` cuts), so the block kernels run on block-sparse
weights. A quantization-aware copy of the unstructured
weights (3 steps on zero ids for its ranges) gives the uint8 file.

Files: dense float (the converter's); dense uint8 (the baseline); int8
dense (every fully-connected weight symmetric per-tensor int8, float
activations: TFLite's hybrid kernels; ``store_sparse(..., "int8",
min_zeros=None)``); float csr and float 1x4 (read sparse by the float
fully-connected kernel); int8 csr (read through DENSIFY: a dense copy made
at the first invoke); int8 1x16 (read sparse by the hybrid kernel; a
tensor whose input dimension 16 does not divide takes ``auto``'s layout,
read through DENSIFY); int8 fast (``layout="fast"``: every weight int8
1 x 16, ptb-small's 200-wide table padded to 208 columns, a PAD before the
decoder and a SLICE after the lookup). Each file runs in LiteRT
(``ai_edge_litert``) and
TF's ``tf.lite.Interpreter``, ``num_threads=1``, with the XNNPACK delegate
(the default) and without it (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``); the
sparse files only without it, as ``runner.open_interpreter`` opens them
(XNNPACK computes NaN from sparse weights; checked here: one short stream
through each sparse file with XNNPACK on).

A token is one call: ids set (a cycle of 97 random ids from a random
state: a constant id can make every product zero, which the hybrid int8
kernels skip), the last call's final states fed back,
``invoke``, every output read. Per model and interpreter, the rows with
XNNPACK and those without it are timed in two groups, each with the
baseline (dense uint8 with XNNPACK) in the same interleaved rounds
(``_timing.interleaved_times``) and in a child process of its own (timing
LiteRT's int8 file with XNNPACK, whose dynamic-range kernels it takes,
makes LiteRT's built-in kernels in the same process 2-3x slower: measured
here); ms/token is the median process CPU time, the ratio the per-round
median of CPU time over the baseline's in the same group. Logits: max
absolute difference over a 6-token stream from a random state, against the
dense float file (float files) or the dense int8 file (int8 files) of the
same weights, in the same interpreter and delegate setting. Each time is
also given against the fastest dense file with XNNPACK in the same
interpreter (`fastest_dense`: int8 in LiteRT, where XNNPACK runs its
fully-connected layers as dynamically quantized int8), the baseline of
every speed claim in the docs; ``bench_fused`` times the fused files.

Run: ``TF_USE_LEGACY_KERAS=1 .venv-tf2/bin/python benchmarks/run.py
bench_sparse_storage`` (or ``python benchmarks/bench_sparse_storage.py
[--rounds N] [--tokens N] [--tiny] [--model QAT_DIR]``: ``--model`` times
the files of a trained quantization-aware model directory, pruned as it
was trained, instead); TensorFlow 2.x only.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from tf1_awd_sparse.awd_lm.config import presets  # noqa: E402
from tf1_awd_sparse.awd_lm.graph import model  # noqa: E402
from tf1_awd_sparse.awd_lm.inference import (  # noqa: E402
    export, tflite_weights)
from tf1_awd_sparse.export import sparse_format, sparse_storage  # noqa: E402
from tf1_awd_sparse.export.runner import open_interpreter  # noqa: E402
from tf1_awd_sparse.transforms import pruning_cut  # noqa: E402
import _timing  # noqa: E402
from _timing import Calls, interleaved_times  # noqa: E402

SPARSITY = 0.95
#: name -> (vocab, emb, hidden, layers)
MODELS = [("demo", (1000, 128, 256, 2)), ("ptb-small", (6990, 200, 200, 2))]
TINY = [("tiny", (60, 16, 32, 2))]
#: Stream of the logits check (ids modulo the vocabulary).
CHECK_IDS = (1, 7, 42, 3, 99, 5)
#: Random ids of the timed stream (cycled), the same in every file.
TIMED_IDS = 97

#: (file, weight set, store_sparse arguments or None for an export, the
#: reference file of its logits check)
FILES = [
    ("dense float", "unstructured", None, None),
    ("dense uint8", "unstructured", None, "dense float"),
    ("int8 dense", "unstructured", ("int8", "auto", None), "dense float"),
    ("float csr", "unstructured", ("float", "csr", 0.5), "dense float"),
    ("float 1x4", "1x4 blocks", ("float", "1x4", 0.5), "dense float"),
    ("int8 csr", "unstructured", ("int8", "csr", 0.5), "int8 dense"),
    ("int8 1x16", "1x16 blocks", ("int8", "1x16", 0.5), "int8 dense"),
    # int8 1 x 16, the input dimension padded to a multiple of 16 where
    # 16 does not divide it (ptb-small's 200-wide table: 208).
    ("int8 fast", "1x16 blocks", ("int8", "fast", 0.5), "int8 dense"),
]
BASELINE = "dense uint8"


def masked(value, axis, block, fraction):
    """``value`` with its smallest ``fraction`` zeroed: entries by
    magnitude (``block`` 1), or whole runs of ``block`` entries along
    ``axis`` by their mean magnitude (a partial last run where ``block``
    does not divide that axis, as `compression_ops.pruning_block` cuts
    ptb-small's 200-wide table in 1 x 16 blocks)."""
    pair = (1, block) if axis == 1 else (block, 1)
    means = pruning_cut.block_scores(np.abs(value), pair)
    keep = means > np.quantile(means, fraction)
    return (value * pruning_cut.expand_blocks(
        keep, pair, value.shape)).astype(np.float32)


def weight_sets(variables, values, shapes):
    """``{set name: {variable: masked value}}`` of the 2-D variables: the
    ``FILES``' weight sets. ``shapes``: the fully-connected weight shapes
    (``tflite_weights.weight_shapes``): a variable of that shape has its
    input dimension on axis 1 (the embedding), one of the transposed shape
    on axis 0 (a kernel ``[input + units, 4 units]``)."""
    sets = {}
    for name, block in (("unstructured", 1), ("1x4 blocks", 4),
                        ("1x16 blocks", 16)):
        sets[name] = {}
        for var in variables:
            value = values[var.name]
            if tuple(value.shape) in shapes:
                axis = 1
            elif tuple(value.shape[::-1]) in shapes:
                axis = 0
            else:
                raise ValueError("%s %s is no fully-connected weight %s"
                                 % (var.name, value.shape, shapes))
            sets[name][var] = masked(value, axis, block, SPARSITY)
    return sets


def checkpoints(root, params):
    """Random weights in the quantization-aware model's graph, masked per
    weight set and saved; returns ``{set name: checkpoint prefix}`` (the
    unstructured one with ranges from 3 steps on zero ids)."""
    shapes = {tuple(s) for s in tflite_weights.weight_shapes(params)}
    prefixes = {}
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        batch = {"inputs": tf.zeros([2, 5], tf.int32),
                 "targets": tf.zeros([2, 5], tf.int32)}
        built = model.build_lm(batch, True, params.replace(quant=True))
        variables = [v for v in tf.trainable_variables()
                     if len(v.shape) == 2]
        saver = tf.train.Saver()
        with tf.Session(graph=graph, config=tf.ConfigProto(
                intra_op_parallelism_threads=1,
                inter_op_parallelism_threads=1)) as session:
            session.run(tf.global_variables_initializer())
            values = dict(zip([v.name for v in variables],
                              session.run(variables)))
            for name, assigned in weight_sets(variables, values,
                                              shapes).items():
                for var, value in assigned.items():
                    var.load(value, session)
                if name == "unstructured":
                    for _ in range(3):
                        session.run(built.loss)
                prefixes[name] = saver.save(session, os.path.join(
                    root, name.replace(" ", "_"), "model.ckpt"),
                    write_meta_graph=False)
    return prefixes


def build_files(root, params, prefixes):
    """Writes the ``FILES`` (and the untimed dense references of the block
    weight sets); returns ``{file name: path}``, ``{file name: reference
    name}`` and ``{file name: describe() of it}``."""
    float_params = params.replace(quant=False)
    dense = {}   # weight set -> dense float bytes
    for name, prefix in sorted(prefixes.items()):
        path = os.path.join(root, "float_%s.tflite" % name.replace(" ", "_"))
        export.export_lm(float_params, prefix, path, 1, 1, weights="float")
        with open(path, "rb") as handle:
            dense[name] = handle.read()
    paths, refs, described = {}, {}, {}

    def write(name, data):
        paths[name] = os.path.join(root, name.replace(" ", "_") + ".tflite")
        with open(paths[name], "wb") as handle:
            handle.write(data)

    for name, weights, storing, ref in FILES:
        if name == "dense uint8":
            paths[name] = os.path.join(root, "dense_uint8.tflite")
            export.export_lm(params.replace(quant=True, quant_delay=0),
                             prefixes[weights], paths[name], 1, 1,
                             weights="uint8")
        elif storing is None:
            write(name, dense[weights])
        else:
            data, described[name] = sparse_storage.store_sparse(
                dense[weights], weights=storing[0], layout=storing[1],
                min_zeros=storing[2])
            write(name, data)
        refs[name] = ref
        if ref is not None and weights != "unstructured":
            # The dense file of the same weights (not timed).
            refs[name] = "%s (%s)" % (ref, weights)
            if refs[name] not in paths:
                data = dense[weights] if ref == "dense float" else \
                    sparse_storage.store_sparse(dense[weights], "int8",
                                                min_zeros=None)[0]
                write(refs[name], data)
    return paths, refs, described


def runtimes():
    """``[(label, interpreter class, resolver without default delegates)]``
    of LiteRT (where installed) and ``tf.lite``."""
    found = []
    try:
        from ai_edge_litert import interpreter as litert
        found.append(("litert", litert.Interpreter,
                      litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
    except ImportError:
        pass
    make = tf.lite.Interpreter
    resolver = sys.modules[make.__module__].OpResolverType
    found.append(("tf.lite", make,
                  resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES))
    return found


class Stream(object):
    """One interpreter of a file, run token by token, the state carried;
    uint8 inputs quantized and outputs dequantized."""

    def __init__(self, interpreter):
        self.interpreter = interpreter
        interpreter.allocate_tensors()
        self.inputs = {d["name"]: d for d in interpreter.get_input_details()}
        self.outputs = {d["name"]: d
                        for d in interpreter.get_output_details()}
        self.raw = {d["index"]: np.zeros(d["shape"], d["dtype"])
                    for d in self.inputs.values()}
        # output index -> input index of the carried state
        self.loop = {self.outputs["final" + n[len("state"):]]["index"]:
                     d["index"] for n, d in self.inputs.items()
                     if n.startswith("state_")}
        self.ids, self.calls = [], 0

    def stream_ids(self, count=TIMED_IDS, seed=0):
        """Gives the timed calls a stream of ``count`` random ids (cycled)
        and a random starting state. A constant id would time a stream that
        the hybrid int8 kernels do not compute: they skip an all-zero input
        vector, and a block-pruned table's row can be all zero (at 95 %
        zeros in 1 x 16 blocks, half of a 200-wide table's rows are), so
        with zero states every product of such a stream is zero."""
        rng = np.random.RandomState(seed)
        vocab = int(self.outputs["logits"]["shape"][-1])
        shape = self.inputs["inputs"]["shape"]
        self.ids = [np.full(shape, i, np.int32)
                    for i in rng.randint(0, vocab, count)]
        for name, detail in sorted(self.inputs.items()):
            if name.startswith("state_"):
                self.raw[detail["index"]] = _to_input(
                    (0.5 * rng.randn(*detail["shape"])).astype(np.float32),
                    detail)
        return self

    def token(self):
        """The timed call: every input set (the next id of `stream_ids`'s,
        if given), invoke, every output read (the final states kept as the
        next call's)."""
        interpreter = self.interpreter
        if self.ids:
            index = self.inputs["inputs"]["index"]
            self.raw[index] = self.ids[self.calls % len(self.ids)]
            self.calls += 1
        for index, value in self.raw.items():
            interpreter.set_tensor(index, value)
        interpreter.invoke()
        for detail in self.outputs.values():
            value = interpreter.get_tensor(detail["index"])
            if detail["index"] in self.loop:
                self.raw[self.loop[detail["index"]]] = value

    def logits(self, ids, state):
        """Float logits ``[len(ids), vocab]`` of a stream of ids from
        ``state`` (dict input name -> float array)."""
        for name, value in state.items():
            self.raw[self.inputs[name]["index"]] = _to_input(
                value, self.inputs[name])
        found = []
        for i in ids:
            self.raw[self.inputs["inputs"]["index"]] = np.full(
                self.inputs["inputs"]["shape"], i, np.int32)
            self.token()
            detail = self.outputs["logits"]
            found.append(_from_output(self.interpreter.get_tensor(
                detail["index"]), detail).reshape(-1))
        return np.array(found)


def _to_input(value, detail):
    if detail["dtype"] == np.uint8:
        scale, zero_point = detail["quantization"]
        return np.clip(np.round(value / scale + zero_point), 0,
                       255).astype(np.uint8)
    return value.astype(detail["dtype"])


def _from_output(value, detail):
    if detail["dtype"] == np.uint8:
        scale, zero_point = detail["quantization"]
        return (value.astype(np.float32) - zero_point) * scale
    return value.astype(np.float32)


def check_state(path):
    """A seeded random float state of a file's state inputs."""
    rng = np.random.RandomState(0)
    stream = Stream(tf.lite.Interpreter(model_path=path))
    return {n: (0.5 * rng.randn(*d["shape"])).astype(np.float32)
            for n, d in sorted(stream.inputs.items())
            if n.startswith("state_")}


def sparse_summary(described):
    """One short phrase of `sparse_storage.describe`'s report: layouts,
    readers and the fill of the stored values, per tensor."""
    parts = []
    for d in described:
        parts.append("%s %s %s %s fill %.2f" % (
            "x".join(str(s) for s in d["shape"]), d["dtype"], d["layout"],
            "+".join(d["read_by"]), d["nnz"] / max(d["stored_values"], 1)))
    return "; ".join(parts)


def trained_model(directory):
    """``(sizes, params, {weight set: prefix})`` of a trained model
    directory (``--model``, a quantization-aware one: its uint8 file is the
    baseline): every weight set is its checkpoint, pruned as it was
    trained."""
    from tf1_awd_sparse.awd_lm.config import modeldir
    config = modeldir.read_config(os.path.join(directory,
                                               modeldir.CONFIG_FILE))
    params = config["params"].replace(quant_delay=0)
    if not params.quantization.quant:
        raise SystemExit("--model %s: not a quantization-aware model (its "
                         "uint8 file is the baseline): give a compression "
                         "run's qat directory" % directory)
    prefix = os.path.join(config["directory"], config["checkpoint"])
    shape = params.model
    sizes = (shape.vocab_size, shape.emb_size,
             shape.hidden_size, shape.num_layers)
    return sizes, params, {name: prefix for name in (
        "unstructured", "1x4 blocks", "1x16 blocks")}


def bench_model(label, sizes, root, rounds, tokens, trained=None):
    """Builds, checks, times and prints one model (``trained``: the params
    and prefixes of `trained_model`, else random weights of ``sizes``)."""
    vocab, emb, hidden, layers = sizes
    if trained is None:
        params = dict(presets.params_for("demo", "awd", {
            "emb_size": emb, "hidden_size": hidden, "num_layers": layers}),
            vocab_size=vocab, quant_delay=0)
        params = model.check_params(dict(params, use_vd=False))
        prefixes = checkpoints(root, params)
    else:
        params, prefixes = trained
    paths, refs, described = build_files(root, params, prefixes)
    names = [f[0] for f in FILES]
    sparse = {n for n in names if sparse_storage.stores_sparse(paths[n])}
    _print_files(label, sizes, params, paths, described)
    ids = [i % vocab for i in CHECK_IDS]
    state = check_state(paths["dense float"])
    logits, configs = _all_logits(names, paths, refs, sparse, ids, state)
    ms, ratios = _timings(names, paths, sparse, rounds, tokens, root)
    head = ["%s %s" % (r, "XNNPACK" if x else "no XNNPACK")
            for r, x in configs]
    _print_timings(names, configs, head, ms, ratios, rounds, tokens)
    _print_differences(names, refs, configs, head, logits, len(ids))
    _print_xnnpack_check(names, paths, sparse, logits, ids, state, root)


def _print_files(label, sizes, params, paths, described):
    vocab, emb, hidden, layers = sizes
    sizes_of = {n: os.path.getsize(paths[n]) for n in paths}
    print("%s: vocab %d tied to a %d-d embedding, LSTM layers %s; FC "
          "weights %s; %d %% zero" % (
              label, vocab, emb, [hidden] * (layers - 1) + [emb],
              ", ".join("%dx%d" % s
                        for s in tflite_weights.weight_shapes(params)),
              int(100 * SPARSITY)))
    print("  %-12s %-13s %9s %8s  %s" % ("file", "weights", "bytes",
                                         "x uint8", "stored sparse "
                                         "(shape dtype layout read-by fill)"))
    for name, weights, _, _ in FILES:
        print("  %-12s %-13s %9d %7.2fx  %s" % (
            name, weights, sizes_of[name],
            sizes_of[name] / float(sizes_of[BASELINE]),
            sparse_summary(described.get(name, [])) or "-"))


def _all_logits(names, paths, refs, sparse, ids, state):
    """Logits of every file in every setting: {(file, runtime, XNNPACK
    on): array}, and the settings in order."""
    logits, configs = {}, []
    for runtime, make, resolver in runtimes():
        for xnn in (True, False):
            configs.append((runtime, xnn))
            kwargs = {} if xnn else {
                "experimental_op_resolver_type": resolver}
            for name in names + sorted(set(refs.values()) - set(names)
                                       - {None}):
                if name in sparse and xnn:
                    continue
                if name in sparse:   # the library's way: XNNPACK off
                    interpreter = open_interpreter(
                        paths[name],
                        "tf" if runtime == "tf.lite" else runtime,
                        num_threads=1)
                else:
                    interpreter = make(model_path=paths[name],
                                       num_threads=1, **kwargs)
                logits[name, runtime, xnn] = Stream(interpreter).logits(
                    ids, state)
    return logits, configs


def _timings(names, paths, sparse, rounds, tokens, root):
    """ms/token and ratios to the baseline: per runtime, the XNNPACK rows
    and the rows without it, each group with the baseline, in a child
    process of its own (timing LiteRT with XNNPACK slowed its plain kernels
    later in the same process 2.5-3 x)."""
    ms, ratios = {}, {}
    for runtime, _, _ in runtimes():
        base = (BASELINE, runtime, True)
        for xnn in (True, False):
            keys = [base] + [(n, runtime, xnn) for n in names
                             if (n, runtime, xnn) != base
                             and not (xnn and n in sparse)]
            wall, cpu = timed_group(
                [(paths[k[0]], k[1], k[2]) for k in keys], rounds, tokens,
                root)
            for key, times in zip(keys, cpu):
                ratios.setdefault(key, float(np.median(times / cpu[0])))
                ms.setdefault(key, 1e3 * float(np.median(times)) / tokens)
            ms.setdefault(("wall",) + base,
                          1e3 * float(np.median(wall[0])) / tokens)
    return ms, ratios


#: The dense files: the fastest of them with XNNPACK is the baseline of
#: every speed claim (docs/results.md).
DENSE = ("dense float", "dense uint8", "int8 dense")


def fastest_dense(ratios, runtime):
    """The dense file (`DENSE`, XNNPACK on) of lowest time in ``runtime``:
    the ratios are all to the same timed baseline, so the lowest ratio."""
    return min(DENSE, key=lambda n: ratios.get((n, runtime, True),
                                               float("inf")))


def _print_timings(names, configs, head, ms, ratios, rounds, tokens):
    fastest = {r: fastest_dense(ratios, r) for r, _ in configs}

    def cell(key):
        if key not in ms:
            return "-"
        return "%.3f %5.2fx %5.2fx" % (ms[key], ratios[key], ratios[key] / (
            ratios[fastest[key[1]], key[1], True]))

    print("  ms/token (CPU, median of %d rounds x %d tokens), x the dense "
          "uint8 file with XNNPACK (timed in every group) and x the fastest "
          "dense file with XNNPACK (%s), same interpreter:" % (
              rounds, tokens, ", ".join("%s: %s" % (r, f) for r, f in
                                        sorted(fastest.items()))))
    print("  %-12s " % "file" + " ".join("%-25s" % h for h in head))
    for name in names:
        print("  %-12s " % name + " ".join(
            "%-25s" % cell((name, r, x)) for r, x in configs))
    print("  (dense uint8 with XNNPACK, wall ms/token: %s)" % ", ".join(
        "%s %.3f" % (r, ms["wall", BASELINE, r, True])
        for r, x in configs if x))


def _print_differences(names, refs, configs, head, logits, count):
    print("  max |logit difference| over %d tokens against the reference "
          "(same weights, interpreter and delegate setting):" % count)
    print("  %-12s %-30s " % ("file", "reference") +
          " ".join("%-19s" % h for h in head))
    for name in names:
        ref = refs[name]
        cells = []
        for runtime, xnn in configs:
            mine = logits.get((name, runtime, xnn))
            if ref is None or mine is None:
                cells.append("-" if mine is None else "(reference)")
                continue
            other = logits[ref, runtime, xnn]
            cells.append("%.2g" % np.max(np.abs(mine - other)))
        print("  %-12s %-30s " % (name, ref or "-") +
              " ".join("%-19s" % c for c in cells))
    scale = logits["dense float", configs[0][0], configs[0][1]]
    print("  (dense float logits: max |logit| %.3g, std %.3g)"
          % (np.max(np.abs(scale)), np.std(scale)))


def _print_xnnpack_check(names, paths, sparse, logits, ids, state, root):
    print("  the sparse files run without XNNPACK: it computes NaN from "
          "sparse float weights and refuses or miscomputes int8 ones; "
          "checked, one %d-token stream with XNNPACK on:" % len(ids))
    checked = [name for name in names if name in sparse]
    found = {name: [] for name in checked}
    for runtime, _, _ in runtimes():
        results = xnnpack_logits([paths[n] for n in checked], runtime, ids,
                                 state, root)
        for name, (on, error) in zip(checked, results):
            if on is None:
                found[name].append("%s: %s" % (runtime, error))
                continue
            off = logits[name, runtime, False]
            finite = bool(np.all(np.isfinite(on)))
            found[name].append("%s: %s, %s" % (
                runtime, "finite" if finite else "%d of %d NaN/inf" % (
                    int(np.sum(~np.isfinite(on))), on.size),
                "max diff %.2g to no XNNPACK" % np.max(np.abs(on - off))
                if finite else "not equal"))
    for name in checked:
        print("    %-12s %s" % (name, "; ".join(found[name])))


def xnnpack_logits(paths, runtime, ids, state, root):
    """``[(logits, None) or (None, what went wrong)]``, one per file of
    ``paths``: `Stream.logits` of the file opened with the interpreter's
    defaults (XNNPACK on). The files are read in child processes, which a
    crash of the interpreter ends: one child for all of them while none
    crashes (a child's start-up, TensorFlow's import, costs more than its
    work); a crash is that file's result, and a new child takes the files
    after it."""
    arrays = os.path.join(root, "check_in.npz")
    np.savez(arrays, ids=np.asarray(ids), **state)
    results = []
    while len(results) < len(paths):
        todo = paths[len(results):]
        outs = [os.path.join(root, "check_out_%d.npz" % (len(results) + i))
                for i in range(len(todo))]
        for out in outs:
            if os.path.exists(out):
                os.remove(out)
        child = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--xnnpack-check",
             runtime, arrays, json.dumps(list(zip(todo, outs)))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=600)
        for out in outs:
            if not os.path.exists(out):
                break
            with np.load(out) as loaded:
                results.append((loaded["logits"], None) if "logits" in
                               loaded.files else (None, str(loaded["error"])))
        if len(results) < len(paths):
            # The child ended on the next file, before its result.
            if child.returncode < 0:
                error = "the process crashed (signal %d)" % -child.returncode
            else:
                lines = [l for l in child.stderr.splitlines() if l.strip()]
                error = "fails: %s" % (lines[-1][:100] if lines else
                                       "exit status %d" % child.returncode)
            results.append((None, error))
    return results


def timed_group(rows, rounds, tokens, root):
    """Times ``rows`` (``(path, runtime label, XNNPACK on)``, the baseline
    first) in interleaved rounds in a child process (an interpreter with
    XNNPACK computing the int8 file's dynamic-range kernels makes LiteRT's
    built-in kernels in the same process 2-3x slower: the rows without
    XNNPACK are timed apart from it). Returns ``(wall, cpu)``: float
    arrays ``[len(rows), rounds]`` of seconds per round."""
    spec, out = os.path.join(root, "time_in.json"), os.path.join(
        root, "time_out.npz")
    with open(spec, "w") as handle:
        json.dump({"rows": rows, "rounds": rounds, "tokens": tokens}, handle)
    if os.path.exists(out):
        os.remove(out)
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--time-group", spec,
         out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True)
    if child.returncode != 0 or not os.path.exists(out):
        raise RuntimeError("timing child failed (status %d): %s" % (
            child.returncode, child.stderr.strip()[-2000:]))
    with np.load(out) as loaded:
        return loaded["wall"], loaded["cpu"]


def _time_group(spec, out):
    """The child of `timed_group`."""
    with open(spec) as handle:
        spec = json.load(handle)
    found = {label: (make, resolver) for label, make, resolver in runtimes()}
    built = []
    for i, (path, runtime, xnn) in enumerate(spec["rows"]):
        make, resolver = found[runtime]
        kwargs = {} if xnn else {"experimental_op_resolver_type": resolver}
        stream = Stream(make(model_path=path, num_threads=1,
                             **kwargs)).stream_ids()
        built.append((i, (Calls(), stream.token)))
    wall, cpu = interleaved_times(built, spec["rounds"], spec["tokens"])
    np.savez(out, wall=np.array([wall[i] for i, _ in built]),
             cpu=np.array([cpu[i] for i, _ in built]))


def _xnnpack_check(runtime, arrays, files):
    """The child of `xnnpack_logits`: ``files`` is JSON, ``[[path, out],
    ...]``; each file's logits (or its error) are written to its ``out``
    as soon as they are known, so a crash loses only the file being read."""
    make = {label: cls for label, cls, _ in runtimes()}[runtime]
    with np.load(arrays) as loaded:
        ids = [int(i) for i in loaded["ids"]]
        state = {n: loaded[n] for n in loaded.files if n != "ids"}
    for path, out in json.loads(files):
        try:
            found = {"logits": Stream(make(model_path=path, num_threads=1))
                     .logits(ids, state)}
        except Exception as error:  # pylint: disable=broad-except
            # What the interpreter refuses is that file's result.
            lines = [l for l in str(error).splitlines() if l.strip()]
            found = {"error": np.array("fails: %s" % ("%s: %s" % (
                type(error).__name__, lines[-1]) if lines else
                type(error).__name__)[:100])}
        np.savez(out, **found)


def main(argv=()):
    parser = _timing.stream_arguments(__doc__, 31, 100)
    parser.add_argument("--xnnpack-check", nargs=3, default=None,
                        metavar=("RUNTIME", "NPZ", "FILES_JSON"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--model", default=None, metavar="QAT_DIR",
                        help="a trained quantization-aware model directory "
                        "(a compression run's qat/) instead of the random "
                        "models")
    parser.add_argument("--time-group", nargs=2, default=None,
                        metavar=("JSON", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    if args.time_group:
        _time_group(*args.time_group)
        return
    if args.xnnpack_check:
        _xnnpack_check(*args.xnnpack_check)
        return
    if not sparse_format.available():
        print("bench_sparse_storage needs TensorFlow 2.x (sparse TFLite "
              "storage); this is TensorFlow %s" % tf.__version__)
        return
    models = [(label, sizes, None) for label, sizes in (
        TINY if args.tiny else MODELS)]
    if args.model:
        sizes, params, prefixes = trained_model(args.model)
        models = [(args.model + " (trained; every weight set is its own)",
                   sizes, (params, prefixes))]
    for label, sizes, trained in models:
        root = tempfile.mkdtemp(prefix="bench_sparse_storage_")
        try:
            bench_model(label, sizes, root, args.rounds, args.tokens,
                        trained)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
