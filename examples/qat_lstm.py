"""Quantization-aware training of a WeightDropLSTMCell stack and export to
float and fully 8-bit TFLite models.

Task (generated, seeded): every step of a sequence of Gaussian vectors is
labelled with the arg-max of a leaky running sum of its first ``classes``
features, so the label depends on the past (the model needs memory).
Phases:

1. float training of a 2-layer ``WeightDropLSTMCell`` stack with DropConnect
   (``weight_drop_kr=0.5``), saved to a checkpoint;
2. a new graph with ``is_quant=True`` cells (same weight variables), the
   float checkpoint restored into it and the new range variables
   initialized; fine-tuning with ``quant_delay`` (ranges are learned first,
   fake quantization starts at that global step);
3. ``quantization.export_tflite`` writes a float and a uint8 model of the cell
   stack (fixed batch, the full sequence unrolled); both run with
   ``tf.lite.Interpreter``.

The table compares, on the test set, the float TF graph (the fine-tuned
weights without fake quantization), the fake-quant TF eval graph and the two
TFLite models: size, agreement with the matching TF graph, accuracy. The
dense classifier on top of the stack is applied to every row's stack
outputs in numpy (float), so the rows differ only in the cell stack. In
the graph the classifier runs on the outputs reshaped to 2-D (`classify`),
the form ``tf.contrib.quantize``'s rewrites recognise.

Run: ``.venv/bin/python examples/qat_lstm.py`` (``--help`` for sizes).
"""
import functools
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import _quiet  # noqa: F401,E402  (must precede the TensorFlow import)

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from tf1_awd_sparse.base import _cli  # noqa: E402
from tf1_awd_sparse.base.scalar_checks import (  # noqa: E402
    check_nonnegative_int, check_positive_int, check_real)
from tf1_awd_sparse.awd_lm.corpus.runtime import session_config  # noqa: E402
from tf1_awd_sparse.quantization import TFLiteRunner, export_tflite  # noqa: E402
from tf1_awd_sparse.ops import mask_placement  # noqa: E402
from weight_drop_lstm import WeightDropLSTMCell  # noqa: E402


def make_data(num, steps, depth, classes, rng, leak=0.8):
    """Sequences ``[num, steps, depth]`` and per-step labels ``[num, steps]``:
    arg-max of ``s_t = leak * s_{t-1} + x_t[:classes]``."""
    x = rng.randn(num, steps, depth).astype(np.float32)
    total = np.zeros((num, classes), np.float32)
    labels = np.zeros((num, steps), np.int64)
    for t in range(steps):
        total = leak * total + x[:, t, :classes]
        labels[:, t] = total.argmax(axis=1)
    return x, labels


def build(args, is_quant, quant_delay=0):
    """The model graph: placeholders, cells, stack outputs, logits, train op.

    Returns:
      dict of graph handles.
    """
    step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [None, args.steps, args.depth], "x")
    y = tf.placeholder(tf.int64, [None, args.steps], "y")
    is_train = tf.placeholder_with_default(True, [], "is_train")
    cells = [WeightDropLSTMCell(args.units, weight_drop_kr=0.5,
                                is_train=is_train, is_quant=is_quant,
                                quant_delay=quant_delay)
             for _ in range(args.layers)]
    stack, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), x,
                                 dtype=tf.float32, scope="rnn")
    head, logits = classify(stack, args.units, args.classes)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    train = tf.train.AdamOptimizer(args.lr).minimize(loss, global_step=step)
    return dict(x=x, y=y, is_train=is_train, cells=cells, stack=stack,
                head=head, loss=loss, train=train, step=step)


def classify(outputs, units, classes):
    """The dense head on the stack's outputs ``[batch, time, units]``.

    Applied to the outputs reshaped to 2-D ``[batch * time, units]``: on a
    3-D input a dense layer computes a Tensordot (MatMul, then Reshape,
    then BiasAdd), which ``tf.contrib.quantize.create_training_graph`` /
    ``create_eval_graph`` do not recognise as a layer, so they would
    silently leave the head in float (docs/quantization_notes.md).

    Returns:
      (the ``tf.layers.Dense`` layer, logits ``[batch, time, classes]``).
    """
    head = tf.layers.Dense(classes, name="head")
    flat = tf.reshape(outputs, [-1, units])
    logits = tf.reshape(head(flat), tf.concat(
        [tf.shape(outputs)[:2], [classes]], 0))
    return head, logits


