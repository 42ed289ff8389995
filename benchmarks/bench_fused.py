"""The sparse language model on device: every file of one 95 %-sparse
model (zeros in 1 x 16 blocks) streamed side by side in one process,
against the fastest dense file: bytes, milliseconds per token, and the
logits' agreement.

Files (`export.export_lm`): the dense files with XNNPACK, the
interpreter's default (float; uint8, the fully 8-bit file; int8 weights
with float activations, whose fully-connected layers XNNPACK runs as
dynamically quantized int8), the unrolled sparse file that TFLite's own
sparse kernels read (``--storage sparse --layout fast``: int8 1 x 16, no
delegate: XNNPACK misreads sparse weights), and the files with one builtin
LSTM op per layer (``lstm="fused"``): float and dense int8 (XNNPACK takes
their decoder, never the LSTM op) and int8 in 1 x 16 blocks (no
delegate). **The baseline is the fastest dense file**, the dense file of
lowest median time in this run (int8 with XNNPACK in LiteRT 2.3).

Model: ptb-small's size (vocabulary 6,990 tied to 200-d, 2 x 200 LSTM),
random weights of which 95 % of every matrix is zero in the 1 x 16 blocks
of smallest mean magnitude (`bench_sparse_storage.checkpoints`; its
uint8 file is the unstructured weight set's, with the same shapes: the
dense files' speed does not depend on the values); or ``--model QAT_DIR``,
a trained quantization-aware model directory, every file of its own
weights.

A token is one call of LiteRT's interpreter (``num_threads=1``, batch 1):
the next of 97 random ids set, the unrolled files' states fed back from
their outputs (the fused files keep theirs in the interpreter), invoke,
every output read. All files in one process, in interleaved rounds
(`_timing.interleaved_times`); ms/token is the median process CPU time,
the ratio the per-round median over the baseline's. Logits: max |difference|
over a 6-token stream from a random state, against the dense float file
(float files) or the dense int8 file of the same weights (int8 files).

Run: ``TF_USE_LEGACY_KERAS=1 .venv-tf2/bin/python benchmarks/run.py
bench_fused`` (or ``python benchmarks/bench_fused.py [--rounds N]
[--tokens N] [--tiny] [--model QAT_DIR] [--sizes V,E,H,L]
[--table-rank R[:K]]``);
TensorFlow 2.x and LiteRT.
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402

import bench_sparse_storage as storage  # noqa: E402
import _timing  # noqa: E402
from _timing import Calls, interleaved_times  # noqa: E402
from tf1_awd_sparse.awd_lm.graph import model  # noqa: E402
from tf1_awd_sparse.awd_lm.inference import export  # noqa: E402
from tf1_awd_sparse.awd_lm.inference import fused_export  # noqa: E402
from tf1_awd_sparse.export import fused_lstm, sparse_format  # noqa: E402

MODELS = [("ptb-small", (6990, 200, 200, 2))]
TINY = [("tiny", (60, 16, 32, 2))]
#: (file, export_lm arguments, XNNPACK on, weight set, logits reference)
FILES = [
    ("dense float", dict(weights="float"), True, "1x16 blocks", None),
    ("dense uint8", dict(weights="uint8"), True, "unstructured", None),
    ("dense int8", dict(weights="int8"), True, "1x16 blocks", None),
    ("unrolled int8 fast", dict(weights="int8", storage="sparse",
                                layout="fast"), False, "1x16 blocks",
     "dense int8"),
    ("fused float", dict(weights="float", lstm="fused"), True,
     "1x16 blocks", "dense float"),
    ("fused int8", dict(weights="int8", lstm="fused"), True, "1x16 blocks",
     "dense int8"),
    ("fused int8 1x16", dict(weights="int8", storage="sparse",
                             lstm="fused"), False, "1x16 blocks",
     "dense int8"),
]
DENSE = ("dense float", "dense uint8", "dense int8")
CHECK_IDS = (1, 7, 42, 3, 99, 5)


def litert():
    """LiteRT's interpreter class and its resolver without delegates."""
    from ai_edge_litert import interpreter
    return interpreter.Interpreter, \
        interpreter.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES


class Stream(storage.Stream):
    """`bench_sparse_storage.Stream`, and a fused file's state variables
    (kept in the interpreter) set once at the start of a stream."""

    def start(self, state):
        """Sets every state (inputs and variables, zero-padded) from
        ``state`` (dict name -> array) or zeros."""
        for detail in self.interpreter.get_tensor_details():
            name = detail["name"]
            if not name.startswith("state_"):
                continue
            value = np.zeros(detail["shape"], np.float32)
            if name in state:
                given = state[name]
                value[tuple(slice(0, n) for n in given.shape)] = given
            if name in self.inputs:
                self.raw[detail["index"]] = storage._to_input(
                    value, self.inputs[name])
            else:
                self.interpreter.set_tensor(detail["index"], value)
        return self


