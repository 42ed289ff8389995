"""Training-step time of ``WeightDropLSTM`` (weight drop 0.5, fresh and held
masks) and of a bare hoisted projection + ``lstm_sequence`` against
``tf.nn.rnn_cell.LSTMCell`` under ``tf.nn.dynamic_rnn``.

Both take batch-major inputs ``[B, T, D]`` (batch 20, 35 steps, input depth
= units, 200 and 650), a zero initial state, a squared-error loss on the
outputs and plain SGD on all weights. The sequence variant owns the same
two variables as ``LSTMCell`` (``kernel [D+H, 4H]``, ``bias [4H]``), splits
the kernel into ``W_x`` and ``W_h`` with ``tf.split`` (whose gradient is
one concat), computes ``x_t @ W_x + b`` for all steps in one matmul on the
time-major input and runs ``lstm_sequence`` on it. With ``--autodiff`` a
third variant is the same graph with a plain ``tf.while_loop`` and
TensorFlow's autodiff gradient (the naive prototype), to show what the
hand-written gradient buys.

Each variant has its own graph and session; after a warm-up the variants
are timed back to back in each round (rotating the order) and the printed
figures are medians over rounds of the per-round ratio variant / LSTMCell,
for wall time and process CPU time, plus the ratio of the fastest rounds'
CPU times (``cpu-min``). Two thread settings: one intra-op and one inter-op
thread (CPU time is then what the step costs) and TensorFlow's defaults
(all cores; wall time is the figure that matters there).

Run: ``.venv/bin/python benchmarks/run.py bench_layer``
(or ``python benchmarks/bench_layer.py [--rounds N] [--autodiff]``).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from tf1_awd_sparse.ops.lstm_sequence import lstm_sequence  # noqa: E402
from weight_drop_lstm import WeightDropLSTM  # noqa: E402
from _timing import interleaved_ratios, regression_task  # noqa: E402

BATCH, TIME = 20, 35
UNITS = (200, 650)
THREADS = (("1 thread", 1), ("default threads", 0))


def _lstm_cell_outputs(x, units):
    outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(units), x,
                                   dtype=tf.float32)
    return outputs


def _projected(x, units):
    """Time-major ``x_t @ W_x + b`` [T, B, 4H] in one matmul, and ``W_h``;
    the variables are LSTMCell's (``kernel`` [D+H, 4H], ``bias``)."""
    depth = x.get_shape()[-1].value
    kernel = tf.get_variable("kernel", [depth + units, 4 * units])
    bias = tf.get_variable("bias", [4 * units],
                           initializer=tf.zeros_initializer())
    w_x, w_h = tf.split(kernel, [depth, units], axis=0)
    # Transposing the input (D wide) is cheaper than the projection (4H).
    x_tm = tf.reshape(tf.transpose(x, [1, 0, 2]), [-1, depth])
    projected = tf.nn.bias_add(tf.matmul(x_tm, w_x), bias)
    return tf.reshape(projected, [TIME, BATCH, 4 * units]), w_h


def _sequence_outputs(x, units):
    projected, w_h = _projected(x, units)
    zeros = tf.zeros([BATCH, units])
    outputs, _ = lstm_sequence(projected, w_h, zeros, zeros)
    return tf.transpose(outputs, [1, 0, 2])


def _layer(**kwargs):
    """``WeightDropLSTM`` with weight drop 0.5 (and ``kwargs``)."""
    def make(x, units):
        return WeightDropLSTM(units, weight_drop_kr=0.5, **kwargs)(x)[0]
    return make


