"""The technique registry and the pairs it registers: MetaGraph round trip,
checkpoint naming, losses without pairs, the training default and strip.

References are numpy formulas of the papers' math and plain TF ops
(`tf.layers.dense`, `tf.nn.rnn_cell.LSTMCell`, `tf.nn.embedding_lookup`)
restored from stripped checkpoints."""
import logging

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from tensorflow.python.ops import resource_variable_ops

from sparse_layers import common, losses, report, strip, techniques
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.l0_regularization import rnn as l0_rnn
from sparse_layers.variational_dropout import layers as vd_layers
from sparse_layers.variational_dropout import rnn as vd_rnn
from support.references import sigmoid
from support.versions import ANY_VARIABLE
from support.tolerances import U32

LAYERS = {"variational_dropout": vd_layers, "l0": l0_layers}
CELLS = {"variational_dropout": vd_rnn, "l0": l0_rnn}
AUX = {"variational_dropout": "log_sigma2", "l0": "log_alpha"}
# Ranges of the auxiliary values that zero part of the weights.
AUX_RANGES = {"variational_dropout": (-3., 6.), "l0": (-4., 2.)}
LOSSES = {"variational_dropout": losses.kl_loss, "l0": losses.l0_loss}


def _np_eval_weights(technique, theta, aux):
    """Numpy reference of the evaluation weights (the papers' formulas)."""
    if technique == "variational_dropout":
        log_alpha = aux - np.log(theta.astype(np.float64) ** 2 + 1e-8)
        return theta * (log_alpha < 3.0)
    return theta * np.clip(sigmoid(aux) * 1.2 - 0.1, 0., 1.)


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


def _embedding_pair(technique, name="emb", shape=(7, 5), use_resource=True):
    """An embedding-style pair `<name>` / `<name>_<aux>`, registered."""
    pair = tuple(tf.get_variable(n, shape, use_resource=use_resource)
                 for n in (name, "%s_%s" % (name, AUX[technique])))
    techniques.register_pair(technique, pair)
    return pair


def _randomize(sess, technique, pairs, rng):
    """Random theta and aux values that zero part of the weights."""
    values = {}
    for theta, aux in pairs:
        value = (rng.randn(*theta.shape.as_list()).astype(np.float32),
                 rng.uniform(*AUX_RANGES[technique],
                             size=aux.shape.as_list()).astype(np.float32))
        sess.run([theta.assign(value[0]), aux.assign(value[1])])
        values[theta.op.name] = value
    return values


def _build_sparse_graph(technique):
    """A layer-style pair (FullyConnected 'fc') and an embedding pair."""
    layer = LAYERS[technique].FullyConnected(4, name="fc")
    layer(tf.zeros([2, 6]), training=False)
    _embedding_pair(technique)
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
    values = _randomize(sess, technique, pairs, np.random.RandomState(0))
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
        values = _randomize(sess, technique,
                            techniques.registered_pairs(technique), rng)
        for name, (theta, aux) in values.items():
            zero = _np_eval_weights(technique, theta, aux) == 0
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
    _embedding_pair(other)
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


# --- strip ----------------------------------------------------------------

def _assert_same(technique, got, want):
    """VD evaluation weights are theta times 0 or 1: bit-exact; L0 gates
    go through numpy's float64 sigmoid: float32 rounding apart."""
    if technique == "variational_dropout":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("technique", techniques.NAMES)
