"""The technique registry and the pairs it registers: MetaGraph round trip,
checkpoint naming, losses without pairs and the training default (strip:
tests/export/test_strip.py).

References are numpy formulas of the papers' math."""
import logging

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from tensorflow.python.ops import resource_variable_ops

from sparse_layers import common, losses, report, techniques
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.l0_regularization import rnn as l0_rnn
from sparse_layers.variational_dropout import layers as vd_layers
from sparse_layers.variational_dropout import rnn as vd_rnn
from support.references import sigmoid
from support.sparse import embedding_pair, np_eval_weights, randomize_pairs
from support.versions import ANY_VARIABLE
from support.tolerances import U32

LAYERS = {"variational_dropout": vd_layers, "l0": l0_layers}
CELLS = {"variational_dropout": vd_rnn, "l0": l0_rnn}
AUX = {"variational_dropout": "log_sigma2", "l0": "log_alpha"}
LOSSES = {"variational_dropout": losses.kl_loss, "l0": losses.l0_loss}


def _np_kl(theta, log_sigma2):
    a = log_sigma2 - np.log(theta.astype(np.float64) ** 2 + 1e-8)
    k1, k2, k3 = 0.63576, 1.8732, 1.48695
    return -np.sum(k1 * sigmoid(k2 + k3 * a)
                   - 0.5 * np.log1p(np.exp(-a)) - k1)


def _np_l0(log_alpha):
    return np.sum(sigmoid(log_alpha - (2. / 3.) * np.log(0.1 / 1.1)))


def _np_penalty(technique, theta, aux):
    if technique == "variational_dropout":
        return _np_kl(theta, aux)
    return _np_l0(aux)


def _build_sparse_graph(technique):
    """A layer-style pair (FullyConnected 'fc') and an embedding pair."""
    layer = LAYERS[technique].FullyConnected(4, name="fc")
    layer(tf.zeros([2, 6]), training=False)
    embedding_pair(technique)
    return layer


class _Records(logging.Handler):
    """Collects the messages of the 'tensorflow' logger at WARN and up."""

    def __init__(self):
        super(_Records, self).__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def __enter__(self):
        self._verbosity = tf.logging.get_verbosity()
        tf.logging.set_verbosity(tf.logging.WARN)
        logging.getLogger("tensorflow").addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("tensorflow").removeHandler(self)
        tf.logging.set_verbosity(self._verbosity)


# --- the registry ---------------------------------------------------------

def test_get_names_the_choices_and_entries_hold_the_aux_variable():
    for name in techniques.NAMES:
        assert techniques.get(name).aux_name == AUX[name]
        assert techniques.get(techniques.get(name)) is techniques.get(name)
    with pytest.raises(ValueError, match="'variational_dropout', 'l0'.*L0"):
        techniques.get("L0")
    with pytest.raises(ValueError, match="sparsity must be one of"):
        techniques.get("vd", arg_name="sparsity")


def test_default_initializers(sess):
    # Constant -10 (VD) and N(2.197, 0.01) (L0); 20000 draws: mean within
    # 7 standard errors, stddev within 5%.
    vd, l0 = (tf.get_variable(name, [200, 100],
                              initializer=techniques.get(name)
                              .make_initializer())
              for name in ("variational_dropout", "l0"))
    sess.run(tf.global_variables_initializer())
    log_sigma2, log_alpha = sess.run([vd, l0])
    assert np.all(log_sigma2 == -10.)
    assert abs(log_alpha.mean() - 2.197) < 5e-4
    assert abs(log_alpha.std() - 0.01) < 5e-4


@pytest.mark.parametrize("technique", techniques.NAMES)
def test_aux_naming_rule_and_find_pairs(technique):
    entry = techniques.get(technique)
    aux = AUX[technique]
    assert entry.aux_variable_name("a/b/kernel") == "a/b/" + aux
    assert entry.aux_variable_name("lm/embedding") == "lm/embedding_" + aux
    assert entry.aux_variable_name("kernel") == "kernel_" + aux
    names = ["fc/kernel", "fc/" + aux, "fc/bias", "fc/kernel/Adam",
             "fc/%s/Adam" % aux, "emb", "emb_" + aux, "emb/Adam",
             "lonely/kernel", "global_step"]
    assert entry.find_pairs(names) == [("emb", "emb_" + aux),
                                       ("fc/kernel", "fc/" + aux)]


