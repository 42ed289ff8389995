"""Training-step time of WeightDropLSTMCell against tf.nn.rnn_cell.LSTMCell.

Both run in ``tf.nn.dynamic_rnn`` with plain SGD, batch 20, 35 steps, input
depth = units (200 and 650). The ``use_vd`` variant also runs its mask
update op in every step, as AWD-LSTM training does once per batch. Each
variant has its own graph and single-threaded session; after a warm-up the
variants are timed back to back in each round and the printed figures are
the medians over rounds of the per-round ratio variant / LSTMCell, for wall
time and for process CPU time, plus the ratio of the fastest rounds' CPU
times (``cpu-min``), the figure least disturbed by other jobs. Last, the
ops the cell adds to a step are timed on their own (CPU ms per step).

Run: ``.venv/bin/python benchmarks/run.py bench_cell``
(or ``python benchmarks/bench_cell.py [--rounds N]``).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402
from _timing import interleaved_ratios, regression_task  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from weight_drop_lstm import WeightDropLSTMCell  # noqa: E402

BATCH, TIME = 20, 35
UNITS = (200, 650)
VARIANTS = (
    ("LSTMCell", lambda n: tf.nn.rnn_cell.LSTMCell(n)),
    ("WeightDrop kr=0.5", lambda n: WeightDropLSTMCell(n, weight_drop_kr=0.5)),
    ("WeightDrop kr=0.5 use_vd", lambda n: WeightDropLSTMCell(
        n, weight_drop_kr=0.5, use_vd=True)),
)


def _build_step(make_cell, units):
    """A graph, its session and the fetches of one training step."""
    graph = tf.Graph()
    with graph.as_default():
        x, target = regression_task(BATCH, TIME, units)
        cell = make_cell(units)
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(outputs - target))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        fetches = [train] + tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        init = tf.global_variables_initializer()
    sess = _session(graph)
    sess.run(init)
    graph.finalize()
    return sess, fetches


def _session(graph):
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    return tf.Session(graph=graph, config=config)


def added_ops_ms(units, repeats=30):
    """Median CPU milliseconds of the ops the cell adds, timed on their own.

    Returns:
      ``(drop_connect, update)``: the DropConnect kernel (mask sampling, pad,
      multiply) with its gradient, as one training step runs them once; and
      the ``use_vd`` update op.
    """
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        cells = [WeightDropLSTMCell(units, weight_drop_kr=0.5),
                 WeightDropLSTMCell(units, weight_drop_kr=0.5, use_vd=True)]
        for cell in cells:
            cell(tf.zeros([BATCH, units]), cell.zero_state(BATCH, tf.float32))
        kernel = cells[0].effective_kernel
        upstream = tf.get_variable("upstream", kernel.get_shape(),
                                   initializer=tf.ones_initializer(),
                                   trainable=False)
        theta = cells[0].trainable_weights[0]  # `kernel`, created first
        grad = tf.gradients(kernel, theta, grad_ys=upstream.read_value())[0]
        fetches = {"drop_connect": tf.group(kernel, grad),
                   "update": cells[1].get_vd_update_op()}
        init = tf.global_variables_initializer()
    sess = _session(graph)
    sess.run(init)
    times = {name: [] for name in fetches}
    for _ in range(repeats):
        for name, fetch in fetches.items():
            start = time.process_time()
            sess.run(fetch)
            times[name].append(time.process_time() - start)
    sess.close()
    return tuple(1e3 * float(np.median(times[name][3:]))
                 for name in ("drop_connect", "update"))


def measure(units, rounds, steps_per_round=2, warmup=3):
    """Per-variant medians over rounds of the step-time ratio to LSTMCell
    (`_timing.interleaved_ratios`).

    Returns:
      ``{name: (wall_ratio, cpu_ratio, cpu_min_ratio)}``, and the
      baseline's median wall and CPU seconds per step.
    """
    built = [(name, _build_step(make, units)) for name, make in VARIANTS]
    return interleaved_ratios(built, rounds, steps_per_round, warmup)


def main(argv=None):
    """Prints, per size, each variant's step time as a ratio to LSTMCell."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv if argv is not None else [])
    print("training step, dynamic_rnn + SGD, batch %d, %d steps, "
          "median over %d rounds of the ratio to LSTMCell" % (BATCH, TIME,
                                                      args.rounds))
    for units in UNITS:
        ratios, (base_wall, base_cpu) = measure(units, args.rounds)
        for name, (wall_ratio, cpu_ratio, cpu_min) in ratios.items():
            print("  units %3d  %-26s wall %.3fx  cpu %.3fx  cpu-min %.3fx  "
                  "(LSTMCell %.0f ms/step)"
                  % (units, name, wall_ratio, cpu_ratio, cpu_min,
                     base_wall * 1e3))
        drop_connect, update = added_ops_ms(units)
        print("  units %3d  ops the cell adds, timed alone: DropConnect "
              "kernel + gradient %.2f ms (%.1f%% of LSTMCell's step CPU "
              "%.0f ms), use_vd update op %.2f ms (%.1f%%)"
              % (units, drop_connect, 100 * drop_connect / (base_cpu * 1e3),
                 base_cpu * 1e3, update, 100 * update / (base_cpu * 1e3)))


if __name__ == "__main__":
    main(sys.argv[1:])
