"""Benchmarks of the sparse_layers stateless ops, printed as ratios.

* VD `matmul_train` (local reparameterization: two matmuls) vs a dense
  `tf.matmul` of the same shape; target <= 2.3x. L0 `matmul_train` shown too.
* VD / L0 `embedding_lookup_train` with a 100k-word vocabulary vs a 1k one,
  same ids; target <= 1.2x (the ops gather before sampling).

Each timing is the median of several repeats after a warm-up, all in one
run, single-threaded sessions.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _quiet  # noqa: F401,E402
import tensorflow.compat.v1 as tf  # noqa: E402

from sparse_layers.l0_regularization import nn as l0_nn  # noqa: E402
from sparse_layers.variational_dropout import nn as vd_nn  # noqa: E402

REPEATS = 11
ITERS = 20


def _median_ratios(sess, ops, baseline):
    """Median over repeats of time(op) / time(baseline) for each op.

    The ops are timed in turn within each repeat, so load from other
    processes on the shared cores hits numerator and baseline alike.
    """
    for op in ops.values():  # warm-up
        for _ in range(3):
            sess.run(op)
    ratios = {name: [] for name in ops}
    for _ in range(REPEATS):
        times = {}
        for name, op in ops.items():
            start = time.perf_counter()
            for _ in range(ITERS):
                sess.run(op)
            times[name] = time.perf_counter() - start
        for name in ops:
            ratios[name].append(times[name] / times[baseline])
    return {name: float(np.median(r)) for name, r in ratios.items()}


def _session(graph):
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    return tf.Session(graph=graph, config=config)


def bench_matmul(batch=256, n_in=512, n_out=512):
    """Returns (vd ratio, l0 ratio) of matmul_train over dense matmul."""
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.RandomState(0)
        x = tf.Variable(rng.randn(batch, n_in).astype(np.float32))
        theta = tf.Variable(rng.randn(n_in, n_out).astype(np.float32))
        aux = tf.Variable(rng.randn(n_in, n_out).astype(np.float32) - 5.)
        ops = {"dense": tf.matmul(x, theta).op,
               "vd": vd_nn.matmul_train(x, (theta, aux)).op,
               "l0": l0_nn.matmul_train(x, (theta, aux)).op}
        with _session(graph) as sess:
            sess.run(tf.global_variables_initializer())
            ratios = _median_ratios(sess, ops, "dense")
    return ratios["vd"], ratios["l0"]


def bench_embedding(small=1000, large=100000, dim=64, ids_shape=(64, 35)):
    """Returns {technique: 100k-vocab time / 1k-vocab time}."""
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.RandomState(1)
        ids = tf.constant(rng.randint(0, small, ids_shape), tf.int64)
        ops = {}
        for vocab in (small, large):
            theta = tf.Variable(tf.random_normal([vocab, dim]))
            aux = tf.Variable(tf.random_normal([vocab, dim]) - 5.)
            ops[("vd", vocab)] = vd_nn.embedding_lookup_train(
                (theta, aux), ids).op
            ops[("l0", vocab)] = l0_nn.embedding_lookup_train(
                (theta, aux), ids).op
        with _session(graph) as sess:
            sess.run(tf.global_variables_initializer())
            ratios = {t: _median_ratios(
                sess, {"large": ops[(t, large)], "small": ops[(t, small)]},
                "small")["large"] for t in ("vd", "l0")}
    return ratios


def main():
    """Runs both benchmarks and prints the ratios."""
    for n_in, n_out in [(512, 512), (1024, 1024)]:
        vd_ratio, l0_ratio = bench_matmul(256, n_in, n_out)
        print("matmul_train [256x%d]@[%dx%d] vs dense tf.matmul: VD %.2fx "
              "(target <= 2.3x), L0 %.2fx" % (n_in, n_in, n_out, vd_ratio,
                                              l0_ratio))
    emb = bench_embedding()
    print("embedding_lookup_train 100k vs 1k vocabulary, 64x35 ids, dim 64: "
          "VD %.2fx, L0 %.2fx (target <= 1.2x)" % (emb["vd"], emb["l0"]))


if __name__ == "__main__":
    main()