def build(root, sizes, trained):
    """Writes the FILES; returns ``{file: path}``."""
    if trained is None:
        vocab, emb, hidden, layers = sizes
        params = dict(storage.presets.params_for("demo", "awd", {
            "emb_size": emb, "hidden_size": hidden, "num_layers": layers}),
            vocab_size=vocab, quant_delay=0)
        params = model.check_params(dict(params, use_vd=False))
        prefixes = storage.checkpoints(root, params)
    else:
        params, prefixes = trained
    paths = {}
    for name, kwargs, _, weights, _ in FILES:
        paths[name] = os.path.join(root, name.replace(" ", "_") + ".tflite")
        if "table_rank" in kwargs:
            _low_rank_file(paths[name], params, prefixes[weights],
                           kwargs["table_rank"], kwargs["rows"])
            continue
        quant = kwargs["weights"] == "uint8"
        export.export_lm(params.replace(quant=quant, quant_delay=0),
                         prefixes[weights], paths[name], 1, 1, **kwargs)
    return paths


def _low_rank_file(path, params, prefix, rank, rows):
    """The fused int8 1 x 16 file of ``prefix`` with a dense rank-``rank``
    part of the table (`fused_lstm.fused_lm`'s ``low_rank``, random
    N(0, 0.1) values: the speed does not depend on them) on its first
    ``rows`` words (None: every word; ``awd-lm train --table-rank-rows``),
    the others' rows zero."""
    table, layers, bias, clip, _ = fused_export.lm_arrays(params, prefix)
    rng = np.random.RandomState(rank)
    low_rank = (0.1 * rng.randn(table.shape[0], rank),
                0.1 * rng.randn(table.shape[1], rank))
    if rows is not None:
        low_rank[0][rows:] = 0.0
    with open(path, "wb") as handle:
        handle.write(fused_lstm.fused_lm(table, layers, bias, "int8-sparse",
                                         1, clip, low_rank))


def with_table_ranks(ranks):
    """`FILES` plus one fused int8 1 x 16 file per ``(rank, rows)`` in
    ``ranks`` whose table has a dense low-rank part (``awd-lm train
    --table-rank``) on its first ``rows`` words (None: every word)."""
    return FILES + [("fused 1x16 rank %d%s" % (r, "" if k is None else
                                               " k%d" % k),
                     {"table_rank": r, "rows": k}, False, "1x16 blocks",
                     None) for r, k in ranks]


def model_sizes(text):
    """``--sizes``' value ``V,E,H,L`` as a tuple of 4 positive ints
    (vocabulary, embedding, hidden units, layers).

    Raises:
      argparse.ArgumentTypeError: not 4 positive integers, or fewer than 2
        layers."""
    try:
        values = tuple(int(p) for p in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4 or min(values) < 1 or values[3] < 2:
        raise argparse.ArgumentTypeError(
            "expected V,E,H,L: 4 positive integers, L >= 2, got %r" % text)
    return values


def rank_and_rows(text):
    """``--table-rank``'s value: ``R`` or ``R:K`` (the part on the first K
    words) as ``(R, K or None)``.

    Raises:
      argparse.ArgumentTypeError: not positive integers."""
    parts = text.split(":")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if len(parts) > 2 or not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            "expected R or R:K, positive integers, got %r" % text)
    return values[0], values[1] if len(values) == 2 else None


def interpreters(paths):
    """{file: allocated LiteRT interpreter, XNNPACK as FILES says}."""
    make, resolver = litert()
    found = {}
    for name, _, xnn, _, _ in FILES:
        kwargs = {} if xnn else {"experimental_op_resolver_type": resolver}
        found[name] = make(model_path=paths[name], num_threads=1, **kwargs)
        found[name].allocate_tensors()
    return found


def logits(interpreter, ids, state):
    """Float logits ``[len(ids), vocab]`` from ``state``."""
    return Stream(interpreter).start(state).logits(ids, {})


def check_state(sizes):
    """A seeded random state (0.5 N(0, 1)) of every layer: from zero
    state and a random model most logits would be 0."""
    rng = np.random.RandomState(0)
    units = [sizes[2]] * (sizes[3] - 1) + [sizes[1]]
    return {"state_%d_%s" % (layer, part):
            (0.5 * rng.randn(1, n)).astype(np.float32)
            for layer, n in enumerate(units) for part in "ch"}