def test_register_pair_once_and_bad_pairs():
    theta, aux = tf.get_variable("w", [3, 2]), tf.get_variable("w_a", [3, 2])
    for _ in range(2):
        techniques.register_pair("l0", (theta, aux))
    assert techniques.registered_pairs("l0") == [(theta, aux)]
    assert techniques.registered_pairs("variational_dropout") == []
    with pytest.raises(ValueError, match="one shape"):
        techniques.register_pair("l0", (theta, tf.zeros([2, 3])))
    with pytest.raises(ValueError, match="2-tuple"):
        techniques.register_pair("l0", (theta, aux, aux))
    with pytest.raises(ValueError, match="2-tuple"):
        techniques.register_pair("l0", (theta, np.zeros([3, 2])))
    hidden = tf.Variable(tf.zeros([3, 2]), collections=[])
    with pytest.raises(ValueError, match="GLOBAL_VARIABLES"):
        techniques.register_pair("l0", (theta, hidden))
    with tf.Graph().as_default():
        other = tf.zeros([3, 2])
    with pytest.raises(ValueError, match="different graphs"):
        techniques.register_pair("l0", (theta, other))
    with pytest.raises(ValueError, match="technique must be one of"):
        techniques.register_pair("vd", (theta, aux))


def test_tensor_pairs_and_legacy_tuples_are_read(sess):
    theta, aux = tf.constant([[1., -2.]]), tf.constant([[5., -9.]])
    techniques.register_pair("variational_dropout", (theta, aux))
    # Code written against the old tuple collections still counts here.
    legacy = (tf.get_variable("old", [2]), tf.get_variable("old_log_alpha",
                                                           [2]))
    tf.add_to_collection(common.L0_COLLECTION, legacy)
    assert techniques.registered_pairs("variational_dropout") == [(theta,
                                                                   aux)]
    assert techniques.registered_pairs("l0") == [legacy]
    fractions = sess.run(report.sparsity_report(summaries=False)["layers"],
                         {legacy[1]: [-9., 9.]})
    # log alpha = 5 - log(1) >= 3: zero; -9 - log(4) < 3: kept.
    assert fractions[theta.op.name] == 0.5
    assert fractions["old"] == 0.5


# --- pairs in a MetaGraph -------------------------------------------------

@pytest.mark.parametrize("technique", techniques.NAMES)
def test_pairs_survive_a_metagraph_and_save_logs_no_warning(sess, technique,
                                                            tmp_path):
    _build_sparse_graph(technique)
    loss = LOSSES[technique](weight=0.5, summaries=False)
    zeros = report.sparsity_report(summaries=False)
    sess.run(tf.global_variables_initializer())
    pairs = techniques.registered_pairs(technique)
    values = randomize_pairs(sess, technique, pairs, np.random.RandomState(0))
    before_loss, before_report = sess.run([loss, zeros])
    expected = 0.5 * sum(_np_penalty(technique, *v) for v in values.values())
    np.testing.assert_allclose(before_loss, expected, rtol=1e-4)
    with _Records() as records:
        path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    assert not [m for m in records.messages
                if "CollectionDef" in m or "serializing" in m]

    with tf.Graph().as_default() as graph, tf.Session() as other:
        saver = tf.train.import_meta_graph(path + ".meta")
        saver.restore(other, path)
        imported = techniques.registered_pairs(technique)
        assert [(t.name, a.name) for t, a in imported] == [
            (t.name, a.name) for t, a in pairs]
        # Variables, not their read tensors (ANY_VARIABLE: on 2.x a
        # resource variable is no tf.compat.v1.Variable).
        assert all(isinstance(p, ANY_VARIABLE) for pair in imported
                   for p in pair)
        assert not any(isinstance(p, tf.Tensor) for pair in imported
                       for p in pair)
        # The embedding was a resource variable and comes back as one.
        assert isinstance(imported[1][0],
                          resource_variable_ops.ResourceVariable)
        after_loss = other.run(LOSSES[technique](weight=0.5,
                                                 summaries=False))
        after_report = other.run(report.sparsity_report(summaries=False))
        assert graph.get_collection(techniques.get(technique).collection)
    assert after_loss == before_loss
    assert after_report["layers"] == before_report["layers"]
    assert after_report["global"] == before_report["global"]


