"""`layers._sequence_base`, a sequence layer's plumbing: the scope argument
checked, the layer's variable scope (the constructor's, else a unique
``rnn`` / ``rnn_<n>`` as ``dynamic_rnn`` names its own, fixed by the first
call, a call's own ``scope=`` placing that call) and its variables (the
cell's, split by trainability).

The references: what TensorFlow itself does with the same cell (a plain
``tf.nn.dynamic_rnn``'s scopes and variables) and the graph's variable
collections. A minimal layer over TF's ``LSTMCell`` drives the base
directly; `WeightDropLSTM`, its subclass, keeps the same promises."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.layers._sequence_base import (SequenceLayerBase,
                                                  check_scope)
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell

B, T, D, N = 2, 3, 4, 5


class _Layer(SequenceLayerBase):
    """The smallest sequence layer: dynamic_rnn of a cell in the layer's
    scope."""

    def __init__(self, scope=None, cell=None):
        super(_Layer, self).__init__(
            lambda: cell or tf.nn.rnn_cell.LSTMCell(N), scope=scope)

    def __call__(self, inputs, scope=None):
        with self._variable_scope(scope):
            return tf.nn.dynamic_rnn(self.cell, inputs, dtype=tf.float32,
                                     scope=tf.get_variable_scope())[0]


def _x():
    return tf.constant(np.random.RandomState(0).randn(B, T, D), tf.float32)


@pytest.mark.parametrize("scope", [None, "s", "a/b"])
def test_check_scope_returns_what_it_accepts(scope):
    assert check_scope(scope, "arg") is scope
    with tf.variable_scope("v") as varscope:
        pass
    assert check_scope(varscope, "arg") is varscope


@pytest.mark.parametrize("scope", ["", 3, b"s", ["s"]])
def test_check_scope_names_the_argument(scope):
    with pytest.raises(ValueError) as error:
        check_scope(scope, "my_scope")
    assert str(error.value) == ("my_scope must be None, a non-empty string "
                                "or a tf.VariableScope, got %r" % (scope,))


def test_default_scopes_are_unique_rnn_names_in_the_enclosing_scope():
    """Layers without a scope take the next free ``rnn`` name of their
    enclosing scope (``dynamic_rnn``'s default name, made unique as
    ``tf.layers`` make theirs)."""
    x = _x()
    first = _Layer()
    assert first.scope_name is None and not first.built
    first(x)
    second = _Layer()
    second(x)
    with tf.variable_scope("lm"):
        inner = _Layer()
        inner(x)
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == sorted("%s/lstm_cell/%s" % (scope, kind)
                           for scope in ("rnn", "rnn_1", "lm/rnn")
                           for kind in ("kernel", "bias"))
    assert (first.scope_name, second.scope_name, inner.scope_name) == (
        "rnn", "rnn_1", "lm/rnn")
    assert first.built
    # A plain dynamic_rnn's own variables are where the layer's are.
    with tf.Graph().as_default():
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(N), tf.zeros([B, T, D]),
                          dtype=tf.float32)
        assert [v.op.name for v in tf.global_variables()] == [
            v.op.name for v in first.variables]


@pytest.mark.parametrize("given", ["encoder", "variable_scope"])
def test_the_constructors_scope_is_the_layers(given):
    with tf.variable_scope("encoder") as varscope:
        pass
    layer = _Layer(scope="encoder" if given == "encoder" else varscope)
    layer(_x())
    assert layer.scope_name == "encoder"
    assert [v.op.name for v in layer.variables] == [
        "encoder/lstm_cell/kernel", "encoder/lstm_cell/bias"]


def test_later_calls_reenter_the_first_scope_and_a_calls_scope_places_it(
        sess):
    layer = _Layer()
    x = _x()
    first = layer(x)
    count = len(tf.global_variables())
    with tf.variable_scope("elsewhere"):
        again = layer(x)        # reenters "rnn", not "elsewhere/rnn"
    placed = layer(x, scope="other")
    assert len(tf.global_variables()) == count
    assert layer.scope_name == "rnn"
    assert placed.name.startswith("other/")
    sess.run(tf.global_variables_initializer())
    a, b, c = sess.run([first, again, placed])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_a_call_with_a_scope_first_fixes_that_scope():
    layer = _Layer(scope="ctor")
    layer(_x(), scope="first")
    assert layer.scope_name == "first"
    assert layer.variables[0].op.name == "first/lstm_cell/kernel"
    # A later call without one reenters it, not the constructor's.
    count = len(tf.global_variables())
    assert layer(_x()).name.startswith("first_1/")
    assert len(tf.global_variables()) == count


def test_variables_are_the_cells_split_by_trainability():
    tf.get_variable("unrelated", [2])
    # The library's cell with a pruning mask: a non-trainable variable.
    layer = _Layer(cell=WeightDropLSTMCell(N, pruning_mask=True))
    assert layer.variables == layer.weights == [] and not layer.built
    before = set(tf.global_variables())
    layer(_x())
    created = set(tf.global_variables()) - before
    assert len(created) == 4 and set(layer.variables) == created
    assert layer.weights == layer.variables == layer.cell.weights
    assert set(layer.trainable_variables) == created & set(
        tf.trainable_variables())
    frozen = sorted(created - set(tf.trainable_variables()),
                    key=lambda v: v.op.name)
    assert [v.op.name for v in frozen] == ["rnn/lstm_cell/pruning_mask",
                                           "rnn/lstm_cell/pruning_threshold"]
    assert set(layer.non_trainable_variables) == set(frozen)
    # Trainable ones first.
    assert set(layer.variables[2:]) == set(frozen)


def test_a_bad_scope_is_named_at_construction_and_call():
    with pytest.raises(ValueError, match="scope must be None"):
        _Layer(scope=3)
    with pytest.raises(ValueError, match="scope must be None"):
        _Layer()(_x(), scope="")


def test_make_cell_runs_once_after_the_scope_is_checked():
    calls = []

    def make_cell():
        calls.append(1)
        return tf.nn.rnn_cell.LSTMCell(N)

    with pytest.raises(ValueError):
        SequenceLayerBase(make_cell, scope=0)
    assert calls == []
    layer = SequenceLayerBase(make_cell)
    assert calls == [1] and isinstance(layer.cell, tf.nn.rnn_cell.LSTMCell)


# WeightDropLSTM, the library's sequence layer, through the same plumbing.
def test_weight_drop_lstms_default_scope_is_unique_in_the_enclosing_scope():
    layers = [WeightDropLSTM(N) for _ in range(3)]
    x = _x()
    with tf.variable_scope("lm"):
        layers[0](x)
        layers[1](x)
    layers[2](x)
    assert [l.scope_name for l in layers] == ["lm/rnn", "lm/rnn_1", "rnn"]
    # An explicit scope keeps its name.
    named = WeightDropLSTM(N, scope="encoder")
    named(x)
    assert named.variables[0].op.name == "encoder/lstm_cell/kernel"


def test_weight_drop_lstms_bad_scope_is_a_named_error():
    with pytest.raises(ValueError, match="scope must be None"):
        WeightDropLSTM(N, scope=3)
    with pytest.raises(ValueError, match="scope must be None"):
        WeightDropLSTM(N)(_x(), scope="")
