"""`transforms.graph_quantize._graph`, the rewrite's small facts about ops
(made by ``tf.gradients``, fake quantization, scope, the one reader, where
a weight comes from) and its two changes to built ops (rerouting readers,
control inputs). The references: the graphs TensorFlow builds (an op's
own inputs, consumers and control inputs) and the values a session
computes before and after a change."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.transforms.graph_quantize import _graph


def test_in_gradients_is_the_gradients_scope_at_any_depth():
    x = tf.get_variable("x", [2])
    with tf.name_scope("outer"):
        y = tf.reduce_sum(tf.square(x), name="y")
    grads = tf.gradients(y, x) + tf.gradients(2. * y, x)
    grad_ops = [g.op for g in grads]
    # `gradients` and `gradients_1`, under no scope of their own.
    assert [g.name.split("/")[0] for g in grad_ops] == ["gradients",
                                                        "gradients_1"]
    assert all(_graph.in_gradients(op) for op in grad_ops)
    assert not _graph.in_gradients(y.op)
    with tf.name_scope("model"), tf.name_scope("gradients_2"):
        deep = tf.identity(x, name="deep")
    assert _graph.in_gradients(deep.op)
    # Only the scope counts: an op named so, or a look-alike scope, not.
    for name in ("gradients", "my_gradients/a", "gradients_x/a",
                 "gradients_1b/a"):
        assert not _graph.in_gradients(tf.identity(x, name=name).op), name


def test_is_fake_quant_is_each_of_tensorflows_fake_quant_ops():
    x = tf.constant([0.5, -0.5])
    quants = [
        tf.quantization.fake_quant_with_min_max_args(x),
        tf.quantization.fake_quant_with_min_max_vars(x, -1., 1.),
        tf.quantization.fake_quant_with_min_max_vars_per_channel(
            x, [-1., -1.], [1., 1.])]
    assert [q.op.type for q in quants] == [
        "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars",
        "FakeQuantWithMinMaxVarsPerChannel"]
    assert all(_graph.is_fake_quant(q.op) for q in quants)
    assert not _graph.is_fake_quant(tf.quantize(x, -1., 1., tf.quint8)
                                    .output.op)
    assert not _graph.is_fake_quant(tf.identity(x).op)


def test_op_scope_is_the_scope_with_its_slash():
    with tf.name_scope("a"), tf.name_scope("b"):
        inner = tf.constant(1., name="c")
    top = tf.constant(1., name="top")
    assert _graph.op_scope(inner.op) == "a/b/"
    assert _graph.op_scope(top.op) == ""
    # What the rewrite builds there lands in that scope.
    with tf.name_scope(_graph.op_scope(inner.op)):
        assert tf.identity(inner, name="added").op.name == "a/b/added"


def test_only_consumer_is_none_for_none_or_several_readers():
    x = tf.constant([1., 2.])
    assert _graph.only_consumer(x) is None
    y = tf.square(x)
    assert _graph.only_consumer(x) is y.op
    tf.negative(x)
    assert len(x.consumers()) == 2
    assert _graph.only_consumer(x) is None


@pytest.mark.parametrize("resource", [False, True])
def test_weight_source_and_variable_op_through_reads(resource):
    w = tf.get_variable("w", [2, 2], use_resource=resource)
    value = tf.convert_to_tensor(w) if resource else w.value()
    # A variable's value, through reads and identities (a while loop's
    # Enter included).
    for tensor in (value, tf.identity(tf.identity(value)),
                   tf.identity(w.read_value())):
        assert _graph.weight_source(tensor) == "variable"
        assert _graph.variable_op(tensor) is w.op
    quant = tf.quantization.fake_quant_with_min_max_vars(value, -1., 1.)
    for tensor in (quant, tf.identity(quant)):
        assert _graph.weight_source(tensor) == "quantized"
        assert _graph.variable_op(tensor) is None
    # A product of the variable is no weight; a constant no variable.
    for tensor in (2. * value, tf.constant([1.])):
        assert _graph.weight_source(tensor) is None
        assert _graph.variable_op(tensor) is None


def test_weight_source_inside_a_while_loop_reads_through_enter():
    w = tf.get_variable("w", [2], use_resource=False)
    seen = []

    def body(i, acc):
        read = tf.identity(w)
        seen.append(read)
        return i + 1, acc + read

    tf.while_loop(lambda i, acc: i < 2, body,
                  [tf.constant(0), tf.zeros([2])])
    # TF1 control flow (the suite's, on 2.x too): the loop reads the
    # variable's value through an Enter.
    assert "Enter" in [op.type for op in _graph._read_chain(seen[0])]
    assert _graph.variable_op(seen[0]) is w.op
    assert _graph.weight_source(seen[0]) == "variable"


def test_the_read_chain_stops_after_eight_ops():
    w = tf.get_variable("w", [2], use_resource=False)
    tensor = w.value()
    for _ in range(6):
        tensor = tf.identity(tensor)
    # VariableV2, its read and six identities: eight ops, found.
    assert _graph.variable_op(tensor) is w.op
    assert _graph.weight_source(tf.identity(tensor)) is None


def test_reroute_changes_only_the_readers_given(sess):
    x = tf.constant([1., 2.])
    a = tf.square(x, name="a")
    b = tf.negative(x, name="b")
    other = tf.identity(a, name="other")
    # Built after the readers were taken: keeps reading x.
    scaled = tf.multiply(x, 10., name="scaled")
    _graph.reroute(x, scaled, [a.op, other.op])
    assert list(a.op.inputs) == [scaled]
    assert list(b.op.inputs) == [x]
    # A reader of another tensor is left as it is.
    assert list(other.op.inputs) == [a]
    # (A session sees the graph as first run: the changes come before.)
    np.testing.assert_allclose(sess.run([a, b, scaled, other]),
                               [[100., 400.], [-1., -2.], [10., 20.],
                                [100., 400.]])


def test_run_after_adds_control_inputs(sess):
    v = tf.get_variable("v", initializer=0.)
    first = tf.assign_add(v, 1.).op
    second = tf.assign_add(v, 2.).op
    read = tf.identity(tf.constant(5.), name="read")
    assert read.op.control_inputs == []
    _graph.run_after(read.op, [first, second])
    assert set(read.op.control_inputs) == {first, second}
    sess.run(v.initializer)
    sess.run(read)
    assert sess.run(v) == 3.
