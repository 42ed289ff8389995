"""The collection-driven losses (`layers.sparse.losses`: the KL and L0
penalties, their ramps and summaries, what their collections may hold)
against numpy."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common, losses, techniques
from sparse_layers.l0_regularization import nn as l0_nn
from sparse_layers.variational_dropout import nn as vd_nn
from support.references import sigmoid
from support.sparse import registered_sparse_model

EPS = common.EPSILON


def _np_kl(theta, log_sigma2):
    a = log_sigma2 - np.log(theta ** 2 + EPS)
    k1, k2, k3 = 0.63576, 1.8732, 1.48695
    return -np.sum(k1 * sigmoid(k2 + k3 * a) - 0.5 * np.log1p(np.exp(-a))
                   - k1)


def _np_l0(log_alpha):
    return np.sum(sigmoid(log_alpha - common.BETA
                          * np.log(-common.GAMMA / common.ZETA)))


def test_kl_and_l0_losses_with_ramps_and_summaries(sess):
    values = registered_sparse_model(sess, np.random.RandomState(0))
    step = tf.train.get_or_create_global_step()
    kl = losses.kl_loss(weight=0.5, begin_step=10, end_step=20)
    l0 = losses.l0_loss(weight=2., begin_step=10, end_step=10)
    kl_sum = sum(_np_kl(*values[k]) for k in ("vd_conv/kernel",
                                              "vd_fc/kernel"))
    l0_sum = sum(_np_l0(values[k][1]) for k in ("l0_fc/kernel", "cell/w"))
    for at, kl_weight, l0_weight in [(5, 0., 0.), (10, 0., 2.),
                                     (15, 0.25, 2.), (30, 0.5, 2.)]:
        sess.run(step.assign(at))
        got_kl, got_l0 = sess.run([kl, l0])
        np.testing.assert_allclose(got_kl, kl_weight * kl_sum, rtol=1e-4)
        np.testing.assert_allclose(got_l0, l0_weight * l0_sum, rtol=1e-4)
    tags = [s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)]
    for tag in ("kl_loss/weight", "kl_loss/value", "l0_loss/weight",
                "l0_loss/value"):
        assert tag in tags
    # The same sums as the stateless penalties.
    direct = sess.run(vd_nn.negative_dkl(
        techniques.registered_pairs("variational_dropout")[0])
        + l0_nn.l0_norm(techniques.registered_pairs("l0")[0][1]))
    np.testing.assert_allclose(direct, _np_kl(*values["vd_conv/kernel"])
                               + _np_l0(values["l0_fc/kernel"][1]),
                               rtol=1e-4)


def test_loss_edge_cases(sess):
    # Without registered pairs only an explicit opt-in gives a zero loss.
    assert sess.run(losses.kl_loss(weight=3., allow_empty=True)) == 0.
    with pytest.raises(ValueError, match="global step"):
        losses.l0_loss(begin_step=0, end_step=100, allow_empty=True)
    with pytest.raises(ValueError, match="end_step"):
        losses.ramp_weight(1., begin_step=5, end_step=2,
                           global_step=tf.constant(0))
    with pytest.raises(ValueError, match="weight"):
        losses.ramp_weight(-1.)


def test_kl_loss_refuses_a_bare_tensor_in_its_collection(sess):
    """A tensor put in the collection with tf.add_to_collection: a named
    error, not a TypeError from the JSON decoder."""
    theta = tf.get_variable("w", [3, 4])
    tf.add_to_collection(common.VD_COLLECTION, theta)
    with pytest.raises(ValueError, match="register_pair") as error:
        losses.kl_loss()
    print(error.value)
    assert common.VD_COLLECTION in str(error.value)
    assert theta.name in str(error.value)


def test_l0_loss_refuses_a_three_tuple_in_its_collection(sess):
    """It computed a loss from the tuple's second entry."""
    theta = tf.get_variable("w", [3, 4])
    aux = tf.get_variable("w_log_alpha", [3, 4])
    tf.add_to_collection(common.L0_COLLECTION, (theta, aux, aux))
    with pytest.raises(ValueError, match="register_pair") as error:
        losses.l0_loss()
    print(error.value)
    assert common.L0_COLLECTION in str(error.value)


def test_a_two_tuple_added_by_older_code_still_counts(sess):
    theta = tf.get_variable("w", [3, 4])
    aux = tf.get_variable("w_log_alpha", [3, 4])
    tf.add_to_collection(common.L0_COLLECTION, (theta, aux))
    sess.run(tf.global_variables_initializer())
    got = sess.run(losses.l0_loss(summaries=False))
    np.testing.assert_allclose(got, _np_l0(sess.run(aux)), rtol=1e-5)
