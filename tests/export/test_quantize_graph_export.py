"""A model rewritten by tf1_awd_sparse.quantization (issue 29), trained,
rewritten for evaluation, restored and exported: issue 29's done-when
program (conv + batch norm + quantized LSTM cell + dense head) to a uint8
TFLite file, and per-channel convolution weights to an int8 one (TF 2.x),
each agreeing with the fake-quantized graph."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from tf1_awd_sparse.export.eval_graph import stack_outputs
from tf1_awd_sparse.export.graphdef import nudged_quantization
from tf1_awd_sparse.export.runner import TFLiteRunner
from support.graphs import eval_graph_file, forward_quants
from support.versions import IS_TF2
from weight_drop_lstm import WeightDropLSTMCell

# The done-when program of issue 29: a TF1-style model (placeholders,
# tf.layers conv + batch norm + dense, a quantized WeightDropLSTMCell, a
# tf.train optimizer), the training rewrite with quant_delay, training,
# the eval rewrite in an eval graph, restore, uint8 TFLite export.
BATCH, TIME, FEATURES, UNITS, CLASSES = 2, 5, 4, 8, 3
INPUT_RANGE = (-3.0, 3.0)
QUANT_DELAY = 3


def _lstm_model(inputs, training):
    x = tf.quantization.fake_quant_with_min_max_args(inputs, *INPUT_RANGE)
    h = tf.layers.conv2d(tf.reshape(x, [BATCH, TIME, FEATURES, 1]), 4, 3,
                         padding="same", use_bias=False, name="conv")
    h = tf.nn.relu(tf.layers.batch_normalization(h, training=training,
                                                 name="bn"))
    h = tf.reshape(h, [BATCH, TIME, FEATURES * 4])
    cell = WeightDropLSTMCell(UNITS, is_quant=True, is_train=training,
                              quant_delay=QUANT_DELAY)
    if training:
        outputs, _ = tf.nn.dynamic_rnn(cell, h, dtype=tf.float32,
                                       scope="rnn")
    else:
        steps, _ = tf.nn.static_rnn(
            cell, [h[:, t] for t in range(TIME)],
            initial_state=cell.zero_state(BATCH, tf.float32), scope="rnn")
        outputs = stack_outputs(steps, cell, is_quant=True)
    logits = tf.layers.dense(tf.reshape(outputs, [-1, UNITS]), CLASSES,
                             name="head")
    return tf.reshape(logits, [BATCH, TIME, CLASSES], name="logits")


def _quant_names(graph):
    return sorted(op.name for op in forward_quants(graph)
                  if op.name.startswith(("conv/", "head/")))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("qgraph"))
    rng = np.random.RandomState(0)
    data = rng.uniform(-2, 2, [BATCH, TIME, FEATURES]).astype(np.float32)
    labels = (data.sum(axis=2) > 0).astype(np.int32)
    with tf.Graph().as_default() as train_graph:
        tf.set_random_seed(0)
        step = tf.train.get_or_create_global_step()
        inputs = tf.placeholder(tf.float32, data.shape, "inputs")
        loss = tf.losses.sparse_softmax_cross_entropy(
            labels, _lstm_model(inputs, True))
        quantize.create_training_graph(quant_delay=QUANT_DELAY)
        with tf.control_dependencies(
                tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.AdamOptimizer(0.01).minimize(loss,
                                                          global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train], {inputs: data})[0]
                      for _ in range(8)]
            tf.train.Saver().save(sess, os.path.join(folder, "qat"))
    path = os.path.join(folder, "model.tflite")
    eval_graph, expected = eval_graph_file(
        lambda inputs: _lstm_model(inputs, False), "inputs", data,
        os.path.join(folder, "qat"), INPUT_RANGE, path)
    runner = TFLiteRunner(path)
    return {"losses": losses, "expected": expected, "runner": runner,
            "got": runner.run(data)["logits"],
            "train_quants": _quant_names(train_graph),
            "eval_quants": _quant_names(eval_graph)}


def test_eval_graph_has_the_training_graphs_quantization(exported):
    assert exported["eval_quants"] == exported["train_quants"] == [
        "conv/act_quant/FakeQuantWithMinMaxVars",
        "conv/weights_quant/FakeQuantWithMinMaxVars",
        "head/act_quant/FakeQuantWithMinMaxVars",
        "head/weights_quant/FakeQuantWithMinMaxVars"]
    assert np.all(np.isfinite(exported["losses"]))


def test_uint8_tflite_agrees_with_the_graph(exported):
    runner = exported["runner"]
    for detail in list(runner.inputs.values()) + list(
            runner.outputs.values()):
        assert detail["dtype"] == np.uint8, detail
    step = runner.output_quantization("logits")[0]
    error = np.abs(exported["got"] - exported["expected"]) / step
    print("uint8 TFLite vs fake-quantized graph: mean %.3f, max %.2f steps "
          "(step %.4g); outputs' spread %.3f"
          % (error.mean(), error.max(), step, exported["expected"].std()))
    assert exported["expected"].std() > 10 * step   # not a constant
    assert error.mean() < 1.0


def _per_channel_model():
    x = tf.placeholder(tf.float32, [1, 8, 8, 3], name="x")
    h = tf.quantization.fake_quant_with_min_max_args(x, *INPUT_RANGE)
    h = tf.layers.conv2d(h, 4, 3, activation=tf.nn.relu, name="c1")
    # The output reads the layer's output: the rewrite puts the FakeQuant
    # between them (the layer's own tensor stays float; so it does before
    # a trailing Identity, issue 54).
    return x, tf.reshape(tf.layers.dense(tf.reshape(h, [1, -1]), 5,
                                         name="d1"), [1, 5], name="out")


@pytest.fixture(scope="module")
def per_channel(tmp_path_factory):
    """A conv + dense model trained 3 steps with per-channel weights, its
    eval graph's output and the eval graph frozen to constants."""
    ckpt = os.path.join(str(tmp_path_factory.mktemp("per_channel")), "model")
    data = np.random.RandomState(2).uniform(-2, 2, [1, 8, 8, 3])
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(0)
        step = tf.train.get_or_create_global_step()
        x, y = _per_channel_model()
        loss = tf.reduce_mean(tf.square(y - 0.5))
        quantize.experimental_create_training_graph(per_channel=True)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=step)
        quants = {op.name: op for op in graph.get_operations()
                  if op.type == "FakeQuantWithMinMaxVarsPerChannel"}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train, {x: data})
            weights = sess.run({n: (op.inputs[0], op.inputs[1], op.inputs[2])
                                for n, op in quants.items()}, {x: data})
            dense = graph.get_operation_by_name(
                "d1/weights_quant/FakeQuantWithMinMaxVars")
            dense = sess.run(list(dense.inputs[:3]), {x: data})
            tf.train.Saver().save(sess, ckpt)
    with tf.Graph().as_default():
        x, y = _per_channel_model()
        quantize.experimental_create_eval_graph(per_channel=True)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, ckpt)
            expected = sess.run(y, {x: data})
            frozen = tf.graph_util.convert_variables_to_constants(
                sess, sess.graph_def, [y.op.name])
    return {"weights": weights, "dense": dense, "data": data,
            "expected": expected,
            "frozen": frozen, "names": (x.name, y.name)}


