"""The variational-dropout layers' own options
(`layers.sparse.variational_dropout.layers`): ``threshold`` and ``eps``
set which weights evaluation drops (numpy: theta where
log(sigma^2) - log(theta^2 + eps) is below the threshold), and
``log_sigma2_initializer`` the auxiliary variable's start, in
`FullyConnected` and in `Conv2D` (against tf.nn.conv2d on the numpy
weights). The machinery both techniques share: tests/layers/sparse/."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers.variational_dropout import layers as vd_layers
from support.tolerances import conv2d_atol, matmul_atol
from tf1_awd_sparse.ops.sparse.common import EPSILON, THRESHOLD


def _values(rng, shape):
    """theta and a log(sigma^2) whose log(alpha) spans [-3, 6]."""
    theta = rng.randn(*shape).astype(np.float32)
    log_alpha = rng.uniform(-3.0, 6.0, shape)
    return theta, log_alpha


def _dropped(theta, log_sigma2, threshold, eps):
    log_alpha = log_sigma2.astype(np.float64) - np.log(
        theta.astype(np.float64) ** 2 + eps)
    return theta * (log_alpha < threshold)


@pytest.mark.parametrize("threshold,eps", [(THRESHOLD, EPSILON),
                                           (1.0, EPSILON), (THRESHOLD, 0.5)])
def test_fully_connected_drops_by_its_threshold_and_eps(sess, threshold,
                                                        eps):
    rng = np.random.RandomState(0)
    x = rng.randn(4, 6).astype(np.float32)
    layer = vd_layers.FullyConnected(3, threshold=threshold, eps=eps,
                                     use_bias=False, name="fc")
    out = layer(x, training=False)
    theta, log_alpha = _values(rng, [6, 3])
    # log(sigma^2) built from the layer's own eps, in float32.
    log_sigma2 = (log_alpha + np.log(theta.astype(np.float64) ** 2 + eps)
                  ).astype(np.float32)
    sess.run(tf.global_variables_initializer())
    sess.run([layer.kernel.assign(theta), layer.aux.assign(log_sigma2)])
    want = _dropped(theta, log_sigma2, threshold, eps)
    default = _dropped(theta, log_sigma2, THRESHOLD, EPSILON)
    if (threshold, eps) != (THRESHOLD, EPSILON):
        assert not np.array_equal(want != 0, default != 0)
    np.testing.assert_allclose(sess.run(out), x @ want, rtol=0,
                               atol=matmul_atol(x, want))


def test_conv2d_drops_by_its_threshold(sess):
    rng = np.random.RandomState(1)
    images = rng.randn(2, 5, 5, 2).astype(np.float32)
    layer = vd_layers.Conv2D(3, 3, threshold=1.0, use_bias=False,
                             name="conv")
    out = layer(images, training=False)
    theta, log_alpha = _values(rng, [3, 3, 2, 3])
    log_sigma2 = (log_alpha + np.log(theta.astype(np.float64) ** 2
                                     + EPSILON)).astype(np.float32)
    sess.run(tf.global_variables_initializer())
    sess.run([layer.kernel.assign(theta), layer.aux.assign(log_sigma2)])
    want = _dropped(theta, log_sigma2, 1.0, EPSILON).astype(np.float32)
    assert 0 < np.count_nonzero(want) < want.size
    ref = tf.nn.conv2d(images, want, [1, 1, 1, 1], "VALID")
    got, ref = sess.run([out, ref])
    np.testing.assert_allclose(got, ref, rtol=0,
                               atol=2 * conv2d_atol(images, want))


@pytest.mark.parametrize("make", [
    lambda init: vd_layers.FullyConnected(2, log_sigma2_initializer=init),
    lambda init: vd_layers.Conv2D(2, 1, log_sigma2_initializer=init)])
def test_log_sigma2_starts_where_its_initializer_says(sess, make):
    layer = make(tf.constant_initializer(-4.5))
    layer(tf.zeros([1, 3, 3, 2]) if isinstance(layer, vd_layers.Conv2D)
          else tf.zeros([1, 2]))
    sess.run(tf.global_variables_initializer())
    assert np.all(sess.run(layer.aux) == -4.5)
