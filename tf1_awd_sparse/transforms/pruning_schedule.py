"""The schedule of gradual magnitude pruning (Zhu & Gupta 2017), as
`magnitude_pruning.MagnitudePruning` and the language model's training
record follow it, for a step tensor or for numpy ints.

The target fraction of zeros at global step ``t`` is ::

    p(t) = clip((t - sparsity_begin_step)
                / (sparsity_end_step - sparsity_begin_step), 0, 1)
    s(t) = target_sparsity * (1 - (1 - p(t)) ** exponent)

(written as contrib writes it, ``(0 - target) * (1 - p) ** exponent +
target``, in float32), 0 before the ramp and ``target_sparsity`` after it.
"""
from __future__ import absolute_import, division, print_function

import numpy as np

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.checks import check_tensor
from tf1_awd_sparse.base.scalar_checks import (
    check_int, check_nonnegative_int, check_real)
from tf1_awd_sparse.base.compat import tf

__all__ = ["gradual_sparsity"]


def _ramp(steps_done, span, target, exponent, minimum, maximum, one, zero):
    """The cubic (``exponent``) ramp from 0 to ``target``: the one formula
    behind the tensor and the numpy schedules (``minimum`` / ``maximum`` /
    ``one`` / ``zero`` are the namespace's, so float32 throughout)."""
    progress = minimum(one, maximum(zero, steps_done / span))
    return (zero - target) * (one - progress) ** exponent + target


def gradual_sparsity(step, begin_step, end_step, target_sparsity, exponent=3):
    """The gradual sparsity schedule ``s(step)`` (module docstring).

    Args:
      step: an int tensor (any shape; cast to int32 as contrib's global step
        is), or a Python / numpy int or int array.
      begin_step, end_step: the ramp's ends (``begin_step < end_step``);
        ``s`` is 0 up to ``begin_step`` and ``target_sparsity`` from
        ``end_step`` on.
      target_sparsity: the final fraction of zeros, in ``[0, 1)``.
      exponent: the ramp's exponent (3: cubic).

    Returns:
      A float32 tensor of ``step``'s shape for a tensor ``step``; else a
      numpy float32 array (0-d for a scalar ``step``).

    Raises:
      ValueError: a bad argument (named).
      DtypeError: a tensor ``step`` that is not int32 / int64.
    """
    begin_step = check_nonnegative_int(begin_step, "begin_step")
    end_step = check_int(end_step, "end_step")
    if end_step <= begin_step:
        raise ValueError("end_step must be > begin_step (%d), got %d"
                         % (begin_step, end_step))
    target = check_real(target_sparsity, "target_sparsity", low=0.0,
                        high=1.0, high_open=True)
    exponent = check_real(exponent, "exponent", low=0.0, low_open=True)
    span = end_step - begin_step
    if isinstance(step, _compat.TENSOR_TYPES):
        step = tf.cast(check_tensor(step, "step", kind="int"), tf.int32)
        return _ramp(tf.cast(step - begin_step, tf.float32), float(span),
                     target, exponent, tf.minimum, tf.maximum, 1.0, 0.0)
    steps = np.asarray(step)
    if steps.dtype.kind not in "iu":
        raise ValueError("step must be an int, an int array or an int "
                         "tensor, got %r" % (step,))
    f32 = np.float32
    return np.asarray(_ramp((steps.astype(np.int64) - begin_step).astype(f32),
                            f32(span), f32(target), f32(exponent),
                            np.minimum, np.maximum, f32(1.0), f32(0.0)),
                      dtype=f32)