# --- checkpoint report ----------------------------------------------------

def test_checkpoint_report_covers_every_pair_of_the_graph_report(sess,
                                                                 tmp_path):
    # Both techniques, each with a layer-style and an embedding-style pair.
    rng = np.random.RandomState(1)
    expected = {}
    for technique in techniques.NAMES:
        with tf.variable_scope(technique):
            _build_sparse_graph(technique)
    sess.run(tf.global_variables_initializer())
    for technique in techniques.NAMES:
        values = randomize_pairs(sess, technique,
                            techniques.registered_pairs(technique), rng)
        for name, (theta, aux) in values.items():
            zero = np_eval_weights(technique, theta, aux) == 0
            expected[name[:-len("/kernel")] if name.endswith("/kernel")
                     else name] = zero.mean()
    graph_report = sess.run(report.sparsity_report(summaries=False))
    path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    ckpt_report = report.checkpoint_sparsity_report(path)
    assert sorted(graph_report["layers"]) == sorted(expected) == [
        "l0/emb", "l0/fc", "variational_dropout/emb",
        "variational_dropout/fc"]
    # The same zero counts (exact, even as float32 sums) divided by the
    # size, rounded once in float32 (the graph) or float64: 2 u apart at
    # most (was rel 1e-6, 17 u); a count one off is 1 / size (~3 %) away.
    assert ckpt_report["layers"] == pytest.approx(graph_report["layers"],
                                                  rel=2 * U32)
    assert ckpt_report["layers"] == pytest.approx(expected, rel=2 * U32)
    assert ckpt_report["global"] == pytest.approx(graph_report["global"],
                                                  rel=2 * U32)
    assert 0.05 < ckpt_report["global"] < 0.95


# --- losses without pairs -------------------------------------------------

@pytest.mark.parametrize("technique", techniques.NAMES)
def test_loss_before_the_layers_raises(sess, technique):
    with pytest.raises(ValueError, match="after the sparse layers"):
        LOSSES[technique]()
    assert sess.run(LOSSES[technique](allow_empty=True)) == 0.
    # Pairs of the other technique do not count.
    other = [t for t in techniques.NAMES if t != technique][0]
    embedding_pair(other)
    with pytest.raises(ValueError, match="allow_empty=True"):
        LOSSES[technique]()


# --- the training default -------------------------------------------------

@pytest.mark.parametrize("technique", techniques.NAMES)
def test_layers_and_cells_train_by_default(sess, technique):
    rng = np.random.RandomState(2)
    x = rng.randn(4, 3).astype(np.float32)
    layer = LAYERS[technique].FullyConnected(
        5, name="fc", **{AUX[technique] + "_initializer":
                         tf.constant_initializer(0.)})
    outputs = [layer(x), layer(x, training=None), layer(x, training=True),
               layer(x, training=False)]
    theta = rng.randn(3 + 2, 8).astype(np.float32)
    cell = CELLS[technique].LSTMCell((theta, np.zeros_like(theta)),
                                     np.zeros(8, np.float32), 2)
    rnn_out = tf.nn.dynamic_rnn(cell, rng.randn(4, 3, 3).astype(np.float32),
                                dtype=tf.float32)[0]
    sess.run(tf.global_variables_initializer())
    first, second = sess.run(outputs), sess.run(outputs)
    for i in range(3):  # default, None and True all sample
        assert not np.allclose(first[i], second[i])
    np.testing.assert_array_equal(first[3], second[3])
    assert not np.allclose(sess.run(rnn_out), sess.run(rnn_out))
