"""Quantization-aware training step of WeightDropLSTMCell against the float
``tf.nn.rnn_cell.LSTMCell`` (issue 5 target: at most 1.5x).

Setup: ``tf.nn.dynamic_rnn``, plain SGD, batch 20, 35 steps, input depth =
units, 200 and 650 units; the QAT cell has ``weight_drop_kr=0.5`` and
``is_quant=True`` (fake quantization of the masked kernel and of every tensor
of the step, ranges accumulated every step and folded once per run). The
float DropConnect cell is printed for reference. One single-threaded session
per variant; after warm-up, rounds time all variants back to back in
rotating order; printed: medians over rounds of each variant's time divided
by LSTMCell's in the same round (wall clock and process CPU).

Run: ``.venv/bin/python benchmarks/run.py bench_quant``
(or ``python benchmarks/bench_quant.py [rounds]``).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from weight_drop_lstm import WeightDropLSTMCell  # noqa: E402

BATCH_SIZE, NUM_STEPS, SIZES = 20, 35, (200, 650)
CELLS = [
    ("LSTMCell (float baseline)", tf.nn.rnn_cell.LSTMCell),
    ("WeightDrop kr=0.5 float", lambda units: WeightDropLSTMCell(
        units, weight_drop_kr=0.5)),
    ("WeightDrop kr=0.5 QAT", lambda units: WeightDropLSTMCell(
        units, weight_drop_kr=0.5, is_quant=True)),
]


def training_step(cell_fn, units):
    """Session and train op of one SGD step on a fixed random batch."""
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.RandomState(1)
        inputs = tf.constant(rng.randn(BATCH_SIZE, NUM_STEPS, units),
                             tf.float32)
        target = tf.constant(rng.randn(BATCH_SIZE, NUM_STEPS, units),
                             tf.float32)
        outputs, _ = tf.nn.dynamic_rnn(cell_fn(units), inputs,
                                       dtype=tf.float32)
        train_op = tf.train.GradientDescentOptimizer(0.01).minimize(
            tf.reduce_mean(tf.squared_difference(outputs, target)))
        init = tf.global_variables_initializer()
    session = tf.Session(graph=graph, config=tf.ConfigProto(
        intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
    session.run(init)
    return session, train_op


def ratios(units, rounds, warmup=2, runs=2):
    """Medians over rounds of (wall, cpu) time ratios to the baseline."""
    steps = [training_step(fn, units) for _, fn in CELLS]
    for session, op in steps:
        for _ in range(warmup):
            session.run(op)
    times = np.zeros((rounds, len(CELLS), 2))
    for r in range(rounds):
        order = np.roll(np.arange(len(CELLS)), r)
        for k in order:
            session, op = steps[k]
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(runs):
                session.run(op)
            times[r, k] = (time.perf_counter() - wall,
                           time.process_time() - cpu)
    for session, _ in steps:
        session.close()
    relative = np.median(times / times[:, :1, :], axis=0)
    return relative, np.median(times[:, 0, 0]) / runs


def main(rounds=7):
    """Prints the ratio table for both sizes."""
    print("QAT training step vs float LSTMCell: dynamic_rnn + SGD, batch %d, "
          "%d steps, median of %d rounds" % (BATCH_SIZE, NUM_STEPS, rounds))
    for units in SIZES:
        relative, base = ratios(units, rounds)
        print("  units %d (LSTMCell %.1f ms/step)" % (units, base * 1e3))
        for (name, _), (wall, cpu) in zip(CELLS[1:], relative[1:]):
            print("    %-26s wall %.2fx  cpu %.2fx" % (name, wall, cpu))


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:2]])
