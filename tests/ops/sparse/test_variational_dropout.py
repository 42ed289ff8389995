"""Sparse variational dropout's stateless ops
(`ops.sparse.variational_dropout`): the evaluation ops equal the dense
ops on the masked weights, the training ops' noise has the mean and
variance of the local reparameterization, and an input gradient stays
finite in half precision."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common
from sparse_layers.variational_dropout import nn as vd
from support.sparse import (check_eval_outputs, np_log_alpha, random_pair,
                            vd_masked)

EPS = common.EPSILON


def test_vd_eval_ops_equal_dense_ops_on_masked_weights(sess):
    rng = np.random.RandomState(2)
    theta, log_sigma2 = random_pair(rng, [5, 3], log_sigma2_mean=1.)
    theta[0, 0], log_sigma2[0, 0] = 1., 3.  # log_alpha == threshold: dropped
    x = rng.randn(4, 5).astype(np.float32)
    x3 = rng.randn(4, 2, 5).astype(np.float32)
    ctheta, clog = random_pair(rng, [3, 3, 2, 4], log_sigma2_mean=1.)
    ximg = rng.randn(2, 5, 5, 2).astype(np.float32)
    ids32 = np.array([[0, 4], [2, 2]], np.int32)
    masked = vd_masked(theta, log_sigma2)
    assert masked[0, 0] == 0. and 0 < np.count_nonzero(masked) < masked.size
    cmasked = vd_masked(ctheta, clog)
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
    check_eval_outputs(got, x, x3, masked, conv_ref, lookup_ref, ximg,
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
    np.testing.assert_allclose(np_log_alpha(log_sigma2, theta),
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


def test_vd_matmul_train_mean_and_variance(sess):
    # n = 20000 draws of each output: the mean is checked to 5 standard
    # errors, the variance to 6% (its relative standard error is
    # sqrt(2 / n) = 1%).
    tf.set_random_seed(2)
    rng = np.random.RandomState(3)
    theta, log_sigma2 = random_pair(rng, [4, 3], log_sigma2_mean=-1.)
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
    theta, log_sigma2 = random_pair(rng, [3, 2], log_sigma2_mean=-1.)
    n = 8000
    x = np.repeat(rng.randn(1, 1, 3).astype(np.float32), 3, 1)
    out = vd.broadcast_matmul_train(np.repeat(x, n, 0), (theta, log_sigma2))
    assert out.shape.as_list() == [n, 3, 2]
    ctheta, clog = random_pair(rng, [2, 2, 1, 2], log_sigma2_mean=-1.)
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
    theta, log_sigma2 = random_pair(rng, [vocab, dim], log_sigma2_mean=-1.)
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