def test_per_channel_weight_ranges(per_channel):
    # The dense layer keeps one range (see per_channel's docstring).
    assert sorted(per_channel["weights"]) == [
        "c1/weights_quant/FakeQuantWithMinMaxVarsPerChannel"]
    for w, low, high in per_channel["weights"].values():
        magnitude = np.abs(w).reshape(-1, w.shape[-1]).max(axis=0)
        # Each channel's max |w| of the weights fetched with it, negated for
        # the low end: exact, as the dense layer's below (was rtol 1e-6).
        np.testing.assert_array_equal(high, magnitude)
        np.testing.assert_array_equal(low, -magnitude)
    w, low, high = per_channel["dense"]
    assert low == -high == -np.abs(w).max()    # one range, symmetric


@pytest.mark.skipif(
    not IS_TF2, reason="int8 export: TF 1.13's converter has no int8 type and TF 1.15's "
           "TOCO writes an int8 file that its interpreter cannot run")
def test_per_channel_weights_export_to_int8(per_channel, tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(per_channel["frozen"], name="")
        x, y = [graph.get_tensor_by_name(n) for n in per_channel["names"]]
        converter = tf.lite.TFLiteConverter(per_channel["frozen"], [x], [y])
    converter.inference_type = converter.inference_output_type = tf.int8
    scale, zero_point = nudged_quantization(*INPUT_RANGE)
    # int8 codes are the uint8 ones less 128.
    converter.quantized_input_stats = {"x": (zero_point - 128, 1.0 / scale)}
    model = converter.convert()
    interpreter = tf.lite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    channels = sorted(len(d["quantization_parameters"]["scales"])
                      for d in interpreter.get_tensor_details()
                      if d["dtype"] == np.int8)
    assert 4 in channels, channels       # the conv's, per output channel
    source, = interpreter.get_input_details()
    out, = interpreter.get_output_details()
    assert source["dtype"] == out["dtype"] == np.int8
    in_scale, in_zero = source["quantization"]
    interpreter.set_tensor(source["index"], np.clip(np.round(
        per_channel["data"] / in_scale + in_zero), -128, 127).astype(np.int8))
    interpreter.invoke()
    out_scale, out_zero = out["quantization"]
    got = (interpreter.get_tensor(out["index"]).astype(np.float32)
           - out_zero) * out_scale
    error = np.abs(got - per_channel["expected"]) / out_scale
    print("int8 per-channel TFLite vs graph: mean %.3f, max %.2f steps"
          % (error.mean(), error.max()))
    assert error.mean() < 1.0
    # TFLiteRunner quantizes the int8 input and dequantizes the int8 output
    # as above (it returned the output's raw codes, issue 42): the same
    # bound against the graph.
    path = str(tmp_path / "int8.tflite")
    with open(path, "wb") as handle:
        handle.write(model)
    ran = TFLiteRunner(path).run(per_channel["data"])["out"]
    error = np.abs(ran - per_channel["expected"]) / out_scale
    assert error.mean() < 1.0, error


def _head_model(inputs, kind):
    """conv + ReLU, then a dense head named ``logits`` by tf.identity:
    behind a reshape, or behind a reduce_mean (global average pooling)."""
    x = tf.quantization.fake_quant_with_min_max_args(inputs, *INPUT_RANGE)
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu,
                         name="conv")
    h = (tf.reduce_mean(h, axis=[1, 2]) if kind == "mean"
         else tf.reshape(h, [BATCH, -1]))
    return tf.identity(tf.layers.dense(h, CLASSES, name="head"), "logits")


