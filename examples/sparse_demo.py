"""End-to-end run: `python examples/sparse_demo.py`.

Fits y = x @ w* + noise (noise std 0.1), where only 10 of 200 inputs
matter, with a one-unit `FullyConnected` layer of each technique (full-batch
Adam), and prints the held-out mean squared error of the evaluation-mode
layer and the sparsity report. For VD it also prints the median log(alpha)
of the informative and of the uninformative weights, and the same figures
with the pruning threshold lowered from 3 to 0.

Bad flags end the program with status 2 and one line naming the flag.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import _quiet  # noqa: F401,E402  (must precede the TensorFlow import)

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from sparse_layers import common, losses, report  # noqa: E402
from tf1_awd_sparse.base import _cli  # noqa: E402
from tf1_awd_sparse.base.scalar_checks import (  # noqa: E402
    check_nonnegative_int, check_positive_int)
from tf1_awd_sparse.awd_lm.corpus.runtime import session_config  # noqa: E402
from sparse_layers.l0_regularization import layers as l0_layers  # noqa: E402
from sparse_layers.variational_dropout import layers as vd_layers  # noqa: E402
from sparse_layers.variational_dropout import nn as vd_nn  # noqa: E402

FEATURES, INFORMATIVE, TRAIN, TEST = 200, 10, 2000, 1000


def make_data(seed=0):
    """Returns (x_train, y_train, x_test, y_test)."""
    rng = np.random.RandomState(seed)
    w = np.zeros([FEATURES, 1], np.float32)
    w[:INFORMATIVE, 0] = rng.uniform(1., 2., INFORMATIVE) * rng.choice(
        [-1, 1], INFORMATIVE)
    x = rng.randn(TRAIN + TEST, FEATURES).astype(np.float32)
    y = x @ w + 0.1 * rng.randn(TRAIN + TEST, 1).astype(np.float32)
    return x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]


def run(technique, steps=6000, seed=0, threads=1):
    """Trains one model; returns a dict of figures."""
    x_train, y_train, x_test, y_test = make_data(seed)
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        x = tf.placeholder(tf.float32, [None, FEATURES])
        y = tf.placeholder(tf.float32, [None, 1])
        training = tf.placeholder_with_default(False, [])
        step = tf.train.get_or_create_global_step()
        module = vd_layers if technique == "vd" else l0_layers
        layer = module.FullyConnected(1, name="fc")
        pred = layer(x, training=training)
        # The losses read the collections: build them after the layers.
        if technique == "vd":
            # ELBO per example: data term + KL / N.
            penalty = losses.kl_loss(weight=1. / TRAIN)
        else:
            # Cost of one expected non-zero weight, in per-example units.
            penalty = losses.l0_loss(weight=0.02)
        # Gaussian likelihood with the data's noise std 0.1: 50 * sq. error.
        loss = 50. * tf.reduce_mean(tf.square(pred - y)) + penalty
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss, step)
        figures = {"mse": tf.reduce_mean(tf.square(pred - y)),
                   "report": report.sparsity_report()}
        if technique == "vd":
            log_alpha = common.compute_log_alpha(layer.aux, layer.kernel,
                                                 value_limit=None)[:, 0]
            figures["log_alpha_informative"] = log_alpha[:INFORMATIVE]
            figures["log_alpha_other"] = log_alpha[INFORMATIVE:]
            pred0 = vd_nn.matmul_eval(x, (layer.kernel, layer.aux),
                                      threshold=0.) + layer.bias
            figures["mse_threshold_0"] = tf.reduce_mean(tf.square(pred0 - y))
            figures["report_threshold_0"] = report.sparsity_report(
                threshold=0., summaries=False)
        with tf.Session(config=session_config(threads)) as sess:
            sess.run(tf.global_variables_initializer())
            start = time.time()
            for _ in range(steps):
                sess.run(train_op, {x: x_train, y: y_train, training: True})
            seconds = time.time() - start
            out = sess.run(figures, {x: x_test, y: y_test})
    out["seconds"] = seconds
    return out


def parse_args(argv=None):
    """The flags (``--help``), checked: a bad value ends the program with
    status 2 and one line naming the flag (`tf1_awd_sparse.base._cli`)."""
    parser = _cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6000,
                        help="full-batch Adam steps per technique (default "
                        "6000)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data and the graph (default 0)")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra- and inter-op threads (0: TensorFlow's "
                        "choice, all cores; default 1)")
    return parser.check_flags(parser.parse_args(argv), {
        "steps": check_positive_int, "seed": check_nonnegative_int,
        "threads": check_nonnegative_int})


def main(argv=None):
    """Trains both techniques and prints their figures.

    Returns:
      0 (bad flags exit with status 2, see `parse_args`).
    """
    args = parse_args(argv)
    for technique in ("vd", "l0"):
        out = run(technique, args.steps, args.seed, args.threads)
        print("%s: held-out MSE %.4f (noise floor 0.0100), %.1f s training"
              % (technique.upper(), out["mse"], out["seconds"]))
        print(report.format_report(out["report"]))
        if technique == "vd":
            print("median log(alpha): informative %.1f, uninformative %.1f"
                  % (np.median(out["log_alpha_informative"]),
                     np.median(out["log_alpha_other"])))
            print("with threshold 0: held-out MSE %.4f, %.1f%% zero" % (
                out["mse_threshold_0"],
                100. * out["report_threshold_0"]["global"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
