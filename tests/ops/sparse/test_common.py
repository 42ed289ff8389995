"""The sparse techniques' shared math (`ops.sparse.common`): log(alpha)
and log(sigma^2) from each other, the hard-concrete gate's mean, sample
and non-zero probability, and the standard normal draws, against numpy
and closed forms."""
import numpy as np
import tensorflow.compat.v1 as tf

from sparse_layers import common
from support.references import sigmoid
from support.sparse import np_log_alpha, np_mean_gate, random_pair
from support.tolerances import U32, transcendental_rtol

EPS = common.EPSILON


def test_log_alpha_log_sigma2_and_mean_gate_match_numpy(sess):
    rng = np.random.RandomState(0)
    theta, log_sigma2 = random_pair(rng, [6, 7], log_sigma2_mean=0.)
    theta[0, :3] = 0.
    log_sigma2[1, :] = [-40, -9, -8.5, 0, 8.5, 9, 40]
    la_clip = common.compute_log_alpha(log_sigma2, theta)
    la_none = common.compute_log_alpha(log_sigma2, theta, value_limit=None)
    la_zero = common.compute_log_alpha(log_sigma2, theta, value_limit=0.)
    back = common.compute_log_sigma2(la_none, theta)
    mean = common.hard_concrete_mean(la_none)
    p_nonzero = common.hard_concrete_nonzero_probability(la_none)
    got = sess.run([la_clip, la_none, la_zero, back, mean, p_nonzero])
    ref = np_log_alpha(log_sigma2.astype(np.float64), theta)
    # float32 log_sigma2 - log(theta^2 + eps): each term rounded (the
    # square, the sum, the log a few ulp) and the difference, relative to
    # the terms' size (up to 40 and |log 1e-8| = 18.4): a few 2**-24 of
    # that; back = log_alpha + log(theta^2 + eps) adds as many again.
    terms = np.abs(log_sigma2) + np.abs(np.log(theta.astype(np.float64) ** 2
                                               + EPS))
    log_atol = float(terms.max()) * (4 * U32 + transcendental_rtol())
    np.testing.assert_allclose(got[0], np.clip(ref, -8, 8), rtol=0,
                               atol=log_atol)
    np.testing.assert_allclose(got[1], ref, rtol=0, atol=log_atol)
    np.testing.assert_array_equal(got[2], np.zeros_like(ref))
    np.testing.assert_allclose(got[3], log_sigma2, rtol=0, atol=2 * log_atol)
    # sigmoid (Lipschitz 1/4, a few ulp) of log_alpha off by log_atol,
    # then an affine map and a clip to [0, 1]: 1e-6 was below that bound.
    gate_atol = 0.25 * log_atol * (common.ZETA - common.GAMMA) + \
        transcendental_rtol(ops=2)
    np.testing.assert_allclose(got[4], np_mean_gate(ref), atol=gate_atol)
    np.testing.assert_allclose(
        got[5], sigmoid(ref - common.BETA * np.log(0.1 / 1.1)),
        atol=gate_atol)
    # The numpy backend (used by the checkpoint report) gives the same, in
    # float64: a sigmoid (a few ulp) and an affine map of values <= 1.1.
    np.testing.assert_allclose(
        common.hard_concrete_mean(ref, math=common.NUMPY_MATH),
        np_mean_gate(ref), rtol=0, atol=transcendental_rtol(np.float64, 4))


def test_hard_concrete_sample_statistics(sess):
    # Closed forms with L ~ Logistic(0, 1), s = sigmoid((L + a) / beta):
    # P(z = 0) = sigmoid(beta * logit(-g / (z - g)) - a),
    # P(z = 1) = sigmoid(a - beta * logit((1 - g) / (z - g))),
    # E[z] by midpoint integration over u. N = 200000 draws per value give
    # a standard error <= 0.0012; the tolerance 0.006 is 5 of them.
    tf.set_random_seed(1)
    beta, gamma, zeta = common.BETA, common.GAMMA, common.ZETA
    log_alpha = np.array([-2., 0., 1.5], np.float32)
    n = 200000
    variable = tf.Variable(np.tile(log_alpha, [n, 1]))  # ref dtype works
    sess.run(variable.initializer)
    z = sess.run(common.hard_concrete_sample(variable))
    assert z.min() >= 0. and z.max() <= 1.

    def logit(p):
        return np.log(p / (1. - p))

    p0 = sigmoid(beta * logit(-gamma / (zeta - gamma)) - log_alpha)
    p1 = sigmoid(log_alpha - beta * logit((1 - gamma) / (zeta - gamma)))
    u = (np.arange(1000000) + .5) / 1000000.
    s = sigmoid((np.log(u)[:, None] - np.log1p(-u)[:, None]
                 + log_alpha) / beta)
    mean = np.clip(s * (zeta - gamma) + gamma, 0, 1).mean(0)
    np.testing.assert_allclose((z == 0).mean(0), p0, atol=0.006)
    np.testing.assert_allclose((z == 1).mean(0), p1, atol=0.006)
    np.testing.assert_allclose(z.mean(0), mean, atol=0.006)


def test_standard_normal_statistics(sess):
    # 400000 draws (odd-sized pieces exercise the half-split): moments and
    # P(|z| < 1), P(|z| < 2) within 5 standard errors of N(0, 1) values.
    tf.set_random_seed(7)
    n = 400000
    pieces = [common.standard_normal([79999]),
              common.standard_normal([3, 5, 5333]),
              common.standard_normal(tf.constant([n - 79999 - 79995]))]
    assert pieces[1].shape.as_list() == [3, 5, 5333]
    z = sess.run(tf.concat([tf.reshape(p, [-1]) for p in pieces], 0))
    assert z.shape == (n,) and np.all(np.isfinite(z))
    se = 1. / np.sqrt(n)
    assert abs(z.mean()) < 5 * se
    assert abs(z.var() - 1.) < 5 * np.sqrt(2.) * se
    assert abs((z ** 4).mean() - 3.) < 5 * np.sqrt(96.) * se
    assert abs((np.abs(z) < 1).mean() - 0.682689) < 5 * 0.466 * se
    assert abs((np.abs(z) < 2).mean() - 0.954500) < 5 * 0.209 * se
    # Two halves (cos and sin parts) are uncorrelated.
    half = z[:79999]
    assert abs(np.corrcoef(half[:len(half) // 2],
                           half[len(half) // 2:2 * (len(half) // 2)])[0, 1]) \
        < 5 * np.sqrt(2. / len(half))
