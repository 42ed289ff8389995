"""`base.variable_names.relative_variable_names`: the same layer built
under two scopes (TensorFlow's own LSTMCell, in ``lm/layer_0/`` and in
``layer_0/``) has the same relative names, and those are what is left of
each variable's name after the scope its variables share."""
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base.variable_names import relative_variable_names


def _lstm_variables(scope):
    with tf.variable_scope(scope):
        cell = tf.nn.rnn_cell.LSTMCell(4, num_proj=3)
        tf.nn.dynamic_rnn(cell, tf.zeros([2, 3, 5]), dtype=tf.float32)
    return [v for v in tf.global_variables()
            if v.op.name.startswith(scope + "/")]


def test_one_layer_under_two_scopes_has_one_set_of_relative_names():
    trained = _lstm_variables("lm/layer_0")
    exported = _lstm_variables("layer_0")
    names = relative_variable_names(trained)
    assert names == relative_variable_names(exported)
    # What each full name keeps after the scope TF put them all in.
    scope = "lm/layer_0/rnn/lstm_cell/"
    assert all(v.op.name.startswith(scope) for v in trained)
    assert names == [v.op.name[len(scope):] for v in trained]
    assert sorted(names) == ["bias", "kernel", "projection/kernel"]


class _Named(object):
    def __init__(self, name):
        self.name = name


def test_the_shared_scope_ends_at_a_slash():
    # "a/ker" is the names' common prefix; the scope is "a/".
    got = relative_variable_names([_Named("a/kernel:0"), _Named("a/ker:0")])
    assert got == ["kernel", "ker"]
    assert relative_variable_names([_Named("x/y/quant/state/min:0"),
                                    _Named("x/y/kernel:0")]) == [
        "quant/state/min", "kernel"]
    # One variable keeps its last name component; none gives none.
    assert relative_variable_names([_Named("x/y/kernel:0")]) == ["kernel"]
    assert relative_variable_names([]) == []
