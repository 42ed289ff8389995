"""The sparsity report (`layers.sparse.report`) of the registered pairs,
as tensors and read from a checkpoint, against numpy; a damaged
checkpoint's data file named in its error."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common, report, techniques
from sparse_layers.variational_dropout import layers as vd_layers
from sparse_layers.variational_dropout import nn as vd_nn
from support.references import sigmoid
from support.sparse import registered_sparse_model

EPS = common.EPSILON


def _np_zero_fractions(values):
    fractions = {}
    for name, (theta, aux) in values.items():
        if name.startswith("vd"):
            zero = aux - np.log(theta ** 2 + EPS) >= common.THRESHOLD
        else:
            zero = np.clip(sigmoid(aux) * 1.2 - 0.1, 0, 1) == 0
        fractions[name] = zero
    return fractions


def test_sparsity_report_tensors_and_checkpoint_agree_with_numpy(
        sess, tmp_path):
    values = registered_sparse_model(sess, np.random.RandomState(1))
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
