"""`base.scalar_checks`: each check accepts exactly the values its
docstring promises (Python and numpy scalars alike), returns them as the
Python type it names, and refuses the rest with a ValueError naming the
argument. The reference for each value is Python's and numpy's own
arithmetic (is it an integral, a finite real, what does float32 round
it to), written here independently of the checks."""
import math
import numbers

import numpy as np
import pytest

from tf1_awd_sparse.base import scalar_checks as sc

# Python and numpy only: the same on every TensorFlow.
pytestmark = pytest.mark.per_python

#: Values of every kind the checks meet.
VALUES = [0, 1, -1, 7, np.int32(3), np.int64(-2), np.uint8(0), 2 ** 70,
          2.5, 3.0, -0.5, np.float32(0.25), float("inf"), float("-inf"),
          float("nan"), True, False, np.bool_(True), "3", None, [1],
          np.array([1])]


def _is_int(value):
    """An integral scalar that is not a bool."""
    return (isinstance(value, numbers.Integral)
            and not isinstance(value, (bool, np.bool_)))


def _is_finite_real(value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


@pytest.mark.parametrize("value", VALUES, ids=repr)
@pytest.mark.parametrize("check,minimum", [
    (sc.check_positive_int, 1), (sc.check_nonnegative_int, 0),
    (sc.check_int, None)])
def test_the_int_checks(check, minimum, value):
    accepted = _is_int(value) and (minimum is None or value >= minimum)
    if accepted:
        got = check(value, "n")
        assert type(got) is int and got == int(value)
    else:
        with pytest.raises(ValueError, match=r"^n must be "):
            check(value, "n")
    # None only when allowed, and then as None.
    assert check(None, "n", allow_none=True) is None


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_check_real_in_an_interval(value):
    for low, high, low_open, high_open in [(None, None, False, False),
                                           (0, 1, False, True),
                                           (0, None, True, False)]:
        accepted = _is_finite_real(value) and (
            low is None or (value > low if low_open else value >= low)) and (
            high is None or (value < high if high_open else value <= high))
        if accepted:
            got = sc.check_real(value, "lr", low, high, low_open, high_open)
            assert type(got) is float and got == float(value)
        else:
            with pytest.raises(ValueError, match=r"^lr must be a finite "):
                sc.check_real(value, "lr", low, high, low_open, high_open)


def test_check_real_names_the_interval():
    with pytest.raises(ValueError) as error:
        sc.check_real(-1.0, "lr", low=0, low_open=True)
    assert str(error.value) == "lr must be a finite number in (0, inf), " \
        "got -1.0"
    with pytest.raises(ValueError) as error:
        sc.check_real(2, "p", 0, 1, allow_none=True)
    assert str(error.value) == "p must be a finite number in [0, 1] or " \
        "None, got 2"


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_check_number_takes_what_float_takes_but_nan(value):
    """The reference: Python's ``float()`` of a real or bool scalar."""
    try:
        want = float(value) if isinstance(
            value, (bool, np.bool_, numbers.Real)) else None
    except OverflowError:
        want = None
    if want is not None and not math.isnan(want):
        got = sc.check_number(value, "cell_clip")
        assert type(got) is float and got == want
    else:
        with pytest.raises(ValueError, match=r"^cell_clip must be a number"):
            sc.check_number(value, "cell_clip")


@pytest.mark.parametrize("bits", list(range(-1, 11)) + [8.0, True, "8"])
def test_check_num_bits_is_fake_quants_range(bits):
    if _is_int(bits) and 2 <= bits <= 8:
        assert sc.check_num_bits(bits) == bits
    else:
        with pytest.raises(ValueError, match=r"num_bits must be an integer "
                                             r"in \[2, 8\]"):
            sc.check_num_bits(bits)


def test_check_interval_in_float32_against_numpys_rounding():
    low, high = 1.0, 1.0 + 1e-9
    assert np.float32(low) == np.float32(high)   # one float32 value
    assert sc.check_interval(low, high, "a", "b") == (low, high)
    with pytest.raises(ValueError, match=r"^a must be < b in float32"):
        sc.check_interval(low, high, "a", "b", dtype="float32")
    with pytest.raises(ValueError, match=r"^a must be < b, got 2.0 and 1.0"):
        sc.check_interval(2.0, 1.0, "a", "b")
    with pytest.raises(ValueError, match=r"^b must be a finite number"):
        sc.check_interval(0.0, float("nan"), "a", "b")


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_check_bool_takes_python_and_numpy_bools_only(value):
    if isinstance(value, (bool, np.bool_)):
        got = sc.check_bool(value, "flag")
        assert type(got) is bool and got == bool(value)
    else:
        with pytest.raises(ValueError, match=r"^flag must be a Python bool"):
            sc.check_bool(value, "flag")


def test_check_choice_names_the_choices():
    assert sc.check_choice("l0", ("vd", "l0"), "technique") == "l0"
    with pytest.raises(ValueError) as error:
        sc.check_choice("x", ("vd", "l0"), "technique")
    assert str(error.value) == "technique must be one of 'vd', 'l0', " \
        "got 'x'"
