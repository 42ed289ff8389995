"""L0 regularization's stateless ops (`ops.sparse.l0_regularization`):
the evaluation ops equal the dense ops on the mean-gated weights, and the
training ops share a gate sample across the batch and draw one per
looked-up row."""
import numpy as np
import tensorflow.compat.v1 as tf

from sparse_layers import common
from sparse_layers.l0_regularization import nn as l0
from support.sparse import check_eval_outputs, np_mean_gate
from support.tolerances import U32, transcendental_rtol


def test_l0_eval_ops_equal_dense_ops_on_mean_gated_weights(sess):
    rng = np.random.RandomState(7)
    theta = rng.randn(5, 3).astype(np.float32)
    log_alpha = rng.uniform(-4, 4, [5, 3]).astype(np.float32)
    gated = theta * np_mean_gate(log_alpha)
    # Some gates are exactly 0 or 1, others scale the weight.
    gates = np_mean_gate(log_alpha)
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
    refs = [tf.nn.conv2d(img, ctheta * np_mean_gate(clog), [1, 1, 1, 1],
                         "VALID"), tf.nn.embedding_lookup(gated, ids)]
    got, (conv_ref, lookup_ref) = sess.run([ops, refs])
    # The gates: TF's sigmoid against numpy's (each a few ulp of s <= 1),
    # then s (zeta - gamma) + gamma, absolute roundings of size <= 1.1
    # (relative to a gate near 0 they are large: 4e-6 seen on TF 1.13.1),
    # and the product with theta.
    gate_atol = (common.ZETA - common.GAMMA) * transcendental_rtol(ops=2) \
        + 6 * U32
    check_eval_outputs(got, x, x3, gated, conv_ref, lookup_ref, img,
                       ctheta * np_mean_gate(clog),
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
