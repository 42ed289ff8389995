"""Training-step time of WeightDropLSTMCell against tf.nn.rnn_cell.LSTMCell.

Both run in ``tf.nn.dynamic_rnn`` with plain SGD, batch 20, 35 steps, input
depth = units (200 and 650). The ``use_vd`` variant also runs its mask
update op in every step, as AWD-LSTM training does once per batch. Each
variant has its own graph and single-threaded session; after a warm-up the
variants are timed back to back in each round and the printed figures are
the medians over rounds of the per-round ratio variant / LSTMCell, for wall
time and for process CPU time, plus the ratio of the fastest rounds' CPU
times (``cpu-min``), the figure least disturbed by other jobs.

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

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

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
        tf.set_random_seed(0)
        rng = np.random.RandomState(0)
        x = tf.constant(rng.randn(BATCH, TIME, units).astype(np.float32))
        target = tf.constant(rng.randn(BATCH, TIME, units).astype(
            np.float32))
        cell = make_cell(units)
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(outputs - target))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        fetches = [train] + tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    sess = tf.Session(graph=graph, config=config)
    sess.run(init)
    graph.finalize()
    return sess, fetches


def measure(units, rounds, steps_per_round=2, warmup=3):
    """Per-variant medians over rounds of the step-time ratio to LSTMCell.

    Each round times every variant back to back (rotating the order), and
    the ratio is taken within the round, so slow drifts of a shared machine
    cancel. Both wall-clock and process CPU time are measured: with one
    intra-op and one inter-op thread the CPU time is what the step costs,
    and it is not inflated when other processes take the cores.

    Returns:
      ``{name: (wall_ratio, cpu_ratio, cpu_min_ratio)}`` (the last: fastest
      round of the variant over fastest round of the baseline, the figure
      least disturbed by other jobs) and the baseline's median wall seconds
      per step.
    """
    built = [(name, _build_step(make, units)) for name, make in VARIANTS]
    for _, (sess, fetches) in built:
        for _ in range(warmup):
            sess.run(fetches)
    wall = {name: [] for name, _ in built}
    cpu = {name: [] for name, _ in built}
    for r in range(rounds):
        shift = r % len(built)
        for name, (sess, fetches) in built[shift:] + built[:shift]:
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(steps_per_round):
                sess.run(fetches)
            wall[name].append(time.perf_counter() - start_wall)
            cpu[name].append(time.process_time() - start_cpu)
    for _, (sess, _) in built:
        sess.close()
    base = VARIANTS[0][0]
    ratios = {}
    for name, _ in built[1:]:
        ratios[name] = tuple(
            float(np.median(np.array(t[name]) / np.array(t[base])))
            for t in (wall, cpu)) + (min(cpu[name]) / min(cpu[base]),)
    return ratios, float(np.median(wall[base])) / steps_per_round


def main(argv=None):
    """Prints, per size, each variant's step time as a ratio to LSTMCell."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv if argv is not None else [])
    print("training step, dynamic_rnn + SGD, batch %d, %d steps, "
          "median over %d rounds of the ratio to LSTMCell" % (BATCH, TIME,
                                                      args.rounds))
    for units in UNITS:
        ratios, base = measure(units, args.rounds)
        for name, (wall_ratio, cpu_ratio, cpu_min) in ratios.items():
            print("  units %3d  %-26s wall %.3fx  cpu %.3fx  cpu-min %.3fx  "
                  "(LSTMCell %.0f ms/step)"
                  % (units, name, wall_ratio, cpu_ratio, cpu_min, base * 1e3))


if __name__ == "__main__":
    main(sys.argv[1:])