def _autodiff_outputs(x, units):
    """The naive prototype: same projection, recurrence in a while loop
    differentiated by TensorFlow."""
    projected, w_h = _projected(x, units)
    projected_ta = tf.TensorArray(tf.float32, TIME).unstack(projected)

    def body(t, c, h, out_ta):
        i, j, f, o = tf.split(projected_ta.read(t) + tf.matmul(h, w_h), 4,
                              axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        h = tf.sigmoid(o) * tf.tanh(c)
        return t + 1, c, h, out_ta.write(t, h)

    zeros = tf.zeros([BATCH, units])
    _, _, _, out_ta = tf.while_loop(
        lambda t, *_: t < TIME, body,
        (0, zeros, zeros, tf.TensorArray(tf.float32, TIME)))
    return tf.transpose(out_ta.stack(), [1, 0, 2])


def _build_step(make_outputs, units, intra_threads):
    """A graph, its session and the training-step op."""
    graph = tf.Graph()
    with graph.as_default():
        x, target = regression_task(BATCH, TIME, units)
        outputs = make_outputs(x, units)
        loss = tf.reduce_mean(tf.square(outputs - target))
        # A held mask's update op (UPDATE_OPS) is part of the step.
        with tf.control_dependencies(
                tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = [tf.global_variables_initializer(),
                tf.local_variables_initializer()]
    config = tf.ConfigProto(intra_op_parallelism_threads=intra_threads,
                            inter_op_parallelism_threads=intra_threads)
    sess = tf.Session(graph=graph, config=config)
    sess.run(init)
    graph.finalize()
    return sess, train


def measure(variants, units, intra_threads, rounds, steps_per_round=2,
            warmup=3):
    """Per-variant medians over rounds of the step-time ratio to the first
    (`_timing.interleaved_ratios`).

    Returns:
      ``{name: (wall_ratio, cpu_ratio, cpu_min_ratio)}`` for every variant
      but the first (the baseline), and the baseline's median wall seconds
      per step.
    """
    built = [(name, _build_step(make, units, intra_threads))
             for name, make in variants]
    ratios, (base_wall, _) = interleaved_ratios(built, rounds,
                                                steps_per_round, warmup)
    return ratios, base_wall


def profile(make_outputs, units, runs=5, top=10):
    """Where a training step's time goes, from a FULL_TRACE RunMetadata.

    Runs the step ``runs`` times with one thread and sums each op's
    recorded duration (``all_end_rel_micros``) per (region, op type), the
    regions being the forward loop, the backward loop and everything
    outside the loops (whole-sequence matmuls, transposes, the update).

    Returns:
      ``(total_ms, {region: ms}, [((region, op_type), ms, count)])``, per
      step, the list the ``top`` entries by time. The sum leaves out the
      executor's own time between ops, and tracing inflates small ops.
    """
    sess, train = _build_step(make_outputs, units, 1)
    graph = sess.graph
    for _ in range(3):
        sess.run(train)
    times, counts = {}, {}
    for _ in range(runs):
        meta = tf.RunMetadata()
        sess.run(train, options=tf.RunOptions(
            trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        for device in meta.step_stats.dev_stats:
            for node in device.node_stats:
                try:
                    op_type = graph.get_operation_by_name(node.node_name).type
                except KeyError:  # _SOURCE, or an op grappler added
                    op_type = node.node_name.split("/")[-1]
                key = (_region(node.node_name), op_type)
                times[key] = times.get(key, 0) + node.all_end_rel_micros
                counts[key] = counts.get(key, 0) + 1
    sess.close()
    scale = 1e-3 / runs
    regions = {}
    for (region, _), micros in times.items():
        regions[region] = regions.get(region, 0) + micros * scale
    ranked = sorted(times, key=lambda key: -times[key])[:top]
    return (sum(times.values()) * scale, regions,
            [(key, times[key] * scale, counts[key] // runs)
             for key in ranked])


def _region(node_name):
    """Forward loop, backward loop or outside, from an op's name (both
    variants' loops: dynamic_rnn's ``rnn/while``, the prototype's
    ``while``, lstm_sequence's ``forward`` / ``backward``)."""
    parts = node_name.split("/")
    in_loop = "while" in parts or "forward" in parts or "backward" in parts
    if not in_loop:
        return "outside loops"
    if "backward" in parts or parts[0].startswith("gradients"):
        return "backward loop"
    return "forward loop"


def main(argv=None):
    """Prints, per size and thread setting, each variant's training-step
    time as a ratio to LSTMCell under dynamic_rnn."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--autodiff", action="store_true",
                        help="also time the autodiff while-loop prototype")
    parser.add_argument("--units", type=int, nargs="*", default=UNITS)
    parser.add_argument("--profile", action="store_true",
                        help="print per-op-type time of each variant "
                        "(FULL_TRACE, one thread) instead of ratios")
    args = parser.parse_args(argv if argv is not None else [])
    variants = [("LSTMCell", _lstm_cell_outputs),
                ("WeightDropLSTM wdrop 0.5", _layer()),
                ("WeightDropLSTM wdrop 0.5 held", _layer(use_vd=True)),
                ("hoisted + lstm_sequence", _sequence_outputs)]
    if args.autodiff:
        variants.append(("hoisted + autodiff loop", _autodiff_outputs))
    if args.profile:
        for units in args.units:
            for name, make in variants:
                total, regions, ranked = profile(make, units)
                print("units %d  %s: %.1f ms of op time per step (%s)" % (
                    units, name, total, ", ".join(
                        "%s %.1f" % kv for kv in sorted(regions.items()))))
                for (region, op_type), ms, count in ranked:
                    print("    %-14s %-22s x%-4d %7.2f ms  %4.1f%%"
                          % (region, op_type, count, ms, 100 * ms / total))
        return
    print("training step (forward + backward + SGD), batch %d, %d steps, "
          "median over %d rounds of the ratio to LSTMCell under dynamic_rnn"
          % (BATCH, TIME, args.rounds))
    for units in args.units:
        for threads_name, intra_threads in THREADS:
            ratios, base_wall = measure(variants, units, intra_threads,
                                        args.rounds)
            for name, (wall_ratio, cpu_ratio, cpu_min) in ratios.items():
                print("  units %3d  %-15s %-30s wall %.3fx  cpu %.3fx  "
                      "cpu-min %.3fx  (LSTMCell %.0f ms/step)"
                      % (units, threads_name, name, wall_ratio, cpu_ratio,
                         cpu_min, base_wall * 1e3))


if __name__ == "__main__":
    main(sys.argv[1:])