@pytest.mark.parametrize("kind", ["identity", "mean"])
def test_head_behind_identity_or_mean_exports_all_uint8(kind, tmp_path):
    """Issue 54, item 4: contrib's placement leaves such a head float (TOCO
    stops: logits has no range; TF 2.x writes a float head); the rewrite's
    file has no float operator and agrees with the graph."""
    from tf1_awd_sparse.export.quantized_graph import float_ops
    data = np.random.RandomState(3).uniform(
        -2, 2, [BATCH, 4, 4, 1]).astype(np.float32)
    ckpt, path = str(tmp_path / "qat"), str(tmp_path / "head.tflite")
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        inputs = tf.placeholder(tf.float32, data.shape, "inputs")
        logits = _head_model(inputs, kind)
        quantize.create_training_graph()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):          # ranges from the data
                sess.run(logits, {inputs: data})
            tf.train.Saver().save(sess, ckpt)
    _, expected = eval_graph_file(lambda t: _head_model(t, kind), "inputs",
                                  data, ckpt, INPUT_RANGE, path)
    assert float_ops(path) == []
    runner = TFLiteRunner(path)
    assert runner.outputs["logits"]["dtype"] == np.uint8
    step = runner.output_quantization("logits")[0]
    assert np.abs(runner.run(data)["logits"] - expected).max() <= 1.01 * step
