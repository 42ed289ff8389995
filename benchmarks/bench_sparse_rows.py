"""What a dense rank-16 part of ptb-small's tied table costs the fused
file's decoder (``awd-lm train --table-rank 16``), by layout: the decoder
alone (one sparse int8 ``FULLY_CONNECTED``, 6,990 outputs, 4,369 random
1 x 16 blocks over a 208-wide input: the 95 %-sparse table), the part as
one more block on every row of that product (the input ``[x | x @
proj]``, 224 wide: what the int8-sparse fused file writes,
`export.fused_low_rank.combined`), and the part as a second, dense int8
``[6990 x 16]`` product added to the first (the float and dense files'
layout). Batch 1, hybrid kernels (float input), LiteRT without delegates,
one thread.

In one process, interleaved rounds (`_timing.interleaved_times`): the
median process CPU time per call and its ratio to the decoder alone.

Run: ``TF_USE_LEGACY_KERAS=1 .venv-tf2/bin/python benchmarks/run.py
bench_sparse_rows`` (or ``python benchmarks/bench_sparse_rows.py
[--rounds N] [--tokens N] [--tiny]``); TensorFlow 2.x and LiteRT.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402

import _timing  # noqa: E402
from _timing import Calls, interleaved_times  # noqa: E402
from tf1_awd_sparse.export import sparse_format  # noqa: E402
from tf1_awd_sparse.export import tflite_builder as tfl  # noqa: E402
from tf1_awd_sparse.export.tflite_schema import TensorType  # noqa: E402

ROWS, WIDTH, RANK = 6990, 208, 16
TINY_ROWS = 200


def table(rows, seed):
    """``[rows, WIDTH]`` float weights: the 95 %-sparse table's blocks
    (4,369 of ptb-small's 6,990 x 13, scaled to ``rows``) at random."""
    rng = np.random.RandomState(seed)
    columns = WIDTH // 16
    value = np.zeros([rows, WIDTH], np.float32)
    blocks = int(round(0.048 * rows * columns))
    for index in rng.choice(rows * columns, blocks, replace=False):
        row, column = divmod(int(index), columns)
        value[row, 16 * column:16 * (column + 1)] = rng.randn(16)
    return value


def decoder_file(value, low=None, combined=False):
    """The bytes of a file of the decoder ``x @ value^T`` (sparse int8),
    with ``low`` ``[rows, RANK]`` as one more block a row (``combined``,
    the input ``[x | x @ proj]``) or as a dense int8 product added."""
    schema, flatbuffers = sparse_format.schema_modules()
    build = tfl.Builder(schema, "bench_sparse_rows")
    rows, width = value.shape
    if combined:
        value = np.concatenate([value, low], 1)
    x = build.tensor("x", [1, value.shape[1]], TensorType.FLOAT32)
    build.graph.inputs = [x]
    stored = build.weight("w", value, TensorType.INT8, sparse=True)
    y = tfl.product(build, x, stored, [1, rows], "y")
    if low is not None and not combined:
        proj_t = build.weight("proj_t", np.random.RandomState(0).randn(
            RANK, width).astype(np.float32), TensorType.INT8)
        coded = tfl.product(build, x, proj_t, [1, RANK], "coded")
        extra = tfl.product(build, coded, build.weight(
            "low", low, TensorType.INT8), [1, rows], "extra")
        y = tfl.add(build, y, extra, [1, rows], "sum")
    build.graph.outputs = [y]
    return build.finish(flatbuffers)


def cases(rows):
    """(label, file bytes) of the three decoders."""
    value = table(rows, 0)
    low = np.random.RandomState(1).randn(rows, RANK).astype(np.float32)
    return [("the decoder alone", decoder_file(value)),
            ("rank 16: a block on every row", decoder_file(value, low, True)),
            ("rank 16: a second product", decoder_file(value, low))]


def main(argv=()):
    parser = _timing.stream_arguments(__doc__, 15, 300)
    args = parser.parse_args(list(argv))
    if not sparse_format.available():
        print("bench_sparse_rows needs TensorFlow 2.x (it writes the file "
              "with TF 2.x's schema module) and LiteRT")
        return
    from ai_edge_litert import interpreter as litert
    rows = TINY_ROWS if args.tiny else ROWS
    root = tempfile.mkdtemp(prefix="bench_sparse_rows_")
    try:
        built, rng = [], np.random.RandomState(0)
        for index, (label, data) in enumerate(cases(rows)):
            path = os.path.join(root, "%d.tflite" % index)
            with open(path, "wb") as handle:
                handle.write(data)
            interpreter = litert.Interpreter(
                model_path=path, num_threads=1,
                experimental_op_resolver_type=litert.OpResolverType
                .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
            interpreter.allocate_tensors()
            detail = interpreter.get_input_details()[0]
            interpreter.set_tensor(detail["index"], rng.randn(
                *detail["shape"]).astype(np.float32))
            built.append((label, (Calls(), interpreter.invoke)))
        _, cpu = interleaved_times(built, args.rounds, args.tokens)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    times = {label: np.median(cpu[label]) / args.tokens for label, _ in built}
    base = times[built[0][0]]
    print("ptb-small's decoder (%d outputs, a %d-wide input, 4.8 %% of its "
          "1 x 16 blocks at random), sparse int8, batch 1, LiteRT, no "
          "delegate, 1 thread; %d rounds x %d calls"
          % (rows, WIDTH, args.rounds, args.tokens))
    print("  %-34s %10s %9s" % ("decoder", "us / call", "x alone"))
    for label, _ in built:
        print("  %-34s %10.2f %8.2fx" % (label, 1e6 * times[label],
                                          times[label] / base))


if __name__ == "__main__":
    main(sys.argv[1:])