def op_counts(path):
    """``(LSTM ops, all ops)`` of a file."""
    schema, _ = sparse_format.schema_modules()
    with open(path, "rb") as handle:
        parsed = schema.Model.GetRootAsModel(handle.read(), 0)
    graph = parsed.Subgraphs(0)
    codes = [parsed.OperatorCodes(graph.Operators(i).OpcodeIndex())
             for i in range(graph.OperatorsLength())]
    lstm = sum(max(c.BuiltinCode(), c.DeprecatedBuiltinCode()) == 16
               for c in codes)
    return lstm, len(codes)


def bench_model(label, sizes, root, rounds, tokens, trained=None):
    """Builds, checks, times and prints one model."""
    paths = build(root, sizes, trained)
    found = interpreters(paths)
    vocab = sizes[0]
    ids = [i % vocab for i in CHECK_IDS]
    state = check_state(sizes)
    outs = {name: logits(found[name], ids, state) for name in found}
    built = [(name, (Calls(), Stream(found[name]).start({}).stream_ids()
                     .token)) for name, _, _, _, _ in FILES]
    _, cpu = interleaved_times(built, rounds, tokens)
    cpu = {name: np.array(times) / tokens for name, times in cpu.items()}
    fastest = min(DENSE, key=lambda n: np.median(cpu[n]))
    print("%s: vocabulary %d tied to %d-d, LSTM %s; 95 %% zeros in 1 x 16 "
          "blocks; LiteRT, 1 thread, batch 1, %d rounds x %d tokens; the "
          "baseline, the fastest dense file: %s" % (
              label, sizes[0], sizes[1], [sizes[2]] * (sizes[3] - 1)
              + [sizes[1]], rounds, tokens, fastest))
    print("  %-20s %9s %8s %6s %8s %10s %9s  %s" % (
        "file", "bytes", "x uint8", "LSTM", "ops", "ms/token",
        "x fastest", "max |logit diff| (reference)"))
    uint8 = os.path.getsize(paths["dense uint8"])
    for name, _, xnn, _, ref in FILES:
        lstm, ops = op_counts(paths[name])
        diff = "-" if ref is None else "%.2g (%s)" % (
            np.max(np.abs(outs[name] - outs[ref])), ref)
        print("  %-20s %9d %7.3fx %6d %8d %10.4f %8.3fx  %s%s" % (
            name, os.path.getsize(paths[name]),
            os.path.getsize(paths[name]) / float(uint8), lstm, ops,
            1e3 * np.median(cpu[name]),
            np.median(cpu[name] / cpu[fastest]), diff,
            "" if xnn else "  [no delegate]"))
    print("  (max |logit| of the dense float file: %.3g)"
          % np.max(np.abs(outs["dense float"])))


def main(argv=()):
    parser = _timing.stream_arguments(__doc__, 21, 200)
    parser.add_argument("--model", default=None, metavar="QAT_DIR",
                        help="a trained quantization-aware model directory "
                        "instead of the random model")
    parser.add_argument("--sizes", type=model_sizes, default=None,
                        metavar="V,E,H,L",
                        help="a random model of vocabulary V tied to E-d, "
                        "L LSTM layers of H units (the last of E) instead "
                        "of ptb-small's size (the demo's: 1000,128,256,2)")
    parser.add_argument("--table-rank", type=rank_and_rows, action="append",
                        default=[], metavar="R[:K]",
                        help="also a fused int8 1 x 16 file whose table has "
                        "a dense rank-R part, on the first K words with :K "
                        "(repeatable)")
    args = parser.parse_args(list(argv))
    global FILES
    FILES = with_table_ranks(args.table_rank)
    if not sparse_format.available():
        print("bench_fused needs TensorFlow 2.x (it writes the files with "
              "TF 2.x's schema module) and LiteRT")
        return
    models = [(label, sizes, None) for label, sizes in (
        TINY if args.tiny else MODELS)]
    if args.sizes:
        models = [("random weights", args.sizes, None)]
    if args.model:
        sizes, params, prefixes = storage.trained_model(args.model)
        models = [(args.model + " (trained)", sizes, (params, prefixes))]
    for label, sizes, trained in models:
        root = tempfile.mkdtemp(prefix="bench_fused_")
        try:
            bench_model(label, sizes, root, args.rounds, args.tokens,
                        trained)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
