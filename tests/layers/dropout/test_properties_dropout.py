"""Property-based tests of ``variational_dropout``'s functions (issue 13):
shapes of every rank (zero-size and unknown dimensions), dtypes, keep rates
and training flags of every kind, ids out of range. Each case ends in the
documented result (checked against numpy) or in an error naming the
argument (see ``support.properties.expect``)."""
import numpy as np
import tensorflow.compat.v1 as tf
from hypothesis import given
from hypothesis import strategies as st

import variational_dropout as vd
from support.properties import (DTYPES, FLAGS, Tensor, build, examples,
                              expect, expect_run_error, flag_and_keep_bad,
                              flag_ok, flag_value, fresh_session,
                              keep_prob_static_ok, keep_prob_value,
                              keep_probs, mostly, random_ids, shapes,
                              static_shape)
from support.tolerances import unit_roundoff


def _nonzero(rng, shape, dtype):
    """Values of magnitude in [0.5, 2], so a zero output means dropped."""
    magnitude = rng.uniform(0.5, 2.0, size=shape)
    sign = rng.choice([-1.0, 1.0], size=shape)
    return (magnitude * sign).astype(dtype.as_numpy_dtype)


def _keep_runs_bad(keep, training):
    """A tensor keep rate outside (0, 1] fails when the graph runs, unless
    a Python False flag left the dropout out of the graph."""
    return (isinstance(keep, Tensor) and training is not False
            and not (isinstance(training, np.bool_) and not training)
            and not 0.0 < keep_prob_value(keep) <= 1.0)


def _scaled_close(got, want, dtype):
    """``got`` = x * mask / keep in ``dtype`` against the same in numpy:
    keep rounded to ``dtype`` (u), the division and, if the mask is scaled
    first, one more rounding, on each side: 5 u relative (values >= 0.5 in
    size: no subnormals). ``close`` allowed 1e-5 (float32, 84 u) and 2e-2
    (float16, 41 u), or as much absolute."""
    np.testing.assert_allclose(np.asarray(got, np.float64),
                               np.asarray(want, np.float64),
                               rtol=5 * unit_roundoff(dtype), atol=0)


def _check_kept_or_dropped(x, y, keep, dtype):
    """Every entry of y is 0 or x / keep."""
    kept = y != 0
    _scaled_close(y[kept], x[kept] / keep, dtype)
    return kept


@examples(2)
@given(shape=mostly(shapes(2, 4), shapes(0, 1)),
       unknown=st.sets(st.integers(0, 3)),
       unknown_rank=mostly(st.just(False), st.just(True)), dtype=DTYPES,
       keep=keep_probs(), training=FLAGS,
       time_axis=mostly(st.integers(-2, 1), st.sampled_from(
           [-5, 4, 1.5, True])),
       seed=st.integers(0, 2 ** 16))
def test_locked_dropout(shape, unknown, unknown_rank, dtype, keep, training,
                        time_axis, seed):
    rng = np.random.RandomState(seed)
    value = (_nonzero(rng, shape, dtype) if dtype.is_floating
             else np.ones(shape, dtype.as_numpy_dtype))
    rank = len(shape)
    bad = flag_and_keep_bad(training, keep)
    if not isinstance(time_axis, int) or isinstance(time_axis, bool):
        bad.add("time_axis")
    if not dtype.is_floating or unknown_rank or rank < 2:
        bad.add("x")
    elif not -rank <= time_axis < rank:
        bad.add("time_axis")

    with fresh_session() as session:
        def call():
            x = build(Tensor(value, dtype, None if unknown_rank
                             else static_shape(shape, unknown)))
            y = vd.locked_dropout(x, build(keep), build(training),
                                  time_axis=time_axis, seed=seed)
            assert y.dtype == dtype
            return y

        def check(y):
            if _keep_runs_bad(keep, training):
                expect_run_error("variational_dropout.locked_dropout",
                                 "keep_prob", lambda: session.run(y))
                return
            got = session.run(y)
            assert got.shape == shape
            if not flag_value(training) or keep_prob_value(keep) == 1.0:
                # No dropout, or x * 1 / 1: exact.
                np.testing.assert_array_equal(got, value)
                return
            kept = _check_kept_or_dropped(value, got, keep_prob_value(keep),
                                          dtype)
            axis = time_axis % rank
            if shape[axis]:
                # One mask per example and feature, the same at every step.
                first = np.take(kept, [0], axis=axis)
                np.testing.assert_array_equal(
                    kept, np.broadcast_to(first, kept.shape))

        expect("variational_dropout.locked_dropout", bad, call, check)


