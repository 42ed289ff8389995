"""The checks of Python (and numpy) scalar arguments: ints, reals, numbers,
bit widths, intervals, bools and choices. Each error names the argument,
what was expected and what was given. They import no TensorFlow (only
`check_interval` with a ``dtype`` does, when called), so that the corpus and
config floors and ``awd-lm info`` run without it. Every name is also
importable from :mod:`tf1_awd_sparse.base.checks`, the checks' one public
module."""
from __future__ import absolute_import, division, print_function

import math
import numbers

import numpy as np

__all__ = ["check_positive_int", "check_nonnegative_int", "check_int",
           "check_real", "check_number", "check_num_bits", "check_interval",
           "check_bool", "check_choice"]


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


def check_int(value, arg_name, allow_none=False):
    """Validates an integer of any sign (Python or numpy int, not a bool),
    e.g. a step number or a seed.

    Returns:
      ``value`` as a Python int (or None with ``allow_none``).

    Raises:
      ValueError: anything else, e.g. 2.5, True or '3'.
    """
    return _check_int(value, arg_name, None, "an int", allow_none)


def _check_int(value, arg_name, minimum, what, allow_none):
    if value is None and allow_none:
        return None
    if (isinstance(value, (bool, np.bool_))
            or not isinstance(value, numbers.Integral)
            or (minimum is not None and value < minimum)):
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
          and isinstance(value, numbers.Real) and _finite(value))
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


def check_number(value, arg_name, allow_none=False):
    """Validates a number as Python arithmetic takes it: a Python or numpy
    real, a bool as 0 / 1, +-inf included, NaN not (``tf.nn.rnn_cell.
    LSTMCell`` computes with every such ``cell_clip`` / ``forget_bias``;
    a NaN clip means no clip on TF 1.x and NaN states on 2.x).

    Returns:
      ``value`` as a Python float (or None with ``allow_none``).

    Raises:
      ValueError: anything else (a string, a tensor, an array, NaN).
    """
    if value is None and allow_none:
        return None
    number = None
    if isinstance(value, (bool, np.bool_, numbers.Real)):
        try:
            number = float(value)
        except OverflowError:  # an int too large for a float
            pass
    if number is None or math.isnan(number):
        raise ValueError("%s must be a number (a Python or numpy real or "
                         "bool, not NaN)%s, got %r"
                         % (arg_name, " or None" if allow_none else "",
                            value))
    return number


def _finite(value):
    """math.isfinite for any real, a Python int too large for a float
    included (np.isfinite raises TypeError on it)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_num_bits(num_bits, arg_name="num_bits"):
    """Validates a bit width of fake quantization: an int in [2, 8] (the
    limits of ``tf.fake_quant_with_min_max_vars``).

    Returns:
      ``num_bits`` as a Python int.

    Raises:
      ValueError: anything else (8.0, True, 9, 1...).
    """
    value = _check_int(num_bits, arg_name, 2, "an integer in [2, 8]", False)
    if value > 8:
        raise ValueError("%s must be an integer in [2, 8], got %r"
                         % (arg_name, num_bits))
    return value


def check_interval(low, high, low_name, high_name, dtype=None):
    """Validates an interval given as two Python numbers: both finite and
    ``low < high`` (e.g. a quantization range: an empty one has no grid),
    also once cast to ``dtype`` when given (two float64 bounds may round
    to one float32 value).

    Returns:
      ``(low, high)`` as Python floats.

    Raises:
      ValueError: naming the bound that is not a finite number, or both
        when ``low >= high``.
    """
    low = check_real(low, low_name)
    high = check_real(high, high_name)
    tf = None
    if dtype:   # TensorFlow only for a dtype: the scalar checks need none
        from tf1_awd_sparse.base import compat
        tf = compat.tf
    cast = tf.as_dtype(dtype).as_numpy_dtype if dtype else float
    if not cast(low) < cast(high):
        raise ValueError("%s must be < %s%s, got %r and %r"
                         % (low_name, high_name,
                            " in %s" % tf.as_dtype(dtype).name if dtype
                            else "", low, high))
    return low, high


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
