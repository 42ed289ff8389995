"""tf1_awd_sparse._compat on the TensorFlow version under test (the suite
runs on 1.13.1 with `make test` and on 1.15.5 with `make test-tf115`)."""
import inspect

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import _compat


class _FlagError(TypeError, ValueError):
    """Like layer_utils.TrainingFlagError: a type AutoGraph cannot rebuild."""


class _Layer(tf.layers.Layer):

    @_compat.do_not_convert
    def call(self, inputs, training=False):
        """Python control flow on a tensor, as only unconverted code sees it."""
        if training == "bad":
            raise _FlagError("training: bad")
        if inputs:  # a tf.Tensor used as a Python bool
            return inputs
        return -inputs


class _Outer(tf.layers.Layer):

    def __init__(self, inner, **kwargs):
        super(_Outer, self).__init__(**kwargs)
        self.inner = inner

    def call(self, inputs, training=False):
        # `training` to the inner layer positionally: Keras 1.15 must see
        # it in the inner `call`'s signature, else it adds training=...
        # from this call's context as a keyword too.
        return self.inner(inputs, False) * (2.0 if training is True else 1.0)


def test_do_not_convert_keeps_name_doc_and_signature():
    def f(inputs, training=False, *, scale=1.0):
        """Doc."""
        return inputs * scale, training

    g = _compat.do_not_convert(f)
    assert g.__name__ == "f" and g.__doc__ == "Doc."
    assert inspect.getfullargspec(g) == inspect.getfullargspec(f)
    assert g(3, True, scale=2.0) == (6.0, True)
    assert (inspect.getfullargspec(_Layer.call).args
            == ["self", "inputs", "training"])


def test_layer_call_is_not_converted():
    layer = _Layer()
    # Unconverted, a tensor as a Python bool is an error in graph mode
    # (converted, AutoGraph would have staged a tf.cond).
    with pytest.raises(TypeError):
        layer(tf.constant(1.0))
    # The library's own exception types reach the caller as raised, not as
    # AutoGraph's StagingError.
    with pytest.raises(_FlagError, match="training: bad"):
        _Layer()(tf.constant(1.0), training="bad")


def test_training_passed_positionally_to_an_inner_layer(sess):
    class Inner(tf.layers.Layer):
        @_compat.do_not_convert
        def call(self, inputs, training=False):
            return inputs + (1.0 if training is True else 0.0)

    out = _Outer(Inner())(tf.constant([1.0]), training=True)
    np.testing.assert_array_equal(sess.run(out), [2.0])


def test_variable_class_covers_ref_and_resource_variables():
    ref = tf.get_variable("ref", [], use_resource=False)
    resource = tf.get_variable("resource", [], use_resource=True)
    for variable in (ref, resource):
        assert isinstance(variable, _compat.Variable)
        assert isinstance(variable, _compat.TENSOR_TYPES)
    assert isinstance(ref.value(), _compat.TENSOR_TYPES)
    assert not isinstance(np.float32(1.0), _compat.TENSOR_TYPES)