@examples(2)
@given(vocab=st.integers(1, 5), depth=st.integers(1, 3),
       params_dtype=DTYPES, params_rank=mostly(st.just(2), st.just(1)),
       shards=st.sampled_from([1, 1, 2]),
       strategy=mostly(st.sampled_from(["mod", "div"]), st.just("shard")),
       ids_shape=shapes(0, 3), ids_dtype=mostly(
           st.sampled_from([tf.int32, tf.int64]),
           st.sampled_from([tf.float32, tf.int16])),
       out_of_range=st.sampled_from([False, False, True]),
       keep=keep_probs(), training=FLAGS, seed=st.integers(0, 2 ** 16))
def test_embedding_dropout(vocab, depth, params_dtype, params_rank, shards,
                           strategy, ids_shape, ids_dtype, out_of_range,
                           keep, training, seed):
    rng = np.random.RandomState(seed)
    table = (_nonzero(rng, (vocab, depth), params_dtype)
             if params_dtype.is_floating
             else np.ones((vocab, depth), params_dtype.as_numpy_dtype))
    ids = random_ids(rng, vocab, ids_shape, out_of_range)
    shards = min(shards, vocab)
    bad = flag_and_keep_bad(training, keep)
    if strategy not in ("mod", "div"):
        bad.add("partition_strategy")
    if not params_dtype.is_floating or params_rank < 2:
        bad.add("params")
    if ids_dtype not in (tf.int32, tf.int64):
        bad.add("ids")

    with fresh_session() as session:
        def call():
            rows = table if params_rank == 2 else table[:, 0]
            if shards == 1:
                params = tf.constant(rows)
            elif strategy == "div":
                half = (vocab + 1) // 2
                params = [tf.constant(rows[:half]), tf.constant(rows[half:])]
            else:
                params = [tf.constant(rows[0::2]), tf.constant(rows[1::2])]
            return vd.embedding_dropout(
                params, build(Tensor(ids, ids_dtype, ids_shape)),
                build(keep), build(training), seed=seed,
                partition_strategy=strategy)

        def check(y):
            names = []
            if out_of_range and ids.size:
                names.append("ids")
            if _keep_runs_bad(keep, training):
                names.append("keep_prob")
            if names:
                with_names = tuple(names)
                expect_run_error("variational_dropout.embedding_dropout",
                                 with_names, lambda: session.run(y))
                return
            got = session.run(y)
            want = table[ids]
            assert got.shape == want.shape
            if not flag_value(training) or keep_prob_value(keep) == 1.0:
                # A lookup (times 1 / 1): exact.
                np.testing.assert_array_equal(got, want)
                return
            kept = _check_kept_or_dropped(want, got, keep_prob_value(keep),
                                          params_dtype)
            # Whole words: every occurrence of an id is kept or dropped
            # together, all of its vector.
            for word in np.unique(ids):
                decisions = kept[ids == word]
                assert decisions.all() or not decisions.any()

        expect("variational_dropout.embedding_dropout", bad, call, check)


MASK_SHAPES = st.sampled_from([(), (1,), (3,), (2, 1), (2, 3), (4,), (3, 2)])


@examples(1)
@given(x_shape=st.sampled_from([(2, 3), (0, 3), (3,), (2, 0)]),
       x_dtype=DTYPES, mask_shape=MASK_SHAPES, keep=keep_probs(),
       seed=st.integers(0, 2 ** 16))
