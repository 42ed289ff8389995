"""Shared parts of the property-based tests (issue 13): argument specs that
hypothesis draws (Python values, or tensors described by value, dtype and
static shape and built inside each example's own graph), the rules that say
whether a spec is valid, the one oracle every property ends in, and the
count of cases tried per function family (printed after the run by
``conftest.pytest_terminal_summary``).

Every property asserts one of: the documented result (against numpy where
the formula is simple), a ValueError / TypeError raised while the graph is
built whose message names the bad argument, or, for values only known when
the graph runs (tensor keep rates, ids), an InvalidArgumentError naming it.
"""
import collections
import contextlib
import math
import numbers

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from hypothesis import settings
from hypothesis import strategies as st

#: Cases tried, by function family and outcome.
CASES = collections.Counter()

CONFIG = tf.ConfigProto(intra_op_parallelism_threads=1,
                        inter_op_parallelism_threads=1)


def examples(weight=1.0):
    """Hypothesis settings with ``weight`` times the profile's example
    budget (``tests/conftest.py``: a fixed budget and seed by default,
    more examples with ``--hypothesis-profile long``)."""
    return settings(max_examples=max(3, int(round(
        settings.default.max_examples * weight))))


@contextlib.contextmanager
def fresh_session():
    """A new graph and a single-threaded session on it, per example (the
    test's own graph fixture is shared by all of a test's examples)."""
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph,
                                        config=CONFIG) as session:
        tf.set_random_seed(0)  # default initializers draw alike every run
        yield session


# --------------------------------------------------------------------------
# Specs: hypothesis draws plain data; `build` turns it into the argument
# inside the example's graph.
# --------------------------------------------------------------------------
Tensor = collections.namedtuple("Tensor", "value dtype shape")
Tensor.__doc__ = """A tensor argument: ``value`` fed through
``tf.placeholder_with_default`` of static ``shape`` (None entries unknown,
None for an unknown rank), so a check cannot rely on a constant."""


def build(spec):
    """The argument a spec describes (Python values as they are)."""
    if isinstance(spec, Tensor):
        value = np.asarray(spec.value, dtype=spec.dtype.as_numpy_dtype)
        if spec.shape is not None and None not in spec.shape:
            value = np.broadcast_to(value, spec.shape)
        return tf.placeholder_with_default(value, spec.shape)
    return spec


def mostly(valid, bad, odds=5):
    """Draws from ``valid`` about ``odds`` times as often as from ``bad``
    (one bad argument per case is the common case: it must be named)."""
    return st.integers(0, odds).flatmap(
        lambda i: bad if i == odds else valid)


def is_number(value):
    return (isinstance(value, numbers.Real)
            and not isinstance(value, (bool, np.bool_)))


def in_keep_range(value):
    return is_number(value) and 0.0 < float(value) <= 1.0


PY_KEEP = mostly(
    st.one_of(st.sampled_from([1e-3, 0.25, 1.0, 1]),
              st.floats(min_value=1e-3, max_value=1.0)),
    st.one_of(st.sampled_from([0.0, -0.5, 1.5, 1 + 1e-7, float("nan"),
                               float("inf"), True, "0.5", None]),
              st.floats(min_value=-0.5, max_value=0.0),
              st.floats(min_value=1.0, max_value=1.5, exclude_min=True)))


def keep_probs(allow_tensor=True):
    """Keep rates at and past their limits: Python values of every kind
    and, with ``allow_tensor``, tensors (float or int, scalar, unknown rank
    or a vector; values past the limits only fail when the graph runs)."""
    if not allow_tensor:
        return PY_KEEP
    tensors = st.builds(
        Tensor,
        mostly(st.sampled_from([0.5, 1.0, 0.01]),
               st.sampled_from([0.0, -1.0, 1.5, float("nan")]), 2),
        mostly(st.sampled_from([tf.float32, tf.float64, tf.float16]),
               st.just(tf.int32)),
        mostly(st.sampled_from([(), None]), st.just((1,)))).map(
            # An int tensor cannot hold NaN (it is rejected for its dtype).
            lambda t: t._replace(value=0) if t.dtype.is_integer
            and math.isnan(t.value) else t)
    return st.one_of(PY_KEEP, tensors)


