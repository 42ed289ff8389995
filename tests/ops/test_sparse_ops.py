"""Stateless sparse ops against numpy references, statistics and errors."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common, layer_utils
from sparse_layers.l0_regularization import nn as l0
from sparse_layers.variational_dropout import nn as vd
from support.tolerances import (U32, conv2d_atol, matmul_atol,
                                transcendental_rtol)
from support.versions import needs_xla_compile, xla_compile
from tf1_awd_sparse.base import control_flow

EPS = common.EPSILON


def _np_sigmoid(x):
    return 1. / (1. + np.exp(-x))


def _np_log_alpha(log_sigma2, theta):
    return log_sigma2 - np.log(theta ** 2 + EPS)


def _np_mean_gate(log_alpha):
    return np.clip(_np_sigmoid(log_alpha) * (common.ZETA - common.GAMMA)
                   + common.GAMMA, 0., 1.)


def _params(rng, shape, log_sigma2_mean=-2.):
    theta = rng.randn(*shape).astype(np.float32)
    aux = (log_sigma2_mean + 2. * rng.randn(*shape)).astype(np.float32)
    return theta, aux


def _vd_masked(theta, log_sigma2, threshold=common.THRESHOLD):
    return theta * (_np_log_alpha(log_sigma2, theta) < threshold)


# ---------------------------------------------------------------- common math
def test_log_alpha_log_sigma2_and_mean_gate_match_numpy(sess):
    rng = np.random.RandomState(0)
    theta, log_sigma2 = _params(rng, [6, 7], log_sigma2_mean=0.)
    theta[0, :3] = 0.
    log_sigma2[1, :] = [-40, -9, -8.5, 0, 8.5, 9, 40]
    la_clip = common.compute_log_alpha(log_sigma2, theta)
    la_none = common.compute_log_alpha(log_sigma2, theta, value_limit=None)
    la_zero = common.compute_log_alpha(log_sigma2, theta, value_limit=0.)
    back = common.compute_log_sigma2(la_none, theta)
    mean = common.hard_concrete_mean(la_none)
    p_nonzero = common.hard_concrete_nonzero_probability(la_none)
    got = sess.run([la_clip, la_none, la_zero, back, mean, p_nonzero])
    ref = _np_log_alpha(log_sigma2.astype(np.float64), theta)
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
    np.testing.assert_allclose(got[4], _np_mean_gate(ref), atol=gate_atol)
    np.testing.assert_allclose(
        got[5], _np_sigmoid(ref - common.BETA * np.log(0.1 / 1.1)),
        atol=gate_atol)
    # The numpy backend (used by the checkpoint report) gives the same, in
    # float64: a sigmoid (a few ulp) and an affine map of values <= 1.1.
    np.testing.assert_allclose(
        common.hard_concrete_mean(ref, math=common.NUMPY_MATH),
        _np_mean_gate(ref), rtol=0, atol=transcendental_rtol(np.float64, 4))


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

    p0 = _np_sigmoid(beta * logit(-gamma / (zeta - gamma)) - log_alpha)
    p1 = _np_sigmoid(log_alpha - beta * logit((1 - gamma) / (zeta - gamma)))
    u = (np.arange(1000000) + .5) / 1000000.
    s = _np_sigmoid((np.log(u)[:, None] - np.log1p(-u)[:, None]
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


def test_negative_dkl_is_summed_kl_and_l0_norm(sess):
    rng = np.random.RandomState(1)
    theta, log_sigma2 = _params(rng, [5, 4])
    log_alpha = rng.uniform(-12, 12, [5, 4]).astype(np.float32)
    k1, k2, k3 = 0.63576, 1.8732, 1.48695

    def np_kl(a):
        return -np.sum(k1 * _np_sigmoid(k2 + k3 * a)
                       - 0.5 * np.log1p(np.exp(-a)) - k1)

    got = sess.run([vd.negative_dkl((theta, log_sigma2)),
                    vd.negative_dkl((theta, log_sigma2), clip_alpha=1.),
                    vd.negative_dkl(log_alpha=log_alpha),
                    l0.l0_norm(log_alpha)])
    ref_la = _np_log_alpha(log_sigma2.astype(np.float64), theta)
    np.testing.assert_allclose(got[0], np_kl(ref_la), rtol=1e-5)
    np.testing.assert_allclose(got[1], np_kl(np.clip(ref_la, -1, 1)),
                               rtol=1e-5)
    np.testing.assert_allclose(got[2], np_kl(log_alpha), rtol=1e-5)
    assert min(got[:3]) >= 0.
    np.testing.assert_allclose(
        got[3], np.sum(_np_sigmoid(log_alpha - common.BETA
                                   * np.log(-common.GAMMA / common.ZETA))),
        rtol=1e-5)
    with pytest.raises(ValueError, match="neither"):
        vd.negative_dkl()


def _check_eval_outputs(got, x, x3, weights, conv_ref, lookup_ref, images,
                        filters, weight_atol=0.0):
    """got = [matmul, transposed matmul, broadcast, conv NHWC, conv NCHW,
    lookup int32, lookup int64] against numpy / tf.nn references.
    ``weight_atol``: how far the op's weights may be from ``weights`` /
    ``filters`` (0: the same by construction)."""
    # The matmuls against the exact product (float64 numpy) of the
    # reference weights: a float32 sum of the products in whatever order
    # the kernel picks, plus the weights' own difference.
    x64, x3_64 = x.astype(np.float64), x3.astype(np.float64)
    atol = matmul_atol(x, weights) + weight_atol * max(
        np.abs(x).sum(-1).max(), np.abs(x3).sum(-1).max())
    np.testing.assert_allclose(got[0], x64 @ weights, rtol=0, atol=atol)
    np.testing.assert_allclose(got[1], x64 @ weights, rtol=0, atol=atol)
    np.testing.assert_allclose(got[2], np.tensordot(x3_64, weights, 1),
                               rtol=0, atol=atol)
    # The convolutions against tf.nn.conv2d's, both float32 (the NCHW one
    # may sum in another order): twice one's bound.
    taps = int(np.prod(np.shape(filters)[:-1]))
    atol = 2 * conv2d_atol(images, filters) + weight_atol * taps * float(
        np.abs(images).max())
    np.testing.assert_allclose(got[3], conv_ref, rtol=0, atol=atol)
    np.testing.assert_allclose(got[4], conv_ref.transpose(0, 3, 1, 2),
                               rtol=0, atol=atol)
    # Lookups copy the rows of the weights (exact where weight_atol = 0).
    np.testing.assert_allclose(got[5], lookup_ref, rtol=0, atol=weight_atol)
    np.testing.assert_allclose(got[6], lookup_ref, rtol=0, atol=weight_atol)


# ------------------------------------------------------------ VD eval ops
def test_vd_eval_ops_equal_dense_ops_on_masked_weights(sess):
    rng = np.random.RandomState(2)
    theta, log_sigma2 = _params(rng, [5, 3], log_sigma2_mean=1.)
    theta[0, 0], log_sigma2[0, 0] = 1., 3.  # log_alpha == threshold: dropped
    x = rng.randn(4, 5).astype(np.float32)
    x3 = rng.randn(4, 2, 5).astype(np.float32)
    ctheta, clog = _params(rng, [3, 3, 2, 4], log_sigma2_mean=1.)
    ximg = rng.randn(2, 5, 5, 2).astype(np.float32)
    ids32 = np.array([[0, 4], [2, 2]], np.int32)
    masked = _vd_masked(theta, log_sigma2)
    assert masked[0, 0] == 0. and 0 < np.count_nonzero(masked) < masked.size
    cmasked = _vd_masked(ctheta, clog)
    params = (theta, log_sigma2)
    ops = [
        vd.matmul_eval(x, params),
        vd.matmul_eval(x.T, (theta.T, log_sigma2.T), transpose_a=True,
                       transpose_b=True),
        vd.broadcast_matmul_eval(x3, params),
        vd.conv2d_eval(ximg, (ctheta, clog), [1, 2, 2, 1], "SAME"),
        vd.conv2d_eval(ximg.transpose(0, 3, 1, 2), (ctheta, clog),
                       [1, 1, 2, 2], "SAME", data_format="NCHW"),
        vd.embedding_lookup_eval(params, ids32),
        vd.embedding_lookup_eval(params, ids32.astype(np.int64)),
    ]
    conv_ref = tf.nn.conv2d(ximg, cmasked, [1, 2, 2, 1], "SAME")
    lookup_ref = tf.nn.embedding_lookup(masked, ids32)
    got, conv_ref, lookup_ref = sess.run([ops, conv_ref, lookup_ref])
    # theta times a 0/1 mask on both sides: the same weights exactly.
    _check_eval_outputs(got, x, x3, masked, conv_ref, lookup_ref, ximg,
                        cmasked)
    assert ops[2].shape.as_list() == [4, 2, 3]
    # Eval is deterministic.
    np.testing.assert_array_equal(sess.run(ops[0]), sess.run(ops[0]))


def test_vd_eval_drops_weights_from_log_alpha_3(sess):
    """Sparse VD's evaluation keeps a weight while its unclipped log(alpha)
    is below 3.0 (alpha = 20, a dropout rate of 95 %), checked against the
    number itself rather than ``common.THRESHOLD``, on both sides of it
    and of the neighbouring integers."""
    log_alpha = np.array([-1.0, 1.9, 2.1, 2.5, 2.9, 2.99, 3.01, 3.1, 3.5,
                          4.1, 9.0])
    kept = log_alpha < 3.0
    assert kept.tolist() == [True] * 6 + [False] * 5
    rng = np.random.RandomState(8)
    theta = (rng.uniform(0.3, 2.0, [len(log_alpha), 2])
             * rng.choice([-1.0, 1.0], [len(log_alpha), 2]))
    log_sigma2 = log_alpha[:, None] + np.log(theta ** 2 + EPS)
    theta, log_sigma2 = theta.astype(np.float32), log_sigma2.astype(np.float32)
    # float32 keeps every log(alpha) well on its side of 3 (the nearest is
    # 0.01 away; the difference of two float32 terms of size <= 13 is
    # within a few 2**-24 of that: 1e-5 is far below 0.01 and above it).
    np.testing.assert_allclose(_np_log_alpha(log_sigma2, theta),
                               np.repeat(log_alpha[:, None], 2, 1),
                               atol=1e-5)
    want = theta * kept[:, None]
    params = (theta, log_sigma2)
    rows = np.arange(len(log_alpha), dtype=np.int32)
    got = sess.run([vd.eval_weights(params),
                    vd.matmul_eval(np.eye(len(log_alpha), dtype=np.float32),
                                   params),
                    vd.embedding_lookup_eval(params, rows)])
    got.append(common.vd_eval_weights(theta, log_sigma2,
                                      math=common.NUMPY_MATH))
    for name, value in zip(["eval_weights", "matmul_eval",
                            "embedding_lookup_eval", "vd_eval_weights"], got):
        np.testing.assert_array_equal(value != 0, want != 0, err_msg=name)
        # theta times a 0/1 mask (an identity matmul adds exact zeros to
        # one exact product; a lookup copies): the same floats.
        np.testing.assert_array_equal(value, want, err_msg=name)


# ----------------------------------------------------------- VD train ops
def test_vd_matmul_train_mean_and_variance(sess):
    # n = 20000 draws of each output: the mean is checked to 5 standard
    # errors, the variance to 6% (its relative standard error is
    # sqrt(2 / n) = 1%).
    tf.set_random_seed(2)
    rng = np.random.RandomState(3)
    theta, log_sigma2 = _params(rng, [4, 3], log_sigma2_mean=-1.)
    x = rng.randn(1, 4).astype(np.float32)
    n = 20000
    xs = np.repeat(x, n, 0)
    outs = sess.run([vd.matmul_train(xs, (theta, log_sigma2)),
                     vd.matmul_train(xs, (theta, log_sigma2), clip_alpha=0.),
                     vd.matmul_train(xs.T, (theta.T, log_sigma2.T),
                                     transpose_a=True, transpose_b=True)])
    sig2 = np.exp(log_sigma2.astype(np.float64))
    clipped_sig2 = theta.astype(np.float64) ** 2 + EPS  # log_alpha == 0
    for out, var in zip(outs, [sig2, clipped_sig2, sig2]):
        ref_var = (x.astype(np.float64) ** 2 @ var + EPS)[0]
        se = np.sqrt(ref_var / n)
        assert np.all(np.abs(out.mean(0) - (x @ theta)[0]) < 5 * se)
        np.testing.assert_allclose(out.var(0), ref_var, rtol=0.06)
    assert not np.allclose(outs[0][0], outs[0][1])  # fresh noise per row


def test_vd_broadcast_and_conv_train_statistics(sess):
    # Noise is shared across the middle axis: identical middle rows give
    # identical outputs. Mean/variance over n = 8000 draws as above.
    tf.set_random_seed(3)
    rng = np.random.RandomState(4)
    theta, log_sigma2 = _params(rng, [3, 2], log_sigma2_mean=-1.)
    n = 8000
    x = np.repeat(rng.randn(1, 1, 3).astype(np.float32), 3, 1)
    out = vd.broadcast_matmul_train(np.repeat(x, n, 0), (theta, log_sigma2))
    assert out.shape.as_list() == [n, 3, 2]
    ctheta, clog = _params(rng, [2, 2, 1, 2], log_sigma2_mean=-1.)
    img = rng.randn(1, 3, 3, 1).astype(np.float32)
    conv = vd.conv2d_train(np.repeat(img, n, 0), (ctheta, clog),
                           [1, 1, 1, 1], "VALID")
    conv_mu = tf.nn.conv2d(img, ctheta, [1, 1, 1, 1], "VALID")
    conv_var = tf.nn.conv2d(img ** 2, np.exp(clog), [1, 1, 1, 1],
                            "VALID") + EPS
    out, conv, conv_mu, conv_var = sess.run([out, conv, conv_mu, conv_var])
    np.testing.assert_array_equal(out[:, 0], out[:, 2])
    ref_var = x[0, 0] ** 2 @ np.exp(log_sigma2) + EPS
    se = np.sqrt(ref_var / n)
    assert np.all(np.abs(out[:, 0].mean(0) - x[0, 0] @ theta) < 5 * se)
    np.testing.assert_allclose(out[:, 0].var(0), ref_var, rtol=0.1)
    se = np.sqrt(conv_var[0] / n)
    assert np.all(np.abs(conv.mean(0) - conv_mu[0]) < 5 * se)
    np.testing.assert_allclose(conv.var(0), conv_var[0], rtol=0.1)


def test_vd_embedding_train_gathers_before_sampling(sess):
    tf.set_random_seed(4)
    rng = np.random.RandomState(5)
    vocab, dim, n = 50, 3, 10000
    theta, log_sigma2 = _params(rng, [vocab, dim], log_sigma2_mean=-1.)
    ids = np.full([n, 2], 7, np.int64)
    ids[:, 1] = 11
    out = vd.embedding_lookup_train((theta, log_sigma2), ids, clip_alpha=8.)
    noise_ops = [op for op in tf.get_default_graph().get_operations()
                 if op.type.startswith("Random")]
    assert len(noise_ops) == 1
    # The noise is drawn for the looked-up rows, not for the vocabulary:
    # one uniform pair per two normals.
    noise_shape = sess.run(noise_ops[0].inputs[0])
    np.testing.assert_array_equal(noise_shape, [2, n * 2 * dim // 2])
    got = sess.run(out)
    for col, row in enumerate([7, 11]):
        ls2 = np.clip(log_sigma2[row] - np.log(theta[row] ** 2 + EPS), -8, 8) \
            + np.log(theta[row] ** 2 + EPS)
        var = np.exp(ls2) + EPS
        assert np.all(np.abs(got[:, col].mean(0) - theta[row])
                      < 5 * np.sqrt(var / n))
        np.testing.assert_allclose(got[:, col].var(0), var, rtol=0.08)


def test_train_ops_are_random_eval_ops_are_not(sess):
    rng = np.random.RandomState(6)
    theta, aux = _params(rng, [4, 3], log_sigma2_mean=0.)
    x = rng.randn(2, 4).astype(np.float32)
    ops = [vd.matmul_train(x, (theta, aux)), l0.matmul_train(x, (theta, aux)),
           vd.matmul_eval(x, (theta, aux)), l0.matmul_eval(x, (theta, aux))]
    first, second = sess.run(ops), sess.run(ops)
    assert not np.allclose(first[0], second[0])
    assert not np.allclose(first[1], second[1])
    np.testing.assert_array_equal(first[2], second[2])
    np.testing.assert_array_equal(first[3], second[3])


# ------------------------------------------------------------------ L0 ops
def test_l0_eval_ops_equal_dense_ops_on_mean_gated_weights(sess):
    rng = np.random.RandomState(7)
    theta = rng.randn(5, 3).astype(np.float32)
    log_alpha = rng.uniform(-4, 4, [5, 3]).astype(np.float32)
    gated = theta * _np_mean_gate(log_alpha)
    # Some gates are exactly 0 or 1, others scale the weight.
    gates = _np_mean_gate(log_alpha)
    assert (gates == 0).any() and (gates == 1).any()
    assert ((gates > 0) & (gates < 1)).any()
    ctheta = rng.randn(3, 3, 2, 4).astype(np.float32)
    clog = rng.uniform(-4, 4, [3, 3, 2, 4]).astype(np.float32)
    x = rng.randn(4, 5).astype(np.float32)
    x3 = rng.randn(4, 2, 5).astype(np.float32)
    img = rng.randn(2, 5, 5, 2).astype(np.float32)
    ids = np.array([[0, 4], [2, 2]], np.int64)
    params = (theta, log_alpha)
    ops = [l0.matmul_eval(x, params),
           l0.matmul_eval(x, (theta.T, log_alpha.T), transpose_b=True),
           l0.broadcast_matmul_eval(x3, params),
           l0.conv2d_eval(img, (ctheta, clog), [1, 1, 1, 1], "VALID"),
           l0.conv2d_eval(img.transpose(0, 3, 1, 2), (ctheta, clog),
                          [1, 1, 1, 1], "VALID", data_format="NCHW"),
           l0.embedding_lookup_eval(params, ids),
           l0.embedding_lookup_eval(params, ids.astype(np.int32))]
    refs = [tf.nn.conv2d(img, ctheta * _np_mean_gate(clog), [1, 1, 1, 1],
                         "VALID"), tf.nn.embedding_lookup(gated, ids)]
    got, (conv_ref, lookup_ref) = sess.run([ops, refs])
    # The gates: TF's sigmoid against numpy's (each a few ulp of s <= 1),
    # then s (zeta - gamma) + gamma, absolute roundings of size <= 1.1
    # (relative to a gate near 0 they are large: 4e-6 seen on TF 1.13.1),
    # and the product with theta.
    gate_atol = (common.ZETA - common.GAMMA) * transcendental_rtol(ops=2) \
        + 6 * U32
    _check_eval_outputs(got, x, x3, gated, conv_ref, lookup_ref, img,
                        ctheta * _np_mean_gate(clog),
                        weight_atol=gate_atol * max(np.abs(theta).max(),
                                                    np.abs(ctheta).max()))


def test_l0_train_gates_shared_across_batch_and_per_lookup(sess):
    tf.set_random_seed(5)
    rng = np.random.RandomState(8)
    theta = rng.randn(3, 4).astype(np.float32) + 3.
    log_alpha = np.zeros([3, 4], np.float32)  # gates well inside (0, 1)
    eye = np.eye(3, dtype=np.float32)
    # x = [I; I]: both halves read the same sampled weights theta * z.
    w = l0.matmul_train(np.concatenate([eye, eye]), (theta, log_alpha))
    w3 = l0.broadcast_matmul_train(np.stack([eye, eye], 1),
                                   (theta, log_alpha))
    img = np.zeros([2, 1, 1, 3], np.float32)
    img[:, 0, 0, :] = 1.
    conv = l0.conv2d_train(img, (theta[None, None], log_alpha[None, None]),
                           [1, 1, 1, 1], "VALID")
    emb = l0.embedding_lookup_train((theta, log_alpha),
                                    np.zeros([400], np.int32))
    w, w3, conv, emb = sess.run([w, w3, conv, emb])
    np.testing.assert_array_equal(w[:3], w[3:])
    np.testing.assert_array_equal(w3[:, 0], w3[:, 1])
    np.testing.assert_array_equal(conv[0], conv[1])
    gates = w[:3] / theta
    assert np.all((gates >= 0) & (gates <= 1 + 1e-6))
    # Per looked-up element: rows of the same id carry different gates,
    # whose mean approaches E[z] = 0.5 at log_alpha = 0 (symmetric);
    # 1600 gates, standard error < 0.0125, tolerance 0.05.
    emb_gates = emb / theta[0]
    assert len(np.unique(emb_gates[:, 0])) > 100
    assert abs(emb_gates.mean() - 0.5) < 0.05


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("extreme", [True, False])
def test_gradients_reach_both_parameters_and_are_finite(sess, extreme):
    # Extreme: log_alpha = +-50 and theta = 0 must give finite gradients
    # (saturated gates legitimately give zero ones); moderate values must
    # give non-zero gradients to both parameters.
    tf.set_random_seed(6)
    if extreme:
        theta = np.array([[0., 1.], [-2., 0.], [0.5, 3.]], np.float32)
        log_alpha = np.array([[50., -50.], [-50., 50.], [0., 50.]],
                             np.float32)
    else:
        rng = np.random.RandomState(11)
        theta = rng.randn(3, 2).astype(np.float32)
        log_alpha = rng.uniform(-1, 1, [3, 2]).astype(np.float32)
    log_sigma2 = log_alpha + np.log(theta ** 2 + EPS).astype(np.float32)
    t = tf.Variable(theta)
    s2 = tf.Variable(log_sigma2)
    la = tf.Variable(log_alpha)
    x = tf.constant(np.random.RandomState(9).randn(4, 3), tf.float32)
    img = tf.reshape(x[:, :3], [1, 2, 2, 3])
    k4 = (tf.reshape(t, [1, 1, 3, 2]), tf.reshape(s2, [1, 1, 3, 2]))
    k4l0 = (tf.reshape(t, [1, 1, 3, 2]), tf.reshape(la, [1, 1, 3, 2]))
    ids = tf.constant([0, 2, 2])
    losses = {
        "vd_matmul": vd.matmul_train(x, (t, s2)),
        "vd_matmul_clip": vd.matmul_train(x, (t, s2), clip_alpha=8.),
        "vd_broadcast": vd.broadcast_matmul_train(x[:, None], (t, s2)),
        "vd_conv": vd.conv2d_train(img, k4, [1, 1, 1, 1], "SAME"),
        "vd_embedding": vd.embedding_lookup_train((t, s2), ids),
        "vd_kl": vd.negative_dkl((t, s2)),
        "l0_matmul": l0.matmul_train(x, (t, la)),
        "l0_broadcast": l0.broadcast_matmul_train(x[:, None], (t, la)),
        "l0_conv": l0.conv2d_train(img, k4l0, [1, 1, 1, 1], "SAME"),
        "l0_embedding": l0.embedding_lookup_train((t, la), ids),
        "l0_norm": l0.l0_norm(la),
    }
    grads = {}
    for key, out in losses.items():
        aux = la if key.startswith("l0") else s2
        grads[key] = tf.gradients(tf.reduce_sum(out), [t, aux])
        if key == "l0_norm":
            # The L0 norm has no theta; check its log_alpha gradient twice.
            grads[key] = grads[key][1:] * 2
        else:
            assert None not in grads[key], key
            # Embedding gradients are IndexedSlices; densify for the check.
            grads[key] = [tf.convert_to_tensor(g) for g in grads[key]]
    sess.run(tf.global_variables_initializer())
    for key, (g_theta, g_aux) in sess.run(grads).items():
        assert np.all(np.isfinite(g_aux)), key
        assert np.all(np.isfinite(g_theta)), key
        if not extreme:
            assert np.any(g_aux != 0.) and np.any(g_theta != 0.), key


# ------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("dtype", [tf.float16, tf.float32])
def test_vd_matmul_train_input_gradient_in_half_precision(sess, dtype):
    # d/dx of sum(x theta + sqrt(x^2 sigma^2 + eps) n) is theta summed plus
    # n x sigma^2 / std: finite and small for zero and tiny inputs, though
    # with sigma^2 = e^8 its factor sigma^2 / std overflows float16 (the
    # inputs are fed, so that no graph optimization folds x = 0 away).
    rng = np.random.RandomState(5)
    theta = rng.randn(3, 2)
    log_sigma2 = np.full((3, 2), 8.0)
    noise = rng.randn(2, 2)
    x_value = np.array([[0.0, 0.0, 0.0], [1e-3, 0.0, -2e-3]])
    x = tf.placeholder(dtype, [2, 3])
    y = vd.matmul_train(x, (tf.constant(theta, dtype),
                            tf.constant(log_sigma2, dtype)),
                        noise=tf.constant(noise, dtype))
    grad = sess.run(tf.gradients(tf.reduce_sum(y), x)[0], {x: x_value})
    eps = common.dtype_eps(EPS, dtype)
    std = np.sqrt(x_value ** 2 @ np.exp(log_sigma2) + eps)
    want = (theta.sum(1)[None]
            + x_value * ((noise / std) @ np.exp(log_sigma2).T))
    assert np.all(np.isfinite(grad))
    # float16: 3 significant digits of terms up to |want| ~ 10.
    np.testing.assert_allclose(grad, want, rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("bad", [
    "one", "three", "mismatch", "not_a_tuple"])
def test_bad_parameter_tuples_raise_runtime_error(bad):
    x = tf.zeros([2, 4])
    theta = tf.zeros([4, 3])
    params = {"one": (theta,), "three": (theta, theta, theta),
              "mismatch": (theta, tf.zeros([3, 4])),
              "not_a_tuple": theta}[bad]
    ops = [lambda: vd.matmul_train(x, params),
           lambda: vd.matmul_eval(x, params),
           lambda: vd.embedding_lookup_train(params, [0]),
           lambda: l0.matmul_train(x, params),
           lambda: l0.matmul_eval(x, params),
           lambda: l0.broadcast_matmul_eval(x, params),
           lambda: vd.negative_dkl(params)]
    for op in ops:
        with pytest.raises(RuntimeError) as info:
            op()
        assert "(4, 3)" in str(info.value)  # the shapes are named
        if bad == "mismatch":
            assert "(3, 4)" in str(info.value)


def test_other_bad_inputs_name_the_problem():
    theta = tf.zeros([4, 3])
    with pytest.raises(RuntimeError, match="rank-4"):
        vd.conv2d_eval(tf.zeros([1, 2, 2, 4]), (theta, theta), [1] * 4, "SAME")
    with pytest.raises(RuntimeError, match="rank-2"):
        l0.broadcast_matmul_train(tf.zeros([1, 2, 4]),
                                  (tf.zeros([1, 4, 3]),) * 2)
    with pytest.raises(ValueError, match="rank >= 2"):
        vd.broadcast_matmul_train(tf.zeros([4]), (theta, theta))
    with pytest.raises(ValueError, match="data_format"):
        l0.conv2d_eval(tf.zeros([1, 2, 2, 4]), (tf.zeros([1, 1, 4, 3]),) * 2,
                       [1] * 4, "SAME", data_format="HWCN")
    with pytest.raises(TypeError, match="int32 or int64"):
        vd.embedding_lookup_eval((theta, theta), tf.zeros([2]))


# ------------------------------------------------------------ layer_utils
def test_a_patched_in_xla_context_reaches_its_callers(sess, monkeypatch):
    """check_ids and gather look in_xla_context up on base.control_flow
    when they run, so one patch there switches both to their XLA path."""
    from tf1_awd_sparse.base import checks
    monkeypatch.setattr(control_flow, "in_xla_context", lambda: True)
    clamped = checks.check_ids(tf.constant([5, -1, 1]), 3)
    one_hot = layer_utils.gather(np.eye(3, dtype=np.float32), [2, 0])
    assert one_hot.op.type == "Reshape"
    np.testing.assert_array_equal(sess.run(clamped), [2, 0, 1])


@needs_xla_compile
def test_gather_one_hot_path_matches_tf_gather(sess):
    # xla_compile (tests/support/versions.py) is the public way into an XLA
    # context on every version: contrib's on 1.13, tf.xla.experimental's
    # from 1.15 on.
    params = np.random.RandomState(10).randn(6, 2, 3).astype(np.float32)
    ids = np.array([[5, 0], [2, 2]], np.int64)
    plain = layer_utils.gather(params, ids)
    built = []

    def computation():
        built.append(control_flow.in_xla_context())
        out = layer_utils.gather(params, ids.astype(np.int32))
        built.append(out)
        return out

    (compiled,) = xla_compile(computation)
    assert not control_flow.in_xla_context()
    in_xla, one_hot = built
    assert in_xla
    assert one_hot.op.type == "Reshape"
    assert one_hot.shape.as_list() == [2, 2, 2, 3]
    plain, compiled = sess.run([plain, compiled])
    np.testing.assert_array_equal(plain, params[ids])
    # A one-hot matmul: one product by 1.0 plus products by 0.0, exact in
    # any order.
    np.testing.assert_array_equal(compiled, params[ids])
