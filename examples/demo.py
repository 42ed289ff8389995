"""`make demo` entry point: a short end-to-end run of an LSTM on generated data.

Placeholder for the AWD-LSTM language-model job; prints what it did.
"""
import time

import _quiet  # noqa: F401  (must precede the TensorFlow import)
import numpy as np
import tensorflow as tf


def main():
    rng = np.random.RandomState(0)
    batch, steps, depth, units = 16, 20, 8, 32
    x_data = rng.randn(256, steps, depth).astype(np.float32)
    y_data = np.cumsum(x_data[:, :, :1], axis=1) / np.sqrt(steps)
    x = tf.placeholder(tf.float32, [None, steps, depth])
    y = tf.placeholder(tf.float32, [None, steps, 1])
    cell = tf.nn.rnn_cell.LSTMCell(units)
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    pred = tf.layers.dense(out, 1)
    loss = tf.reduce_mean((pred - y) ** 2)
    train = tf.train.AdamOptimizer(1e-2).minimize(loss)
    start = time.time()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: x_data, y: y_data})
        for step in range(200):
            idx = rng.randint(0, len(x_data), batch)
            sess.run(train, {x: x_data[idx], y: y_data[idx]})
        last = sess.run(loss, {x: x_data, y: y_data})
    print("LSTM(%d) running-sum regression: mse %.4f -> %.4f in 200 steps "
          "(%.1f s)" % (units, first, last, time.time() - start))


if __name__ == "__main__":
    main()