def train(sess, model, data, steps, args, rng, label):
    """Minibatch training; prints the loss now and then."""
    x_train, y_train = data
    start = time.time()
    for i in range(steps):
        idx = rng.randint(0, len(x_train), args.batch)
        _, loss = sess.run([model["train"], model["loss"]],
                           {model["x"]: x_train[idx],
                            model["y"]: y_train[idx]})
        if (i + 1) % max(1, steps // 4) == 0:
            print("  %s step %4d  loss %.3f  (%.0f s)"
                  % (label, i + 1, loss, time.time() - start))


def accuracy(stack_outputs, head_values, labels):
    """Per-step accuracy of the float dense head on stack outputs."""
    kernel, bias = head_values
    logits = stack_outputs.dot(kernel) + bias
    return float(np.mean(logits.argmax(axis=-1) == labels))


def batched(fn, x, batch):
    """Applies ``fn`` to fixed-size batches of ``x`` and concatenates."""
    return np.concatenate([fn(x[i:i + batch])
                           for i in range(0, len(x), batch)], 0)


_POSITIVE = functools.partial(check_real, low=0.0, low_open=True)

# Command-line options: (flag, default, help, check).
OPTIONS = [
    ("units", 256, "cell size", check_positive_int),
    ("layers", 2, "cells in the stack", check_positive_int),
    ("steps", 16, "sequence length (unrolled in the TFLite models)",
     check_positive_int),
    ("depth", 8, "input features per step", check_positive_int),
    ("classes", 4, "label classes (at most --depth: the label is the "
     "arg-max of the first --classes features)", check_positive_int),
    ("batch", 32, "batch size (fixed in the TFLite models)",
     check_positive_int),
    ("float-steps", 400, "float training steps", check_positive_int),
    ("qat-steps", 200, "quantization-aware fine-tuning steps",
     check_positive_int),
    ("quant-delay-steps", 50, "QAT steps that only learn ranges",
     check_nonnegative_int),
    ("lr", 0.005, "Adam learning rate", _POSITIVE),
    ("seed", 0, "seed of data and initialization", check_nonnegative_int),
    ("threads", 1, "intra- and inter-op threads (0: TensorFlow's choice, "
     "all cores), as examples/awd_lm.py's --threads", check_nonnegative_int),
    ("out", None, "directory for checkpoint and .tflite files (default: a "
                  "new temporary directory)", None),
]


def parse_args(argv):
    """Parses :data:`OPTIONS` from ``argv`` and checks them; a bad value
    ends the program with status 2 and one line naming the flag(s)."""
    parser = _cli.ArgumentParser(description=__doc__.split("\n")[0])
    checks = {}
    for flag, default, text, check in OPTIONS:
        parser.add_argument("--" + flag, default=default, help=text,
                            type=type(default) if default is not None
                            else str)
        if check is not None:
            checks[flag.replace("-", "_")] = check
    args = parser.check_flags(parser.parse_args(argv), checks)
    if args.classes > args.depth:
        parser.error("--classes %d must be at most --depth %d (the label is "
                     "the arg-max of the first --classes input features)"
                     % (args.classes, args.depth))
    return args


def main(argv=None):
    """Float training, QAT fine-tuning, export; prints the table."""
    args = parse_args(argv)
    config = session_config(args.threads)
    rng = np.random.RandomState(args.seed)
    train_data = make_data(4096, args.steps, args.depth, args.classes, rng)
    x_test, y_test = make_data(512, args.steps, args.depth, args.classes, rng)
    out = args.out or tempfile.mkdtemp(prefix="qat_lstm_")
    ckpt = os.path.join(out, "float.ckpt")
    print("%d-layer WeightDropLSTMCell stack, %d units, %d steps, %d classes"
          % (args.layers, args.units, args.steps, args.classes))

    # 1. Float training.
    with tf.Graph().as_default():
        tf.set_random_seed(args.seed)
        model = build(args, is_quant=False)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            train(sess, model, train_data, args.float_steps, args, rng,
                  "float")
            float_stack = batched(lambda b: sess.run(
                model["stack"], {model["x"]: b, model["is_train"]: False}),
                x_test, args.batch)
            head = sess.run(model["head"].weights)
            print("  float model before QAT: test accuracy %.4f"
                  % accuracy(float_stack, head, y_test))
            tf.train.Saver().save(sess, ckpt)

    # 2. QAT fine-tuning from the float checkpoint.
    with tf.Graph().as_default():
        tf.set_random_seed(args.seed + 1)
        model = build(args, is_quant=True,
                      quant_delay=args.float_steps + args.quant_delay_steps)
        # Float twin on the same variables (no fake quantization), eval only.
        with tf.variable_scope(tf.get_variable_scope(), reuse=True):
            twins = [WeightDropLSTMCell(args.units, is_train=False)
                     for _ in range(args.layers)]
            float_twin, _ = tf.nn.dynamic_rnn(
                tf.nn.rnn_cell.MultiRNNCell(twins), model["x"],
                dtype=tf.float32, scope="rnn")
        range_vars = mask_placement.quant_variables()
        restored = [v for v in tf.global_variables()
                    if v not in range_vars and "Adam" not in v.name
                    and "beta" not in v.name]
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver(restored).restore(sess, ckpt)
            print("  restored %d float variables; %d new range variables"
                  % (len(restored), len(range_vars)))
            train(sess, model, train_data, args.qat_steps, args, rng, "QAT")
            tf_quant = batched(lambda b: sess.run(
                model["stack"], {model["x"]: b, model["is_train"]: False}),
                x_test, args.batch)
            tf_float = batched(lambda b: sess.run(
                float_twin, {model["x"]: b}), x_test, args.batch)
            head = sess.run(model["head"].weights)
            quant_vars = set(range_vars)
            params = sum(int(np.prod(v.shape)) for c in model["cells"]
                         for v in c.weights if v not in quant_vars)
            # 3. Export (from the live session; checkpoint= works as well).
            paths = (os.path.join(out, "stack_float.tflite"),
                     os.path.join(out, "stack_uint8.tflite"))
            start = time.time()
            sizes = export_tflite(model["cells"], args.batch, args.steps,
                                  *paths, session=sess)
            print("  exported in %.0f s to %s" % (time.time() - start, out))

    float_runner, quant_runner = TFLiteRunner(paths[0]), TFLiteRunner(paths[1])
    lite_float = batched(lambda b: float_runner.run(b)["outputs"], x_test,
                         args.batch)
    lite_quant = batched(lambda b: quant_runner.run(b)["outputs"], x_test,
                         args.batch)
    step = quant_runner.output_quantization()[0]
    quant_diff = np.abs(lite_quant - tf_quant) / step
    float_diff = np.abs(lite_float - tf_float)

    rows = [
        ("float TF", "%d (params)" % (4 * params), "reference",
         accuracy(tf_float, head, y_test)),
        ("fake-quant TF", "%d (params)" % (4 * params), "reference",
         accuracy(tf_quant, head, y_test)),
        ("float TFLite", "%d" % sizes["float_bytes"],
         "max abs diff %.1e vs float TF" % float_diff.max(),
         accuracy(lite_float, head, y_test)),
        ("8-bit TFLite", "%d" % sizes["quant_bytes"],
         "%.2f steps mean, %.0f max vs fake-quant TF"
         % (quant_diff.mean(), quant_diff.max()),
         accuracy(lite_quant, head, y_test)),
    ]
    print("\n| model | size (bytes) | output agreement | test accuracy |")
    print("| --- | --- | --- | --- |")
    for name, size, agree, acc in rows:
        print("| %s | %s | %s | %.4f |" % (name, size, agree, acc))
    print("\n8-bit / float file size: %.1f%%; 8-bit accuracy vs fake-quant "
          "TF: %+.2f%% (relative); output step %.4g"
          % (100.0 * sizes["quant_bytes"] / sizes["float_bytes"],
             100.0 * (rows[3][3] - rows[1][3]) / rows[1][3], step))


if __name__ == "__main__":
    main(sys.argv[1:])
