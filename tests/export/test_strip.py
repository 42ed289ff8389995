"""`export.strip`: a sparse model as plain dense weights, from a
checkpoint or a live session, with each technique's evaluation options and
pairs given or found by naming; and `write_checkpoint`, the graph-free
checkpoint writer it shares.

The references: numpy formulas of the papers' evaluation weights
(`support.sparse.np_eval_weights`), and plain TF ops (`tf.layers.dense`,
`tf.nn.rnn_cell.LSTMCell`, `tf.nn.embedding_lookup`) restored from the
stripped checkpoints, which must compute what the sparse ones did."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import report, strip, techniques
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.l0_regularization import rnn as l0_rnn
from sparse_layers.variational_dropout import layers as vd_layers
from sparse_layers.variational_dropout import rnn as vd_rnn
from support.references import sigmoid
from support.sparse import embedding_pair, np_eval_weights, randomize_pairs

LAYERS = {"variational_dropout": vd_layers, "l0": l0_layers}
CELLS = {"variational_dropout": vd_rnn, "l0": l0_rnn}
AUX_NAME = {name: techniques.get(name).aux_name for name in techniques.NAMES}


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
        kernel_aux = tf.get_variable(AUX_NAME[technique], kernel.shape)
        bias = tf.get_variable("bias", [4 * units])
    techniques.register_pair(technique, (kernel, kernel_aux))
    cell = CELLS[technique].LSTMCell((kernel, kernel_aux), bias, units,
                                     training=False)
    rnn_out = tf.nn.dynamic_rnn(cell, seq, dtype=tf.float32)[0]
    emb_pair = embedding_pair(technique)
    emb_out = techniques.get(technique).nn.embedding_lookup_eval(emb_pair,
                                                                 ids)
    step = tf.train.get_or_create_global_step()
    # Optimizer slots of the auxiliary variables go with them.
    tf.train.AdamOptimizer().minimize(
        tf.reduce_sum(fc_out) + tf.reduce_sum(rnn_out)
        + tf.reduce_sum(emb_out), step)
    sess.run(tf.global_variables_initializer())
    pairs = techniques.registered_pairs(technique)
    values = randomize_pairs(sess, technique, pairs, rng)
    sess.run([step.assign(7), layer.bias.assign(rng.randn(4)),
              bias.assign(rng.randn(4 * units))])
    want = sess.run({"fc": fc_out, "rnn": rnn_out, "emb": emb_out})
    graph_report = sess.run(report.sparsity_report(summaries=False))
    live = strip.strip_values(sess)
    path = tf.train.Saver().save(sess, str(tmp_path / "sparse" / "model"))

    stripped = strip.strip_checkpoint(path, str(tmp_path / "dense" / "m"))
    reader = tf.train.NewCheckpointReader(stripped)
    names = sorted(reader.get_variable_to_shape_map())
    assert not [n for n in names if AUX_NAME[technique] in n]
    assert "fc/kernel/Adam" in names and "emb/Adam" in names
    assert names == sorted(live)
    for name in names:
        np.testing.assert_array_equal(reader.get_tensor(name), live[name])
    # Thetas become the evaluation weights, the rest is copied unchanged.
    for name, (theta, aux) in values.items():
        _assert_same(technique, reader.get_tensor(name),
                     np_eval_weights(technique, theta, aux)
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


def _pair_checkpoint(folder, rng):
    """A checkpoint of one VD pair (``fc/kernel``, ``fc/log_sigma2``), one
    L0 pair named off the rule (``w``, ``gates``), a plain bias and an
    Adam slot of the VD aux; returns (prefix, {name: array})."""
    values = {
        "fc/kernel": rng.randn(6, 5).astype(np.float32),
        "fc/log_sigma2": rng.uniform(-6., 4., (6, 5)).astype(np.float32),
        "fc/log_sigma2/Adam": rng.randn(6, 5).astype(np.float32),
        "w": rng.randn(4, 3).astype(np.float32),
        "gates": rng.uniform(-4., 2., (4, 3)).astype(np.float32),
        "bias": rng.randn(5).astype(np.float64)}
    return strip.write_checkpoint(values, str(folder / "m")), values


def test_options_and_given_pairs_are_the_numpy_formulas(tmp_path):
    """Non-default threshold, eps, gamma and zeta, against the formulas
    written out here; the L0 pair given, the VD one found by naming."""
    prefix, values = _pair_checkpoint(tmp_path, np.random.RandomState(5))
    threshold, eps, gamma, zeta = 1.0, 1e-4, -0.3, 1.5
    got = strip.strip_values_of_checkpoint(
        prefix, l0_pairs=[("w", "gates")], threshold=threshold, eps=eps,
        gamma=gamma, zeta=zeta)
    theta, log_sigma2 = values["fc/kernel"], values["fc/log_sigma2"]
    log_alpha = log_sigma2 - np.log(theta.astype(np.float64) ** 2 + eps)
    want_vd = theta * (log_alpha < threshold)
    gate = np.clip(sigmoid(values["gates"].astype(np.float64))
                   * (zeta - gamma) + gamma, 0., 1.)
    assert list(got) == ["bias", "fc/kernel", "w"]
    # The default threshold (3) keeps more: the option is used.
    assert (want_vd != 0).sum() < (np_eval_weights(
        "variational_dropout", theta, log_sigma2) != 0).sum()
    np.testing.assert_array_equal(got["fc/kernel"], want_vd)
    np.testing.assert_allclose(got["w"], values["w"] * gate, rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_array_equal(got["bias"], values["bias"])
    assert got["w"].dtype == np.float32 and got["bias"].dtype == np.float64
    # No L0 pair found by naming: without the given list, w is copied.
    default = strip.strip_values_of_checkpoint(prefix)
    assert sorted(default) == ["bias", "fc/kernel", "gates", "w"]
    np.testing.assert_array_equal(default["w"], values["w"])


def test_strip_checkpoint_writes_the_values_with_their_dtypes(tmp_path):
    prefix, _ = _pair_checkpoint(tmp_path / "src", np.random.RandomState(6))
    out = strip.strip_checkpoint(prefix, str(tmp_path / "out" / "dense"),
                                 l0_pairs=[("w", "gates")], threshold=0.5)
    assert out == str(tmp_path / "out" / "dense")
    assert tf.train.latest_checkpoint(str(tmp_path / "out")) == out
    reader = tf.train.NewCheckpointReader(out)
    want = strip.strip_values_of_checkpoint(prefix, l0_pairs=[("w", "gates")],
                                            threshold=0.5)
    assert sorted(reader.get_variable_to_shape_map()) == sorted(want)
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["bias"] == tf.float64 and dtypes["w"] == tf.float32
    for name in want:
        np.testing.assert_array_equal(reader.get_tensor(name), want[name])


def test_a_theta_in_two_pairs_and_a_missing_name_are_named(tmp_path):
    prefix, _ = _pair_checkpoint(tmp_path, np.random.RandomState(7))
    with pytest.raises(ValueError, match="'fc/kernel' is the theta of two"):
        strip.strip_values_of_checkpoint(
            prefix, l0_pairs=[("fc/kernel", "gates")])
    with pytest.raises(ValueError, match="'nothing' is not in checkpoint"):
        strip.strip_checkpoint(prefix, str(tmp_path / "out"),
                               vd_pairs=[("w", "nothing")])


def test_write_checkpoint_casts_to_the_dtypes_given(tmp_path):
    values = {"a": np.arange(6.).reshape(2, 3), "b/c": np.array([1, 2, 3])}
    prefix = strip.write_checkpoint(values, str(tmp_path / "x" / "ckpt"),
                                    dtypes={"a": tf.float16})
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_dtype_map() == {"a": tf.float16,
                                                  "b/c": tf.int64}
    np.testing.assert_array_equal(reader.get_tensor("a"),
                                  values["a"].astype(np.float16))
    np.testing.assert_array_equal(reader.get_tensor("b/c"), values["b/c"])
    # Restorable into plain variables of those names.
    with tf.Graph().as_default(), tf.Session() as session:
        a = tf.get_variable("a", [2, 3], tf.float16)
        tf.train.Saver([a]).restore(session, prefix)
        np.testing.assert_array_equal(session.run(a), values["a"])


@pytest.mark.parametrize("values, dtypes, message", [
    ([("a", np.zeros(2))], None, "values must be a dict"),
    ({1: np.zeros(2)}, None, "values must be a dict"),
    ({"a": np.zeros(2)}, [tf.float32], "dtypes must be a dict")])
def test_write_checkpoint_refuses_what_is_not_a_dict(values, dtypes, message,
                                                     tmp_path):
    with pytest.raises(ValueError, match=message):
        strip.write_checkpoint(values, str(tmp_path / "m"), dtypes)
