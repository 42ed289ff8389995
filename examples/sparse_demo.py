"""End-to-end run: `python examples/sparse_demo.py`.

Fits y = x @ w* + noise (noise std 0.1), where only 10 of 200 inputs
matter, with a one-unit `FullyConnected` layer of each technique (full-batch
Adam), and prints the held-out mean squared error of the evaluation-mode
layer and the sparsity report. For VD it also prints the median log(alpha)
of the informative and of the uninformative weights, and the same figures
with the pruning threshold lowered from 3 to 0.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _quiet  # noqa: F401,E402  (must precede the TensorFlow import)

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from sparse_layers import common, losses, report  # noqa: E402
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


def run(technique, steps=6000, seed=0):
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
        config = tf.ConfigProto(intra_op_parallelism_threads=1,
                                inter_op_parallelism_threads=1)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            start = time.time()
            for _ in range(steps):
                sess.run(train_op, {x: x_train, y: y_train, training: True})
            seconds = time.time() - start
            out = sess.run(figures, {x: x_test, y: y_test})
    out["seconds"] = seconds
    return out


def main():
    """Trains both techniques and prints their figures."""
    for technique in ("vd", "l0"):
        out = run(technique)
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


if __name__ == "__main__":
    main()
