"""Collection-driven losses and sparsity reports against numpy."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common, losses, report, techniques
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.l0_regularization import nn as l0_nn
from sparse_layers.variational_dropout import layers as vd_layers
from sparse_layers.variational_dropout import nn as vd_nn

EPS = common.EPSILON


def _sigmoid(x):
    return 1. / (1. + np.exp(-x))


def _np_kl(theta, log_sigma2):
    a = log_sigma2 - np.log(theta ** 2 + EPS)
    k1, k2, k3 = 0.63576, 1.8732, 1.48695
    return -np.sum(k1 * _sigmoid(k2 + k3 * a) - 0.5 * np.log1p(np.exp(-a))
                   - k1)


def _np_l0(log_alpha):
    return np.sum(_sigmoid(log_alpha - common.BETA
                           * np.log(-common.GAMMA / common.ZETA)))


def _build_model(sess, rng):
    """Two VD layers, one L0 layer and a hand-made L0 pair (as a cell
    user would register); returns {name: (theta, aux) numpy values}."""
    x = tf.zeros([2, 4, 4, 2])
    vd_layers.Conv2D(3, 2, name="vd_conv")(x)
    vd_layers.FullyConnected(5, name="vd_fc")(tf.zeros([2, 6]))
    l0_layers.FullyConnected(3, name="l0_fc")(tf.zeros([2, 6]))
    with tf.variable_scope("cell"):
        pair = (tf.get_variable("w", [7, 8]),
                tf.get_variable("w_log_alpha", [7, 8]))
    techniques.register_pair("l0", pair)
    techniques.register_pair("l0", pair)  # no double count
    sess.run(tf.global_variables_initializer())
    values = {}
    for technique, aux_range in [("variational_dropout", (-3., 6.)),
                                 ("l0", (-4., 2.))]:
        for theta, aux in techniques.registered_pairs(technique):
            value = (rng.randn(*theta.shape.as_list()).astype(np.float32),
                     rng.uniform(*aux_range, size=aux.shape.as_list())
                     .astype(np.float32))
            sess.run([theta.assign(value[0]), aux.assign(value[1])])
            values[theta.op.name] = value
    return values


def test_kl_and_l0_losses_with_ramps_and_summaries(sess):
    values = _build_model(sess, np.random.RandomState(0))
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


def _np_zero_fractions(values):
    fractions = {}
    for name, (theta, aux) in values.items():
        if name.startswith("vd"):
            zero = aux - np.log(theta ** 2 + EPS) >= common.THRESHOLD
        else:
            zero = np.clip(_sigmoid(aux) * 1.2 - 0.1, 0, 1) == 0
        fractions[name] = zero
    return fractions


def test_sparsity_report_tensors_and_checkpoint_agree_with_numpy(
        sess, tmp_path):
    values = _build_model(sess, np.random.RandomState(1))
    masks = _np_zero_fractions(values)
    expected = {report._layer_name(k): m.mean() for k, m in masks.items()}
    expected_global = (sum(m.sum() for m in masks.values())
                       / float(sum(m.size for m in masks.values())))
    assert 0.1 < expected_global < 0.9
    tensors = report.sparsity_report()
    got = sess.run(tensors)
    assert list(got["layers"]) == ["vd_conv", "vd_fc", "l0_fc", "cell/w"]
    for layer, fraction in got["layers"].items():
        np.testing.assert_allclose(fraction, expected[layer], rtol=1e-6)
    np.testing.assert_allclose(got["global"], expected_global, rtol=1e-6)
    tags = [s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)]
    assert "sparsity/global" in tags and "sparsity/vd_fc" in tags
    # The report counts exactly the weights the eval ops zero out.
    theta, log_sigma2 = techniques.registered_pairs("variational_dropout")[1]
    eval_w = sess.run(vd_nn.eval_weights((theta, log_sigma2)))
    np.testing.assert_allclose((eval_w == 0).mean(), got["layers"]["vd_fc"])

    path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    auto = report.checkpoint_sparsity_report(path)
    # The hand-made pair follows the `<name>_<aux>` rule: found by naming.
    assert auto["layers"] == pytest.approx(got["layers"], rel=1e-6)
    names = report.collection_pair_names()
    explicit = report.checkpoint_sparsity_report(
        str(tmp_path), vd_pairs=names["vd"], l0_pairs=names["l0"])
    assert explicit["layers"] == pytest.approx(got["layers"], rel=1e-6)
    assert explicit["global"] == pytest.approx(got["global"], rel=1e-6)
    for layer, fraction in auto["layers"].items():
        assert fraction == pytest.approx(expected[layer], rel=1e-6)
    text = report.format_report(explicit)
    assert text.splitlines()[-1].startswith("global")
    with pytest.raises(ValueError, match="not in checkpoint"):
        report.checkpoint_sparsity_report(path, vd_pairs=[("a", "b")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="without a checkpoint"):
        report.checkpoint_sparsity_report(str(empty))


def test_report_on_a_truncated_data_file_names_the_file(sess, tmp_path):
    """The index is intact, the values are cut short: the reader opens,
    reading a value fails (TF 1.x: OutOfRangeError, 2.x: IndexError)."""
    vd_layers.FullyConnected(50, name="vd_fc")(tf.zeros([2, 60]))
    sess.run(tf.global_variables_initializer())
    path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    data_file = path + ".data-00000-of-00001"
    assert report.checkpoint_sparsity_report(path)["layers"]   # readable
    with open(data_file, "r+b") as handle:
        handle.truncate(os.path.getsize(data_file) // 2)
    with pytest.raises(ValueError) as error:
        report.checkpoint_sparsity_report(path)
    message = str(error.value)
    print(message)
    assert "checkpoint_path" in message and "truncated" in message
    assert data_file in message


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
