"""The quantization rewrite says what it did (issue 44, "never silently
float"): ``report=True`` returns a RewriteReport whose quantized tensors are
exactly the FakeQuant ops the rewrite made, whose left-float ops are every
layer op it did not quantize with the reason, and whose summary line goes
to the ``tf1_awd_sparse.quantization`` logger (a warning when something
stayed float)."""
import logging

import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from tf1_awd_sparse.transforms.graph_quantize.report import LOGGER_NAME

LOOP_REASON = "inside a TF1 while loop"
COMPUTED_REASON = "weights not read from a variable"
FUNCTION_REASON = "a function body"


def _fake_quant_inputs(graph, before):
    """The tensors read by the FakeQuant ops made after ``before`` ops."""
    return sorted(op.inputs[0].name for op in graph.get_operations()[before:]
                  if op.type.startswith("FakeQuantWithMinMax"))


def _mixed_model():
    """A TF LSTMCell under dynamic_rnn (quantized in its loop), a MatMul in
    a hand-written TF1 while loop (no cell: left float), a MatMul on
    computed weights (left float) and a dense head quantized as usual."""
    x = tf.placeholder(tf.float32, [2, 5, 3], name="x")
    seq, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(4), x,
                               dtype=tf.float32)
    w = tf.get_variable("w", [4, 4])
    _, looped = tf.while_loop(lambda i, h: i < 3,
                              lambda i, h: (i + 1, tf.matmul(h, w)),
                              (tf.constant(0), seq[:, -1]))
    computed = tf.matmul(looped, w * 2.0, name="computed")
    return tf.layers.dense(tf.nn.relu(computed), 2, activation=tf.nn.relu,
                           name="head")


@pytest.mark.parametrize("kind", ["training", "eval"])
def test_report_lists_what_was_quantized_and_what_stayed_float(kind, caplog):
    with tf.Graph().as_default() as graph:
        _mixed_model()
        before = len(graph.get_operations())
        with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
            report = getattr(quantize, "create_%s_graph" % kind)(report=True)
        made = _fake_quant_inputs(graph, before)
    assert report.graph is graph and report.training == (kind == "training")
    assert sorted(q.tensor for q in report.quantized) == made
    kinds = {q.kind for q in report.quantized}
    assert {"weights_quant", "act_quant", "fixed_quant",
            "quant/concat"} <= kinds
    assert report.float_ops(COMPUTED_REASON) == ["computed"]
    assert report.float_ops(LOOP_REASON) == ["while/MatMul"]
    records = [r for r in caplog.records if r.name == LOGGER_NAME]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    line = records[0].getMessage()
    assert line == report.summary()
    assert "left float" in line and "computed" in line
    assert "%d tensors quantized" % len(made) in line


def test_a_fully_quantized_graph_logs_at_info(caplog):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        tf.layers.dense(x, 2, activation=tf.nn.relu6, name="d")
        with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
            graph = quantize.create_training_graph()
    assert isinstance(graph, tf.Graph)       # report=False: the graph
    records = [r for r in caplog.records if r.name == LOGGER_NAME]
    assert [r.levelno for r in records] == [logging.INFO]
    assert records[0].getMessage() == (
        "create_training_graph: 2 tensors quantized, no layer op left float")


def test_report_argument_is_checked():
    with tf.Graph().as_default():
        tf.layers.dense(tf.placeholder(tf.float32, [2, 3]), 2)
        with pytest.raises(ValueError, match="report"):
            quantize.create_training_graph(report="yes")


def _v2_loop_model():
    """A TF1 dynamic_rnn built with control flow v2 (a While op whose body
    is a function), restoring the flag after."""
    from tensorflow.python.ops import control_flow_util
    old = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = True
    try:
        x = tf.placeholder(tf.float32, [2, 5, 3])
        seq, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(4), x,
                                   dtype=tf.float32)
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = old
    return seq


def test_function_bodies_are_reported():
    """Control flow v2 hides the loop's MatMuls in a function: the While op
    is reported, with how to build a TF1 loop instead."""
    with tf.Graph().as_default() as graph:
        try:
            _v2_loop_model()
        except (ImportError, AttributeError, ValueError, TypeError) as error:
            pytest.skip("no control flow v2 on this TensorFlow: %s" % error)
        if not any(op.type in ("While", "StatelessWhile")
                   for op in graph.get_operations()):
            pytest.skip("control flow v2 not taken by dynamic_rnn here")
        report = quantize.create_training_graph(report=True)
    whiles = [f for f in report.left_float if FUNCTION_REASON in f.reason]
    assert [f.type for f in whiles] in (["While"], ["StatelessWhile"])
    assert "disable_control_flow_v2" in whiles[0].reason
