"""Training-step throughput of the whole AWD-LSTM language model, in tokens
per second, one intra-op and one inter-op thread, against the same model
without regularization (``model='plain'``: plain ``LSTMCell`` layers,
SGD) measured in the same rounds.

The model is the ptb-small size: a 10,000-word vocabulary tied to a 200-d
embedding, 2 x 200 LSTM layers, batch 20 x 35 steps; the AWD variant has
every regularizer on (weight drop 0.5, embedding, locked and hidden
dropout, AR/TAR, weight decay), NT-ASGD and clipping. The feeds are
constant ids (the step's cost does not depend on their values). Tokens per
second are batch x steps / the median step's wall time; the ratio of the
AWD step to the plain one is the median of per-round ratios (see
``_timing.interleaved_ratios``). The decoder's matmul alone
(``[700, 200] x [10000, 200]^T`` and its two gradient matmuls) is timed
too: it dominates the step, and its speed is what separates TensorFlow
builds (1.13's wheel has no AVX2 / FMA; 2.x's has them and oneDNN).

The tokens/s of two TensorFlow versions come from two runs (``make bench``
on 1.13.1, ``make bench-tf2`` on 2.15.1), compared in docs/versions.md.

Run: ``.venv/bin/python benchmarks/run.py bench_lm``
(or ``python benchmarks/bench_lm.py [--rounds N]``).
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

from tf1_awd_sparse.awd_lm.graph import model  # noqa: E402
from tf1_awd_sparse.awd_lm.graph.train_op import build_train_op  # noqa: E402
from tf1_awd_sparse.awd_lm.config import presets  # noqa: E402
from _timing import interleaved_ratios  # noqa: E402

VOCAB, EMB, UNITS, LAYERS, BATCH, BPTT = 10000, 200, 200, 2, 20, 35


def params(kind):
    """The benchmark's parameter dict for model ``kind`` ('awd'/'plain')."""
    p = presets.params_for("demo", kind, {
        "emb_size": EMB, "hidden_size": UNITS, "num_layers": LAYERS,
        "batch_size": BATCH, "bptt": BPTT, "wdrop": 0.5})
    p["vocab_size"] = VOCAB
    return p


def _session(graph, threads=1):
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    return tf.Session(graph=graph, config=config)


def build_step(kind):
    """(session, train op) of one LM training step of model ``kind``
    ('awd' / 'plain'), one intra-op and one inter-op thread."""
    return build_step_and_loss(kind)[:2]


def build_step_and_loss(kind, threads=1):
    """(session, train op, cross-entropy tensor) of `build_step`'s step,
    its session on ``threads`` intra-op and inter-op threads (the
    cross-entropy, fetched with the train op, is the step's loss before
    its update; benchmarks/bench_peer.py prints it)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        rng = np.random.RandomState(0)
        ids = rng.randint(0, VOCAB, [BATCH, BPTT + 1]).astype(np.int32)
        features = {"inputs": tf.constant(ids[:, :-1]),
                    "targets": tf.constant(ids[:, 1:])}
        p = params(kind)
        out = model.build_lm(features, True, p)
        train_op, _ = build_train_op(out.loss, 1.0, p)
        with tf.control_dependencies(
                tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train_op = tf.group(train_op)
        init = tf.group(tf.global_variables_initializer(),
                        tf.local_variables_initializer())
    sess = _session(graph, threads)
    sess.run(init)
    return sess, train_op, out.xent


def build_decoder():
    """(session, op) of the tied decoder's forward and backward matmuls."""
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.RandomState(0)
        h = tf.Variable(rng.randn(BATCH * BPTT, EMB).astype(np.float32))
        w = tf.Variable(rng.randn(VOCAB, EMB).astype(np.float32) * 0.1)
        logits = tf.matmul(h, w, transpose_b=True)
        grads = tf.gradients(tf.reduce_sum(logits * logits), [h, w])
        # Fetch (tiny) sums of the gradients: a group of ops whose outputs
        # nothing reads may be pruned away by grappler.
        op = [tf.reduce_sum(g) for g in grads]
        init = tf.global_variables_initializer()
    sess = _session(graph)
    sess.run(init)
    return sess, op


def _median_seconds(sess, op, steps, warmup=3):
    for _ in range(warmup):
        sess.run(op)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        sess.run(op)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=()):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(list(argv))
    print("LM training step: vocab %d tied to %d-d embedding, %d x %d, "
          "batch %d x %d, 1 thread" % (VOCAB, EMB, LAYERS, UNITS, BATCH,
                                       BPTT))
    built = [("plain", build_step("plain")), ("awd", build_step("awd"))]
    ratios, (base_wall, _) = interleaved_ratios(built, args.rounds)
    wall, cpu, _ = ratios["awd"]
    tokens = BATCH * BPTT
    print("%-28s %8.0f tokens/s  (%.1f ms/step)"
          % ("plain (LSTMCell, SGD)", tokens / base_wall, 1e3 * base_wall))
    print("%-28s %8.0f tokens/s  (%.2f x plain's step time, cpu %.2f x)"
          % ("awd (all regularizers)", tokens / (base_wall * wall), wall,
             cpu))
    sess, op = build_decoder()
    seconds = _median_seconds(sess, op, 3 * args.rounds)
    sess.close()
    print("%-28s %8.1f ms  (forward + 2 gradient matmuls)"
          % ("decoder matmuls alone", 1e3 * seconds))


if __name__ == "__main__":
    main(sys.argv[1:])
