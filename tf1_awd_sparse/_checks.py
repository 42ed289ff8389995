"""The library's argument checks and train/eval control flow, written once.

Every public class and function of the library validates its arguments
with these helpers, so an error always names the argument, what was
expected and what was given, and the same kind of argument is checked the
same way everywhere.

The training flag, one rule for the whole library: a Python bool or a
scalar ``tf.bool`` tensor (e.g. ``tf.placeholder_with_default(True, [])``,
so that one graph trains and evaluates); ``None`` means True. Training is
the default everywhere (cells, layers, dropout functions), as in the
AWD-LSTM port the library replaces: pass False, or feed False, to evaluate.
"""
from __future__ import absolute_import, division, print_function

import numbers

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import smart_cond as _smart_cond

__all__ = ["TrainingFlagError", "check_training", "smart_cond",
           "check_positive_int", "check_nonnegative_int", "check_real",
           "check_keep_prob", "check_bool", "check_choice", "derived_seed", "outer_control_inputs",
           "once_per_run"]


class TrainingFlagError(TypeError, ValueError):
    """A training flag that is neither a Python bool nor a scalar bool
    tensor. Both a TypeError (``tf.layers``' convention for call arguments)
    and a ValueError (``tf.nn.rnn_cell``'s for constructor arguments), so
    code written against either convention catches it."""


def check_training(training, arg_name="training"):
    """Validates a train/eval flag (see the module docstring for the rule).

    Args:
      training: None, a Python (or numpy) bool, or a scalar ``tf.bool``
        tensor / variable.
      arg_name: the argument's name, for the error message.

    Returns:
      A Python bool, or the bool tensor unchanged.

    Raises:
      TrainingFlagError: any other type, a non-bool tensor, or a tensor
        whose static rank is not 0.
    """
    if training is None:
        return True
    if isinstance(training, (bool, np.bool_)):
        return bool(training)
    if isinstance(training, (tf.Tensor, tf.Variable)):
        if training.dtype.base_dtype != tf.bool:
            raise TrainingFlagError(
                "%s must be a Python bool or a scalar tf.bool tensor, got a "
                "%s tensor" % (arg_name, training.dtype.base_dtype.name))
        if training.shape.ndims not in (None, 0):
            raise TrainingFlagError("%s must be a scalar, got shape %s"
                                    % (arg_name, training.shape))
        return training
    raise TrainingFlagError("%s must be a Python bool or a scalar tf.bool "
                            "tensor, got %r" % (arg_name, training))


def smart_cond(pred, true_fn, false_fn, name=None):
    """``true_fn()`` or ``false_fn()``: chosen in Python when ``pred`` is a
    bool or a constant tensor (only that branch is built), else a
    ``tf.cond`` (one graph serves both).

    Args:
      pred: Python bool or scalar bool tensor.
      true_fn, false_fn: callables returning matching structures.
      name: optional name scope of the cond.

    Returns:
      The selected callable's result.
    """
    return _smart_cond.smart_cond(pred, true_fn, false_fn, name=name)


def check_positive_int(value, arg_name, allow_none=False):
    """Validates a positive integer (Python or numpy int, not a bool).

    Args:
      value: the value given.
      arg_name: the argument's name, for the error message.
      allow_none: accept None (returned as None).

    Returns:
      ``value`` as a Python int (or None).

    Raises:
      ValueError: anything else, e.g. 0, -1, 2.5, True or '3'.
    """
    return _check_int(value, arg_name, 1, "a positive int", allow_none)


def check_nonnegative_int(value, arg_name, allow_none=False):
    """Validates an integer >= 0 (Python or numpy int, not a bool), e.g. a
    thread count where 0 means "the runtime's choice".

    Returns:
      ``value`` as a Python int (or None with ``allow_none``).

    Raises:
      ValueError: anything else, e.g. -1, 2.5, True or '3'.
    """
    return _check_int(value, arg_name, 0, "an int >= 0", allow_none)


