"""A user's TF1 model rewritten by `tf1_awd_sparse.quantization`, trained
once and written as a fully uint8 TFLite file of its one-step eval graph
(`export.export_quantized_graph`): what tests/export/test_quantized_graph.py
(the call) and test_tflite_audit.py (the file's audit) read, built once a
session by the ``exported`` fixture of tests/export/conftest.py."""
import os

import numpy as np
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from tf1_awd_sparse.export import graphdef, quantized_graph
from tf1_awd_sparse.export.runner import TFLiteRunner

UNITS, DEPTH, CLASSES, BATCH, TIME, STREAM = 8, 3, 4, 4, 6, 20
QUANT_DELAY, STEPS = 10, 60
STATES = ("state_0_c", "state_0_h", "state_1_h")



def train(path):
    """Trains the model (an LSTMCell and a GRUCell under dynamic_rnn, a
    dense head behind tf.identity, rewritten with quant_delay) and saves
    it at ``path``."""
    rng = np.random.RandomState(0)
    data = rng.uniform(-2, 2, [BATCH, TIME, DEPTH]).astype(np.float32)
    # Targets the states must carry (the sign of the running sum of an
    # input), so that the trained states use their range.
    target = np.tanh(3 * np.cumsum(data[..., :1], axis=1)) * np.ones(
        [1, 1, CLASSES], np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [BATCH, TIME, DEPTH])
        seq, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(UNITS), x,
                                   dtype=tf.float32, scope="layer0")
        seq, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(UNITS), seq,
                                   dtype=tf.float32, scope="layer1")
        logits = tf.identity(tf.layers.dense(
            tf.reshape(seq, [-1, UNITS]), CLASSES, name="head"), "logits")
        loss = tf.reduce_mean(tf.square(
            logits - tf.reshape(target, [-1, CLASSES])))
        quantize.create_training_graph(quant_delay=QUANT_DELAY)
        train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(STEPS):
                sess.run(train, {x: data})
            tf.train.Saver().save(sess, path)


def step_graph():
    """The one-step eval graph (the training graph's variable scopes):
    ({name: placeholder}, {name: output}, {state input: state output})."""
    x = tf.placeholder(tf.float32, [1, DEPTH], "inputs")
    c0, h0, h1 = [tf.placeholder(tf.float32, [1, UNITS], name)
                  for name in STATES]
    with tf.variable_scope("layer0"):
        out0, state0 = tf.nn.rnn_cell.LSTMCell(UNITS)(
            x, tf.nn.rnn_cell.LSTMStateTuple(c0, h0))
    with tf.variable_scope("layer1"):
        out1, state1 = tf.nn.rnn_cell.GRUCell(UNITS)(out0, h1)
    logits = tf.identity(tf.layers.dense(out1, CLASSES, name="head"),
                         "logits")
    # The states fed back, named as TFLiteRunner names them.
    states = {c0: tf.identity(state0.c, "final_0_c"),
              h0: tf.identity(state0.h, "final_0_h"),
              h1: tf.identity(state1, "final_1_h")}
    quantize.create_eval_graph()
    return {"inputs": x, "state_0_c": c0, "state_0_h": h0,
            "state_1_h": h1}, logits, states


def grid(session, fake_quant_name):
    """The uint8 (scale, zero point) of a FakeQuant of the graph, from
    its range variables' values (the op's own min / max inputs)."""
    op = session.graph.get_operation_by_name(fake_quant_name)
    low, high = session.run(list(op.inputs[1:3]))
    return graphdef.nudged_quantization(low, high)


def exported(folder):
    """Trains the model in ``folder``, writes its one-step graph with
    `export_quantized_graph` and yields what the tests read: the call's
    result (``written``), a ``runner`` of the file, the ``checkpoint``, the
    data input's ``grids`` from the graph, the ``states`` and ``graph``,
    a function running the fake-quantized eval graph on a feed."""
    checkpoint = os.path.join(folder, "model")
    train(checkpoint)
    path = os.path.join(folder, "model.tflite")
    with tf.Graph().as_default():
        placeholders, logits, states = step_graph()
        written = quantized_graph.export_quantized_graph(
            logits, path, checkpoint=checkpoint, states=states)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, checkpoint)
            outputs = dict({"logits": logits}, **{
                "final" + n[len("state"):]: states[placeholders[n]]
                for n in STATES})
            fetch = {}
            for name, tensor in outputs.items():
                quant = [op for op in tensor.consumers()
                         if op.type.startswith("FakeQuant")]
                fetch[name] = quant[0].outputs[0] if quant else tensor
            grids = {"inputs": grid(sess, "layer0/lstm_cell/concat_quant/"
                                     "FakeQuantWithMinMaxVars")}
            yield {"written": written, "runner": TFLiteRunner(path),
                   "checkpoint": checkpoint,
                   "grids": grids, "states": states,
                   "graph": lambda feed: sess.run(fetch, {
                       placeholders[n]: v for n, v in feed.items()})}
