"""The TensorFlow side of `bench_peer`'s layer rows: one layer's training
step on `_layer_task`'s task (imported by bench_peer's TensorFlow workers
only).

Three kinds of layer, each in its own graph and session: ``layer``, the
library's ``WeightDropLSTM`` (the whole-sequence path); ``cell``,
``WeightDropLSTMCell`` under ``tf.nn.dynamic_rnn``; ``lstmcell``,
TensorFlow's ``tf.nn.rnn_cell.LSTMCell`` under ``dynamic_rnn`` (no
DropConnect: the baseline a TensorFlow user has). The two weight-dropped
kinds draw a fresh DropConnect mask every ``session.run``, as in
training. All three own the same two variables (``rnn/lstm_cell/kernel``,
``bias``), loaded with the task's starting weights.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402

import tensorflow.compat.v1 as tf  # noqa: E402

import _layer_task  # noqa: E402
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell  # noqa: E402

#: The layer kinds `build_step` knows.
KINDS = ("layer", "cell", "lstmcell")


def _outputs(kind, x, units, keep):
    """``[BATCH, TIME, units]`` outputs of a layer of ``kind`` on ``x``."""
    if kind == "layer":
        return WeightDropLSTM(units, weight_drop_kr=keep)(x)[0]
    cell = (WeightDropLSTMCell(units, weight_drop_kr=keep) if kind == "cell"
            else tf.nn.rnn_cell.LSTMCell(units))
    return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]


def build_step(kind, depth, units, threads=1, keep=0.5):
    """One layer's training step on `_layer_task.arrays` ``(depth,
    units)``.

    Args:
      kind: one of `KINDS`.
      depth, units: the layer's input depth and size.
      threads: the session's intra-op and inter-op threads.
      keep: DropConnect's keep rate (``weight_drop_kr``) of the weight-
        dropped kinds (1.0: none); ``lstmcell`` has no DropConnect.

    Returns:
      ``(session, train_op, loss)``: fetching ``[train_op, loss]`` runs a
      step and gives its loss before the update.

    Raises:
      ValueError: an unknown kind, or the graph does not hold exactly the
        kernel and bias the task gives.
    """
    if kind not in KINDS:
        raise ValueError("kind must be one of %s, got %r" % (KINDS, kind))
    task = _layer_task.arrays(depth, units)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        x = tf.constant(task["x"])
        outputs = _outputs(kind, x, units, keep)
        loss = tf.reduce_mean(tf.square(outputs - task["target"]))
        train_op = tf.train.GradientDescentOptimizer(
            _layer_task.LR).minimize(loss)
        weights = {v.op.name.split("/")[-1]: v
                   for v in tf.trainable_variables()}
        if sorted(weights) != ["bias", "kernel"]:
            raise ValueError("expected the variables kernel and bias, got "
                             "%s" % [v.op.name for v in
                                     tf.trainable_variables()])
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph, config=tf.ConfigProto(
        intra_op_parallelism_threads=threads,
        inter_op_parallelism_threads=threads))
    sess.run(init)
    for name, variable in weights.items():
        variable.load(task[name], sess)
    graph.finalize()
    return sess, train_op, loss