def test_strip_gives_plain_tf_layers_the_sparse_eval_outputs(sess, technique,
                                                             tmp_path):
    rng = np.random.RandomState(3)
    units, depth, steps, batch = 3, 4, 5, 2
    x = rng.randn(batch, 6).astype(np.float32)
    seq = rng.randn(batch, steps, depth).astype(np.float32)
    ids = np.array([[0, 3, 6], [2, 2, 5]])
    # A FullyConnected layer, an LSTM cell on variables named as a plain
    # LSTMCell under dynamic_rnn names its own, and an embedding.
    layer = LAYERS[technique].FullyConnected(4, name="fc")
    fc_out = layer(x, training=False)
    with tf.variable_scope("rnn/lstm_cell"):
        kernel = tf.get_variable("kernel", [depth + units, 4 * units])
        kernel_aux = tf.get_variable(AUX[technique], kernel.shape)
        bias = tf.get_variable("bias", [4 * units])
    techniques.register_pair(technique, (kernel, kernel_aux))
    cell = CELLS[technique].LSTMCell((kernel, kernel_aux), bias, units,
                                     training=False)
    rnn_out = tf.nn.dynamic_rnn(cell, seq, dtype=tf.float32)[0]
    emb_pair = _embedding_pair(technique)
    emb_out = techniques.get(technique).nn.embedding_lookup_eval(emb_pair,
                                                                 ids)
    step = tf.train.get_or_create_global_step()
    # Optimizer slots of the auxiliary variables go with them.
    tf.train.AdamOptimizer().minimize(
        tf.reduce_sum(fc_out) + tf.reduce_sum(rnn_out)
        + tf.reduce_sum(emb_out), step)
    sess.run(tf.global_variables_initializer())
    pairs = techniques.registered_pairs(technique)
    values = _randomize(sess, technique, pairs, rng)
    sess.run([step.assign(7), layer.bias.assign(rng.randn(4)),
              bias.assign(rng.randn(4 * units))])
    want = sess.run({"fc": fc_out, "rnn": rnn_out, "emb": emb_out})
    graph_report = sess.run(report.sparsity_report(summaries=False))
    live = strip.strip_values(sess)
    path = tf.train.Saver().save(sess, str(tmp_path / "sparse" / "model"))

    stripped = strip.strip_checkpoint(path, str(tmp_path / "dense" / "m"))
    reader = tf.train.NewCheckpointReader(stripped)
    names = sorted(reader.get_variable_to_shape_map())
    assert not [n for n in names if AUX[technique] in n]
    assert "fc/kernel/Adam" in names and "emb/Adam" in names
    assert names == sorted(live)
    for name in names:
        np.testing.assert_array_equal(reader.get_tensor(name), live[name])
    # Thetas become the evaluation weights, the rest is copied unchanged.
    for name, (theta, aux) in values.items():
        _assert_same(technique, reader.get_tensor(name),
                     _np_eval_weights(technique, theta, aux)
                     .astype(np.float32))
        layer_name = name[:-len("/kernel")] if name.endswith("/kernel") \
            else name
        # The report's fraction is float32: compare counts.
        assert np.sum(reader.get_tensor(name) == 0) == round(
            graph_report["layers"][layer_name] * theta.size)
    for name in ("fc/bias", "rnn/lstm_cell/bias", "global_step",
                 "fc/kernel/Adam"):
        np.testing.assert_array_equal(reader.get_tensor(name),
                                      sess.run(name + ":0"))

    with tf.Graph().as_default(), tf.Session() as dense:
        plain = {
            "fc": tf.layers.dense(tf.constant(x), 4, name="fc"),
            "rnn": tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(units), seq,
                                     dtype=tf.float32)[0],
            "emb": tf.nn.embedding_lookup(tf.get_variable("emb", [7, 5]),
                                          ids)}
        tf.train.Saver().restore(dense, tf.train.latest_checkpoint(
            str(tmp_path / "dense")))
        got = dense.run(plain)
    for key in want:
        _assert_same(technique, got[key], want[key])


@pytest.mark.parametrize("kind", ["interactive", "monitored"])
def test_strip_values_takes_any_session(kind, tmp_path):
    """InteractiveSession and MonitoredSession give what tf.Session gives
    (strip_values only needs the session's graph and run)."""
    with tf.Graph().as_default() as graph:
        layer = LAYERS["l0"].FullyConnected(3, name="fc")
        layer(tf.ones([2, 4]), training=False)
        init = tf.global_variables_initializer()
        with tf.Session() as plain:
            plain.run(init)
            path = tf.train.Saver().save(plain, str(tmp_path / "m"))
            want = strip.strip_values(plain)
        saver = tf.train.Saver()
        if kind == "interactive":
            session = tf.InteractiveSession(graph=graph)
            saver.restore(session, path)
        else:
            session = tf.train.MonitoredSession(
                tf.train.ChiefSessionCreator(
                    scaffold=tf.train.Scaffold(saver=saver),
                    checkpoint_filename_with_path=path))
        try:
            got = strip.strip_values(session)
        finally:
            session.close()
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    with pytest.raises(ValueError, match="session must be a session"):
        strip.strip_values(graph)
