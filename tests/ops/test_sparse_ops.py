"""What the two sparse techniques' stateless ops share, against numpy
references: their penalties, random training and deterministic
evaluation, finite gradients to both parameters and named errors on bad
parameter tuples and inputs."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common
from sparse_layers.l0_regularization import nn as l0
from sparse_layers.variational_dropout import nn as vd
from support.references import sigmoid
from support.sparse import np_log_alpha, random_pair

EPS = common.EPSILON


def test_negative_dkl_is_summed_kl_and_l0_norm(sess):
    rng = np.random.RandomState(1)
    theta, log_sigma2 = random_pair(rng, [5, 4])
    log_alpha = rng.uniform(-12, 12, [5, 4]).astype(np.float32)
    k1, k2, k3 = 0.63576, 1.8732, 1.48695

    def np_kl(a):
        return -np.sum(k1 * sigmoid(k2 + k3 * a)
                       - 0.5 * np.log1p(np.exp(-a)) - k1)

    got = sess.run([vd.negative_dkl((theta, log_sigma2)),
                    vd.negative_dkl((theta, log_sigma2), clip_alpha=1.),
                    vd.negative_dkl(log_alpha=log_alpha),
                    l0.l0_norm(log_alpha)])
    ref_la = np_log_alpha(log_sigma2.astype(np.float64), theta)
    np.testing.assert_allclose(got[0], np_kl(ref_la), rtol=1e-5)
    np.testing.assert_allclose(got[1], np_kl(np.clip(ref_la, -1, 1)),
                               rtol=1e-5)
    np.testing.assert_allclose(got[2], np_kl(log_alpha), rtol=1e-5)
    assert min(got[:3]) >= 0.
    np.testing.assert_allclose(
        got[3], np.sum(sigmoid(log_alpha - common.BETA
                               * np.log(-common.GAMMA / common.ZETA))),
        rtol=1e-5)
    with pytest.raises(ValueError, match="neither"):
        vd.negative_dkl()


def test_train_ops_are_random_eval_ops_are_not(sess):
    rng = np.random.RandomState(6)
    theta, aux = random_pair(rng, [4, 3], log_sigma2_mean=0.)
    x = rng.randn(2, 4).astype(np.float32)
    ops = [vd.matmul_train(x, (theta, aux)), l0.matmul_train(x, (theta, aux)),
           vd.matmul_eval(x, (theta, aux)), l0.matmul_eval(x, (theta, aux))]
    first, second = sess.run(ops), sess.run(ops)
    assert not np.allclose(first[0], second[0])
    assert not np.allclose(first[1], second[1])
    np.testing.assert_array_equal(first[2], second[2])
    np.testing.assert_array_equal(first[3], second[3])


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