def test_apply_and_scaled_mask(x_shape, x_dtype, mask_shape, keep, seed):
    rng = np.random.RandomState(seed)
    x = (_nonzero(rng, x_shape, x_dtype) if x_dtype.is_floating
         else np.ones(x_shape, x_dtype.as_numpy_dtype))
    mask = rng.randint(0, 2, size=mask_shape).astype(np.float32)
    bad = set()
    if not keep_prob_static_ok(keep):
        bad.add("keep_prob")
    if not x_dtype.is_floating:
        bad.add("x")
    try:
        np.broadcast(x, mask)
    except ValueError:
        bad.update(["mask", "broadcast"])

    with fresh_session() as session:
        def call():
            return vd.apply_mask(tf.constant(x), tf.constant(mask),
                                 build(keep))

        def check(y):
            if _keep_runs_bad(keep, True):
                expect_run_error("variational_dropout.masks", "keep_prob",
                                 lambda: session.run(y))
                return
            _scaled_close(session.run(y), x * mask / keep_prob_value(keep),
                          x_dtype)

        expect("variational_dropout.masks", bad, call, check)


@examples(1)
@given(shape=st.one_of(shapes(0, 3), st.sampled_from(
    [[-1], [2.5], "abc", [None], Tensor([2, 3], tf.int32, (2,)),
     Tensor([2, 3], tf.float32, (2,))])),
       keep=keep_probs(), dtype=DTYPES, seed=st.integers(0, 2 ** 16))
def test_bernoulli_mask(shape, keep, dtype, seed):
    bad = set()
    if not keep_prob_static_ok(keep):
        bad.add("keep_prob")
    if not dtype.is_floating:
        bad.add("dtype")
    if isinstance(shape, Tensor):
        if not shape.dtype.is_integer:
            bad.add("shape")
        want_shape = tuple(shape.value)
    elif isinstance(shape, str) or not all(
            isinstance(d, int) and d >= 0 for d in shape):
        bad.add("shape")
    else:
        want_shape = tuple(shape)

    with fresh_session() as session:
        def call():
            return vd.bernoulli_mask(build(shape), build(keep), dtype=dtype,
                                     seed=seed)

        def check(mask):
            assert mask.dtype == dtype
            if _keep_runs_bad(keep, True):
                expect_run_error("variational_dropout.masks", "keep_prob",
                                 lambda: session.run(mask))
                return
            got = session.run(mask)
            assert got.shape == want_shape
            assert set(np.unique(got)) <= {0, 1}
            if keep_prob_value(keep) == 1.0:
                assert got.all()

        expect("variational_dropout.masks", bad, call, check)


@examples(1)
@given(input_shape=st.sampled_from([[3], [1, 3], [2, 1, 3], [-1], "abc",
                                    [None], []]),
       x_shape=st.sampled_from([(2, 3), (2, 4), (0, 3), (2, 5, 3)]),
       x_dtype=DTYPES, keep=keep_probs(allow_tensor=False),
       training=FLAGS, seed=st.integers(0, 2 ** 16))
def test_variational_dropout_layer(input_shape, x_shape, x_dtype, keep,
                                   training, seed):
    rng = np.random.RandomState(seed)
    x = (_nonzero(rng, x_shape, x_dtype) if x_dtype.is_floating
         else np.ones(x_shape, x_dtype.as_numpy_dtype))
    bad = set()
    if not keep_prob_static_ok(keep, allow_tensor=False):
        bad.add("keep_prob")
    valid_shape = isinstance(input_shape, list) and all(
        isinstance(d, int) and d >= 0 for d in input_shape)
    if not valid_shape:
        bad.add("input_shape")
    if not flag_ok(training):
        bad.add("training")
    if not x_dtype.is_floating:
        bad.add("x")
    elif valid_shape:
        try:
            np.broadcast(x, np.zeros(input_shape))
        except ValueError:
            bad.add("x")

    with fresh_session() as session:
        def call():
            layer = vd.VariationalDropout(input_shape, keep, seed=seed)
            return layer(tf.constant(x), training=build(training))

        def check(y):
            session.run(tf.local_variables_initializer())
            got = session.run(y)
            want_shape = np.broadcast(x, np.zeros(input_shape)).shape
            if not flag_value(training):
                # No dropout: x itself.
                np.testing.assert_array_equal(got, x)
                return
            assert got.shape == want_shape
            _check_kept_or_dropped(np.broadcast_to(x, want_shape), got,
                                   float(keep), x_dtype)

        expect("variational_dropout.VariationalDropout", bad, call, check)