def keep_prob_static_ok(spec, allow_tensor=True):
    """Whether a keep-rate spec passes the graph-construction checks."""
    if isinstance(spec, Tensor):
        return (allow_tensor and spec.dtype.is_floating
                and spec.shape in ((), None))
    return in_keep_range(spec)


def keep_prob_value(spec):
    """The keep rate's value (for a valid spec), as its tensor holds it
    (0.01 in float32 is not 0.01)."""
    if isinstance(spec, Tensor):
        return float(np.asarray(spec.value, spec.dtype.as_numpy_dtype))
    return float(spec)


# Training flags of every accepted and rejected kind. The rule: a Python
# bool or a scalar tf.bool tensor; None means True.
FLAGS = mostly(st.sampled_from([
    True, False, None, np.bool_(False), Tensor(True, tf.bool, ()),
    Tensor(False, tf.bool, ()), Tensor(False, tf.bool, None)]),
    st.sampled_from([1, 0, "yes", 1.0, Tensor(1, tf.int32, ()),
                     Tensor(1.0, tf.float32, ()),
                     Tensor([True], tf.bool, (1,))]))


def flag_ok(spec):
    if isinstance(spec, Tensor):
        return spec.dtype == tf.bool and spec.shape in ((), None)
    return spec is None or isinstance(spec, (bool, np.bool_))


def flag_value(spec):
    if spec is None:
        return True
    return bool(spec.value if isinstance(spec, Tensor) else spec)


FLOATS = [tf.float16, tf.float32, tf.float64]
DTYPES = mostly(st.sampled_from(FLOATS), st.just(tf.int32))


def shapes(min_rank=0, max_rank=4, max_side=3):
    """Static shapes, zero-size dimensions included."""
    return st.lists(st.integers(0, max_side), min_size=min_rank,
                    max_size=max_rank).map(tuple)


def static_shape(shape, unknown):
    """``shape`` with the dimensions in ``unknown`` (indices) unknown."""
    return tuple(None if i in unknown else d for i, d in enumerate(shape))


def random_ids(rng, vocab, shape, out_of_range):
    """Ids in [0, vocab) of ``shape``; with ``out_of_range`` (and at least
    one id) one of them is -1, vocab or vocab + 3."""
    ids = rng.randint(0, vocab, size=shape)
    if out_of_range and ids.size:
        ids.flat[rng.randint(ids.size)] = rng.choice([-1, vocab, vocab + 3])
    return ids


def flag_and_keep_bad(training, keep):
    """The names among ``training`` / ``keep_prob`` whose specs are
    rejected when the graph is built."""
    return ({"training"} if not flag_ok(training) else set()) | (
        {"keep_prob"} if not keep_prob_static_ok(keep) else set())


def random_array(rng, shape, dtype, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape).astype(dtype.as_numpy_dtype)


# --------------------------------------------------------------------------
# The oracle.
# --------------------------------------------------------------------------
def expect(family, bad, call, check=None):
    """Runs ``call`` and asserts the documented outcome.

    Args:
      family: the function family, for the count.
      bad: the names of the arguments that are invalid when the graph is
        built (empty: valid).
      call: builds (and may run) the graph; returns what ``check`` checks.
      check: called with ``call``'s result when ``bad`` is empty.
    """
    if bad:
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        assert not isinstance(info.value, tf.errors.OpError), info.value
        message = str(info.value)
        assert any(name in message for name in bad), (bad, message)
        CASES[family, "named error"] += 1
        return
    result = call()
    if check is not None:
        check(result)
    CASES[family, "documented result"] += 1


def expect_run_error(family, names, run):
    """Asserts that running the graph raises InvalidArgumentError naming
    one of ``names`` (a name or a tuple of them: values only known at run
    time, tensor keep rates and ids)."""
    names = (names,) if isinstance(names, str) else names
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run()
    assert any(n in info.value.message for n in names), info.value.message
    CASES[family, "run-time error"] += 1


def close(got, want, dtype):
    """assert_allclose with a tolerance for ``dtype``."""
    tol = {tf.float16: 2e-2, tf.float32: 1e-5, tf.float64: 1e-10}[dtype]
    np.testing.assert_allclose(np.asarray(got, np.float64),
                               np.asarray(want, np.float64), rtol=tol,
                               atol=tol)


def isnan(value):
    return isinstance(value, float) and math.isnan(value)