def _check_int(value, arg_name, minimum, what, allow_none):
    if value is None and allow_none:
        return None
    if (isinstance(value, (bool, np.bool_))
            or not isinstance(value, numbers.Integral) or value < minimum):
        raise ValueError("%s must be %s%s, got %r"
                         % (arg_name, what, " or None" if allow_none else "",
                            value))
    return int(value)


def check_real(value, arg_name, low=None, high=None, low_open=False,
               high_open=False, allow_none=False):
    """Validates a finite real number in an interval.

    Args:
      value: the value given (Python or numpy real, not a bool).
      arg_name: the argument's name, for the error message.
      low, high: the bounds (None: unbounded on that side).
      low_open, high_open: exclude the bound itself.
      allow_none: accept None (returned as None).

    Returns:
      ``value`` as a Python float (or None).

    Raises:
      ValueError: not a real, NaN, infinite or outside the interval; the
        message names the argument and the interval, e.g. ``lr must be a
        finite number in (0, inf), got -1.0``.
    """
    if value is None and allow_none:
        return None
    ok = (not isinstance(value, (bool, np.bool_))
          and isinstance(value, numbers.Real) and np.isfinite(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        raise ValueError("%s must be a finite number in %s%s, %s%s%s, got %r"
                         % (arg_name, "(" if low_open or low is None else "[",
                            "-inf" if low is None else "%g" % low,
                            "inf" if high is None else "%g" % high,
                            ")" if high_open or high is None else "]",
                            " or None" if allow_none else "", value))
    return float(value)


def check_keep_prob(keep_prob, arg_name="keep_prob"):
    """Validates a keep probability given as a Python number.

    Args:
      keep_prob: a Python / numpy real in ``(0, 1]``.
      arg_name: the argument's name, for the error message.

    Returns:
      ``keep_prob`` as a Python float.

    Raises:
      ValueError: not a real number in ``(0, 1]`` (NaN included).
    """
    if (isinstance(keep_prob, (bool, np.bool_))
            or not isinstance(keep_prob, numbers.Real)
            or not 0.0 < float(keep_prob) <= 1.0):
        raise ValueError("%s must be a number in (0, 1], got %r"
                         % (arg_name, keep_prob))
    return float(keep_prob)


def check_bool(value, arg_name):
    """Validates a Python bool argument.

    Returns:
      ``value`` as a Python bool.

    Raises:
      ValueError: anything but a Python or numpy bool.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError("%s must be a Python bool, got %r"
                         % (arg_name, value))
    return bool(value)


def check_choice(value, choices, arg_name):
    """Validates that ``value`` is one of ``choices``.

    Returns:
      ``value``.

    Raises:
      ValueError: naming the argument and the choices.
    """
    if value not in choices:
        raise ValueError("%s must be one of %s, got %r"
                         % (arg_name, ", ".join(repr(c) for c in choices),
                            value))
    return value


def derived_seed(seed, offset):
    """An op seed for the ``offset``-th random op of one object: None stays
    None (graph-level seeding); otherwise ``seed + offset``, so two ops of
    one object never draw the same stream."""
    return None if seed is None else int(seed) + offset


def outer_control_inputs():
    """Control inputs active here that live outside every control-flow
    context: the ones an op built outside a loop or cond may keep."""
    graph = tf.get_default_graph()
    # pylint: disable=protected-access
    # TF 1.x has no public accessor for the active control dependencies.
    return [op for op in graph._current_control_dependencies()
            if op._get_control_flow_context() is None]


class once_per_run(object):  # pylint: disable=invalid-name
    """Context for tensors computed once per ``session.run``: outside any
    ``tf.while_loop`` / ``tf.cond`` (``control_dependencies(None)`` also
    clears the control-flow context), keeping the call site's control
    inputs that live outside loops (e.g. an update op the caller put
    around ``dynamic_rnn``)."""

    def __enter__(self):
        outer = outer_control_inputs()
        self._clear = tf.control_dependencies(None)
        self._clear.__enter__()
        self._keep = tf.control_dependencies(outer)
        self._keep.__enter__()
        return self

    def __exit__(self, *exc):
        self._keep.__exit__(*exc)
        return self._clear.__exit__(*exc)
