"""`export.export_quantized_graph` (issue 54, item 9): a user's TF1 model
of TensorFlow's own LSTMCell and GRUCell under dynamic_rnn with a dense
head behind tf.identity, rewritten with quant_delay > 0 and trained, then
its one-step eval graph written as a fully uint8 TFLite file by the one
public call from the training checkpoint: the inputs' grids are the
graph's own range variables, the file streams within a few output steps
of the eval graph, and what a file leaves float is named from the file."""
import logging
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from tf1_awd_sparse.export import graphdef, quantized_graph
from tf1_awd_sparse.export.runner import TFLiteRunner
from support.versions import IS_TF2

UNITS, DEPTH, CLASSES, BATCH, TIME, STREAM = 8, 3, 4, 4, 6, 20
QUANT_DELAY, STEPS = 10, 60
STATES = ("state_0_c", "state_0_h", "state_1_h")
TF_215 = tf.__version__.startswith("2.15.")


def _train(path):
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


def _step_graph():
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


def _grid(session, fake_quant_name):
    """The uint8 (scale, zero point) of a FakeQuant of the graph, from
    its range variables' values (the op's own min / max inputs)."""
    op = session.graph.get_operation_by_name(fake_quant_name)
    low, high = session.run(list(op.inputs[1:3]))
    return graphdef.nudged_quantization(low, high)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("quantized_graph"))
    checkpoint = os.path.join(folder, "model")
    _train(checkpoint)
    path = os.path.join(folder, "model.tflite")
    with tf.Graph().as_default():
        placeholders, logits, states = _step_graph()
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
            grids = {"inputs": _grid(sess, "layer0/lstm_cell/concat_quant/"
                                     "FakeQuantWithMinMaxVars")}
            yield {"written": written, "runner": TFLiteRunner(path),
                   "grids": grids, "states": states,
                   "graph": lambda feed: sess.run(fetch, {
                       placeholders[n]: v for n, v in feed.items()})}


def test_the_file_is_fully_uint8_and_names_nothing_float(exported):
    written, runner = exported["written"], exported["runner"]
    assert written.left_float == []
    assert quantized_graph.float_ops(written.path) == []
    details = list(runner.inputs.values()) + list(runner.outputs.values())
    assert {d["dtype"] for d in details} == {np.uint8}
    assert sorted(runner.inputs) == sorted(("inputs",) + STATES)
    # The data input on the grid of the concatenation that reads it first,
    # from the graph's own range variables; each state input on the grid
    # of the state fed back into it.
    assert runner.inputs["inputs"]["quantization"] == pytest.approx(
        exported["grids"]["inputs"])
    for name, (scale, zero) in written.inputs.items():
        assert runner.inputs[name]["quantization"] == pytest.approx(
            (scale, zero))


def _stream(exported):
    runner, graph = exported["runner"], exported["graph"]
    stream = np.random.RandomState(1).uniform(-2, 2, [STREAM, 1, DEPTH])
    zero = np.zeros([1, UNITS], np.float32)
    mine = {n: zero for n in STATES}
    ref = dict(mine)
    one_step, free = [], []
    scale = {n: runner.output_quantization(n)[0] for n in runner.outputs}
    for t in range(STREAM):
        got = runner.run({"inputs": stream[t]},
                         state=dict(mine))
        want = graph(dict(mine, inputs=stream[t]))
        ref_out = graph(dict(ref, inputs=stream[t]))
        one_step.append({n: np.abs(got[n] - want[n]).max() / scale[n]
                         for n in want})
        free.append({n: np.abs(got[n] - ref_out[n]).mean() / scale[n]
                     for n in want})
        mine = {n: got["final" + n[len("state"):]] for n in STATES}
        ref = {n: ref_out["final" + n[len("state"):]] for n in STATES}
    return one_step, free


def test_the_file_streams_within_two_output_steps_of_the_eval_graph(
        exported):
    one_step, free = _stream(exported)
    worst = {n: max(s[n] for s in one_step) for n in one_step[0]}
    mean_free = {n: np.mean([s[n] for s in free]) for n in free[0]}
    print("one step, max output steps:", worst)
    print("fed back, mean output steps:", mean_free)
    if TF_215:
        pytest.xfail("TF 2.15 (docs/quantization.md): measured %r" % worst)
    assert max(worst.values()) <= 2.0, worst
