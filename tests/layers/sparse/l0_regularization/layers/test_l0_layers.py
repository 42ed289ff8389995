"""The L0 layers' own options (`layers.sparse.l0_regularization.layers`):
``gamma`` and ``zeta`` stretch the gate evaluation scales the weights by
(numpy: theta clip(sigmoid(log_alpha) (zeta - gamma) + gamma, 0, 1)), and
``log_alpha_initializer`` sets the gates' start, in `FullyConnected` and
in `Conv2D` (against tf.nn.conv2d on the numpy weights). The machinery
both techniques share: tests/layers/sparse/."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers.l0_regularization import layers as l0_layers
from support.references import sigmoid
from support.tolerances import (U32, conv2d_atol, matmul_atol,
                                transcendental_rtol)
from tf1_awd_sparse.ops.sparse.common import GAMMA, ZETA


def _gated(theta, log_alpha, gamma, zeta):
    gate = np.clip(sigmoid(log_alpha) * (zeta - gamma) + gamma, 0.0, 1.0)
    return theta * gate


def _gate_atol(theta, gamma, zeta):
    """TF's float32 sigmoid against numpy's float64 one (a few ulp of a
    value <= 1), stretched by zeta - gamma, times |theta|."""
    return float(np.abs(theta).max()) * (
        (zeta - gamma) * transcendental_rtol(ops=2) + 6 * U32)


@pytest.mark.parametrize("gamma,zeta", [(GAMMA, ZETA), (-0.4, 1.3)])
def test_fully_connected_gates_by_its_stretch(sess, gamma, zeta):
    rng = np.random.RandomState(0)
    x = rng.randn(4, 6).astype(np.float32)
    layer = l0_layers.FullyConnected(3, gamma=gamma, zeta=zeta,
                                     use_bias=False, name="fc")
    out = layer(x, training=False)
    theta = rng.randn(6, 3).astype(np.float32)
    log_alpha = rng.uniform(-4.0, 4.0, [6, 3]).astype(np.float32)
    sess.run(tf.global_variables_initializer())
    sess.run([layer.kernel.assign(theta), layer.aux.assign(log_alpha)])
    want = _gated(theta, log_alpha, gamma, zeta)
    if (gamma, zeta) != (GAMMA, ZETA):
        assert not np.allclose(want, _gated(theta, log_alpha, GAMMA, ZETA))
    atol = matmul_atol(x, want) + _gate_atol(theta, gamma, zeta) * float(
        np.abs(x).sum(-1).max())
    np.testing.assert_allclose(sess.run(out), x @ want, rtol=0, atol=atol)


def test_conv2d_gates_by_its_stretch(sess):
    rng = np.random.RandomState(1)
    images = rng.randn(2, 5, 5, 2).astype(np.float32)
    layer = l0_layers.Conv2D(3, 3, gamma=-0.4, zeta=1.3, use_bias=False,
                             name="conv")
    out = layer(images, training=False)
    theta = rng.randn(3, 3, 2, 3).astype(np.float32)
    log_alpha = rng.uniform(-4.0, 4.0, [3, 3, 2, 3]).astype(np.float32)
    sess.run(tf.global_variables_initializer())
    sess.run([layer.kernel.assign(theta), layer.aux.assign(log_alpha)])
    want = _gated(theta, log_alpha, -0.4, 1.3).astype(np.float32)
    ref = tf.nn.conv2d(images, want, [1, 1, 1, 1], "VALID")
    got, ref = sess.run([out, ref])
    atol = 2 * conv2d_atol(images, want) + _gate_atol(
        theta, -0.4, 1.3) * 18 * float(np.abs(images).max())
    np.testing.assert_allclose(got, ref, rtol=0, atol=atol)


@pytest.mark.parametrize("conv", [False, True])
def test_log_alpha_starts_where_its_initializer_says(sess, conv):
    init = tf.constant_initializer(0.75)
    if conv:
        layer = l0_layers.Conv2D(2, 1, log_alpha_initializer=init)
        layer(tf.zeros([1, 3, 3, 2]))
    else:
        layer = l0_layers.FullyConnected(2, log_alpha_initializer=init)
        layer(tf.zeros([1, 2]))
    sess.run(tf.global_variables_initializer())
    assert np.all(sess.run(layer.aux) == 0.75)
