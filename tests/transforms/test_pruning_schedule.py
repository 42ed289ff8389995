"""The gradual magnitude pruning schedule
(tf1_awd_sparse.transforms.pruning_schedule) against Zhu & Gupta's closed
form in float64 (`support.references.closed_form_sparsity`), as a tensor, as
numpy and as `MagnitudePruning.sparsity_at`; its argument errors named."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.references import closed_form_sparsity
from support.tolerances import U32, transcendental_rtol
from tf1_awd_sparse.base.checks import DtypeError
from tf1_awd_sparse.transforms.magnitude_pruning import MagnitudePruning
from tf1_awd_sparse.transforms.pruning_schedule import gradual_sparsity


@pytest.mark.parametrize("begin,end,target,exponent", [
    (0, 100, 0.9, 3), (7, 31, 0.5, 3), (10, 11, 0.25, 3), (0, 50, 0.75, 1)])
def test_schedule_matches_the_closed_form(sess, begin, end, target,
                                          exponent):
    steps = np.arange(0, end + 20)
    expected = closed_form_sparsity(steps, begin, end, target, exponent)
    as_numpy = gradual_sparsity(steps, begin, end, target, exponent)
    assert as_numpy.dtype == np.float32 and as_numpy.shape == steps.shape
    # float32 target (1 - (1 - p) ** e), p in [0, 1], target <= 1: p's
    # rounding moves (1 - p) ** e by at most e u, 1 - p, 1 - (.) and the
    # product round once each, the power is a few ulp: absolute, against
    # the float64 closed form (was atol 1e-6, about this).
    atol = (exponent + 3) * U32 + transcendental_rtol()
    np.testing.assert_allclose(as_numpy, expected, rtol=0, atol=atol)
    placeholder = tf.placeholder(tf.int64, [None])
    tensor = gradual_sparsity(placeholder, begin, end, target, exponent)
    assert tensor.dtype == tf.float32
    as_tensor = sess.run(tensor, {placeholder: steps})
    np.testing.assert_allclose(as_tensor, expected, rtol=0, atol=atol)
    # Two float32 evaluations (TF's pow, numpy's): each within atol (was
    # rtol 1e-6 + atol 1e-7, under it).
    np.testing.assert_allclose(as_tensor, as_numpy, rtol=0, atol=2 * atol)
    assert as_numpy[steps <= begin].max() == 0.0
    # p = 1: 1 - 0 ** e = 1 exactly, times the target rounded to float32.
    np.testing.assert_allclose(as_numpy[steps >= end], target, rtol=U32)
    # Scalars too, and the method is the same schedule.
    pruning = MagnitudePruning(begin, end, 1, target, exponent=exponent)
    assert pruning.sparsity_at(end // 2).shape == ()
    assert pruning.sparsity_at(end // 2) == as_numpy[end // 2]


def test_bad_schedule_arguments_raise_named_errors():
    with pytest.raises(ValueError, match=r"end_step must be > begin_step"):
        gradual_sparsity(3, 10, 10, 0.5)
    with pytest.raises(ValueError, match=r"step must be an int"):
        gradual_sparsity(2.5, 0, 10, 0.5)
    with pytest.raises(DtypeError, match=r"step must be an int32 or int64"):
        gradual_sparsity(tf.constant(2.5), 0, 10, 0.5)
