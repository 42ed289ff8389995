"""`transforms.graph_quantize.patterns.find_layers`: the layers the
rewrite changes in a built graph, each op of the match (bias, batch norm,
dilation, residual Adds before and after the activation, the activation)
and what is left out and why (weights already quantized, not a
variable's, inside a TF1 loop, outside the scope asked for).

The references: the ops TensorFlow's own layers build (read off the graph
by their types and inputs) and the values the match's tensors compute."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.transforms.graph_quantize import patterns
from tf1_awd_sparse.transforms.graph_quantize._graph import variable_op
from tf1_awd_sparse.transforms.graph_quantize.report import RewriteReport

SHAPE = [2, 6, 6, 3]


def _by_name(layers):
    return {layer.op.name: layer for layer in layers}


def _x():
    return tf.constant(np.random.RandomState(0).randn(*SHAPE), tf.float32)


@pytest.mark.parametrize("activation, kind", [
    (tf.nn.relu, "Relu"), (tf.nn.relu6, "Relu6"), (None, None)])
def test_conv_bias_and_activation(activation, kind):
    out = tf.layers.conv2d(_x(), 4, 3, activation=activation, name="c")
    (layer,) = patterns.find_layers(tf.get_default_graph())
    assert layer.op.type == "Conv2D" and layer.op.name == "c/Conv2D"
    assert layer.weight is layer.op.inputs[1]
    assert layer.bias_add.type == "BiasAdd" and layer.batch_norm is None
    assert layer.output() is layer.bias_add.outputs[0]
    if kind is None:
        assert layer.activation is None and layer.last() is out
    else:
        assert layer.activation.type == kind and layer.last() is out
    assert layer.scope == "c/"


def test_matmul_batch_norm_and_both_residual_adds():
    x = tf.layers.flatten(_x())
    shortcut = tf.layers.dense(x, 5, name="short")
    h = tf.layers.dense(x, 5, use_bias=False, name="d")
    norm = tf.layers.batch_normalization(h, training=True, name="bn")
    added = norm + shortcut
    act = tf.nn.relu(added)
    after = act + shortcut
    tf.layers.dense(act, 2, name="next")    # the activation's other reader
    layers = _by_name(patterns.find_layers(tf.get_default_graph()))
    assert sorted(layers) == ["d/MatMul", "next/MatMul", "short/MatMul"]
    layer = layers["d/MatMul"]
    assert layer.bias_add is None
    assert layer.batch_norm.output is norm and layer.batch_norm.training
    assert layer.bypass is added.op and layer.activation is act.op
    assert layer.post_bypass is after.op
    assert layer.output() is norm and layer.last() is act
    # The shortcut's bias is no residual Add of it: read by two Adds.
    assert layers["short/MatMul"].bypass is None


def test_a_dilated_and_a_depthwise_convolution():
    x = _x()
    dilated = tf.layers.conv2d(x, 4, 3, dilation_rate=2, padding="same",
                               name="dil")
    w = tf.get_variable("dw", [3, 3, 3, 2])
    depthwise = tf.nn.relu(tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1],
                                                  "SAME"))
    layers = patterns.find_layers(tf.get_default_graph())
    types = {layer.op.type: layer for layer in layers}
    assert sorted(types) == ["Conv2D", "DepthwiseConv2dNative"]
    conv = types["Conv2D"]
    assert conv.batch_to_space.type == "BatchToSpaceND"
    assert conv.bias_add.inputs[0] is conv.batch_to_space.outputs[0]
    assert conv.last() is dilated
    dw = types["DepthwiseConv2dNative"]
    assert dw.weight is dw.op.inputs[1] and variable_op(dw.weight) is w.op
    assert dw.activation.type == "Relu" and dw.last() is depthwise
    assert dw.bias_add is None and dw.batch_to_space is None


def test_what_is_left_out_and_the_reasons(sess):
    x = tf.layers.flatten(_x())
    # Weights not a variable's value.
    constant = tf.matmul(x, tf.ones([x.shape[1].value, 3]), name="from_constant")
    # Weights already quantized (as a quantized cell's kernel).
    w = tf.get_variable("w", [x.shape[1].value, 3])
    quantized = tf.matmul(x, tf.quantization.fake_quant_with_min_max_vars(
        w, -1., 1.), name="quantized")
    # Inside a TF1 while loop.
    v = tf.get_variable("loop_w", [3, 3])

    def body(i, h):
        return i + 1, tf.matmul(h, v, name="in_loop")

    tf.while_loop(lambda i, h: i < 2, body, [tf.constant(0), tf.ones([2, 3])])
    kept = tf.layers.dense(x, 3, name="kept")
    graph = tf.get_default_graph()
    report = RewriteReport(graph, training=True)
    layers = patterns.find_layers(graph, report=report)
    assert [layer.op.name for layer in layers] == ["kept/MatMul"]
    notes = {name: reason for name, (_, reason) in report._notes.items()}
    assert notes["from_constant"] == "weights not read from a variable"
    loop = [name for name in notes if "in_loop" in name]
    assert len(loop) == 1 and \
        notes[loop[0]] == "inside a TF1 while loop or cond"
    assert patterns.in_control_flow(graph.get_operation_by_name(loop[0]))
    assert not patterns.in_control_flow(kept.op)
    assert "quantized" not in notes        # quantized already: no note
    assert constant.op.type == quantized.op.type == "MatMul"


def test_scope_keeps_only_the_layers_under_it():
    x = tf.layers.flatten(_x())
    with tf.variable_scope("encoder"):
        tf.layers.dense(x, 3, name="a")
    tf.layers.dense(x, 3, name="b")
    graph = tf.get_default_graph()
    assert [l.op.name for l in patterns.find_layers(graph, "encoder/")] == [
        "encoder/a/MatMul"]
    assert [l.op.name for l in patterns.find_layers(graph)] == [
        "encoder/a/MatMul", "b/MatMul"]


def test_an_add_of_a_constant_and_two_adds_after_are_no_bypass():
    x = tf.layers.flatten(_x())
    other = tf.layers.flatten(_x()) * 2.0
    h = tf.layers.dense(x, 5, name="d")
    shifted = h + tf.constant(np.ones([2, 5], np.float32))   # not a bypass
    act = tf.nn.relu(shifted)
    layer = _by_name(patterns.find_layers(tf.get_default_graph()))[
        "d/MatMul"]
    assert layer.bypass is None and layer.activation is None
    h2 = tf.layers.dense(x, other.shape[1].value, name="e")
    act2 = tf.nn.relu(h2)
    _ = (act2 + other, act2 + 2.0 * other)   # two residual Adds: neither
    layer = _by_name(patterns.find_layers(tf.get_default_graph()))[
        "e/MatMul"]
    assert layer.activation is act2.op and layer.post_bypass is None
    assert act.op.type == "Relu"
