"""The AR and TAR penalties against numpy, over full and ragged batches."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.tolerances import gamma
from tf1_awd_sparse.awd_lm.graph import losses


def np_ar(h, alpha, lengths=None):
    if lengths is None:
        return alpha * np.mean(h ** 2)
    vals = np.concatenate([h[b, :n].ravel() for b, n in enumerate(lengths)])
    return alpha * np.mean(vals ** 2)


def np_tar(h, beta, lengths=None):
    if lengths is None:
        return beta * np.mean((h[:, 1:] - h[:, :-1]) ** 2)
    vals = np.concatenate([(h[b, 1:n] - h[b, :n - 1]).ravel()
                           for b, n in enumerate(lengths)])
    return beta * np.mean(vals ** 2)


def test_ar_tar_match_numpy(sess):
    rng = np.random.RandomState(0)
    h = rng.randn(3, 7, 4)
    lengths = np.array([7, 3, 5])
    x = tf.constant(h)
    got = sess.run([
        losses.activation_regularization(x),
        losses.activation_regularization(x, alpha=0.5, lengths=lengths),
        losses.temporal_activation_regularization(x),
        losses.temporal_activation_regularization(x, beta=3.0,
                                                  lengths=lengths)])
    want = [np_ar(h, 2.0), np_ar(h, 0.5, lengths), np_tar(h, 1.0),
            np_tar(h, 3.0, lengths)]
    # float64 means of squares (differences) of h.size = 84 values: sums
    # of non-negative terms in any order, each term 2 roundings.
    np.testing.assert_allclose(got, want, rtol=gamma(3 * h.size, np.float64))


def test_ar_tar_unknown_time_and_bad_rank(sess):
    x = tf.placeholder(tf.float32, [None, None, 2])
    tar = losses.temporal_activation_regularization(x)
    h = np.random.RandomState(1).randn(2, 5, 2).astype(np.float32)
    # float32 graph against the numpy float32 mean of 16 squares.
    assert sess.run(tar, {x: h}) == pytest.approx(np_tar(h, 1.0),
                                                  rel=2 * gamma(3 * 16))
    assert sess.run(tar, {x: h[:, :1]}) == 0.0
    with pytest.raises(ValueError, match="outputs: expected a"):
        losses.activation_regularization(tf.zeros([2, 3]))


def test_ar_tar_lengths_of_another_batch(sess):
    """Static: a ValueError naming lengths (was 'Dimensions must be equal,
    but are 3 and 2 for activation_regularization/mul'); unknown: asserted
    when the graph runs."""
    for penalty in (losses.activation_regularization,
                    losses.temporal_activation_regularization):
        with pytest.raises(ValueError, match=r"^lengths must have shape \[2\]"
                           r" \(the batch of outputs"):
            penalty(tf.zeros([2, 3, 4]), lengths=tf.constant([1, 2, 3]))
        x = tf.placeholder(tf.float32, [None, None, 4])
        lengths = tf.placeholder(tf.int32, [None])
        value = penalty(x, lengths=lengths)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="lengths must have one entry per row of "
                           "outputs"):
            sess.run(value, {x: np.zeros((2, 3, 4)), lengths: [1, 2, 3]})


def test_ar_tar_over_no_entry_are_zero(sess):
    """Zero steps or rows: no activation, no penalty (0, not the NaN of an
    empty mean); a non-empty input still gives numpy's mean."""
    x = tf.placeholder(tf.float32, [None, None, 2])
    ar = losses.activation_regularization(x)
    tar = losses.temporal_activation_regularization(x)
    for shape in ((2, 0, 2), (0, 4, 2)):
        assert sess.run([ar, tar], {x: np.ones(shape)}) == [0.0, 0.0]
    assert sess.run(losses.activation_regularization(
        tf.zeros([2, 0, 3]))) == 0.0
    h = np.random.RandomState(2).randn(2, 4, 2).astype(np.float32)
    assert sess.run(ar, {x: h}) == pytest.approx(np_ar(h, 2.0), rel=1e-5)
