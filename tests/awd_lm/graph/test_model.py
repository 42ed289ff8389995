"""build_lm wiring against a tf.nn.rnn_cell.LSTMCell reference, state carry,
regularization on/off, parameter errors; the weight decay covers the
weights only (issue 10.3): the embedding, each cell's kernel and bias and the
softmax bias, never a sparse technique's log_sigma2 / log_alpha, a
DropConnect mask or a quantization range, checked against numpy on the
variables' values, by name."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.graph.train_op import build_train_op
from support.lm import FLOAT_LOG_PROB_ATOL, PARAMS, make_features
from support.tolerances import float32_sum_rtol
from support.versions import needs_estimator

#: tf.estimator.ModeKeys.TRAIN's value (TF 2.16+ has no tf.estimator;
#: test_mode_keys_are_estimators below checks the values against ModeKeys
#: where it exists).
TRAIN = "train"

def reference_logits(inputs, state=None):
    """Same model from tf.nn.rnn_cell.LSTMCell and the lm/ variables."""
    by_name = {v.op.name: v for v in tf.global_variables()}
    emb, bias = by_name["lm/embedding"], by_name["lm/softmax_bias"]
    x = tf.nn.embedding_lookup(emb, inputs)
    finals = []
    for i, units in enumerate(model.layer_sizes(as_params(PARAMS))):
        cell = tf.nn.rnn_cell.LSTMCell(units, name="ref_%d" % i)
        s0 = state[i] if state else cell.zero_state(tf.shape(inputs)[0],
                                                    tf.float32)
        x, s1 = tf.nn.dynamic_rnn(cell, x, initial_state=s0,
                                  scope="ref_layer_%d" % i)
        finals.append(s1)
    logits = tf.einsum("btd,vd->btv", x, emb) + bias
    return logits, finals


def copy_cell_weights(sess):
    ops = []
    for i in range(PARAMS["num_layers"]):
        for name in ("kernel", "bias"):
            src = [v for v in tf.global_variables()
                   if v.name == "lm/layer_%d/lstm_%d/%s:0" % (i, i, name)]
            dst = [v for v in tf.global_variables()
                   if v.name == "ref_layer_%d/ref_%d/%s:0" % (i, i, name)]
            assert len(src) == 1 and len(dst) == 1, (name, i)
            ops.append(tf.assign(dst[0], src[0]))
    sess.run(ops)


@pytest.mark.parametrize("kind", ["plain", "awd"])
def test_eval_matches_lstmcell_reference(sess, kind):
    tf.set_random_seed(1)
    features, ids = make_features()
    training = tf.placeholder_with_default(False, [])
    out = model.build_lm(features, training, dict(PARAMS, model=kind))
    ref, _ = reference_logits(features["inputs"])
    sess.run(tf.global_variables_initializer())
    copy_cell_weights(sess)
    logits, ref_logits, xent, ar, tar = sess.run(
        [out.logits, ref, out.xent, out.ar, out.tar])
    # Two float32 graphs of the same LSTM (the library's cell, LSTMCell),
    # each summing in its own order: FLOAT_LOG_PROB_ATOL's derivation (its
    # per-step dot products and decoder; the logits are the log-probs
    # before the log-softmax). It was atol 1e-6 + rtol 1e-5, under the
    # ~2e-5 lstm_atol allows for one layer of these 5 steps.
    np.testing.assert_allclose(logits, ref_logits, rtol=0,
                               atol=FLOAT_LOG_PROB_ATOL)
    # Cross-entropy from the same logits in numpy (float64): TF's float32
    # log-softmax of 11 logits and mean of 15 tokens, a few ulp of values
    # <~ 3 each plus gamma(15): ~1e-6 relative; 1e-5 allows ten times it.
    logp = ref_logits - np.log(np.exp(ref_logits).sum(-1, keepdims=True))
    want = -np.mean(np.take_along_axis(logp, ids[:, 1:, None], -1))
    assert xent == pytest.approx(want, rel=1e-5)
    assert ar == 0 and tar == 0  # evaluation carries no penalty
    if kind == "awd":
        # Training: dropout changes the output from run to run, AR/TAR > 0.
        a, b = sess.run([out.logits, out.ar], {training: True}), \
            sess.run([out.logits, out.tar], {training: True})
        assert not np.allclose(a[0], b[0])
        assert a[1] > 0 and b[1] > 0
        wd = sess.run(out.weight_decay)
        values = sess.run(tf.trainable_variables("lm/"))
        l2 = sum(np.sum(np.square(v, dtype=np.float64)) / 2 for v in values)
        # A float32 sum of squares (same sign) in any order, each square
        # and the scaling rounded: gamma(n + 2) relative (rel 1e-5 was
        # under it for these ~500 weights: gamma(500) = 3.0e-5).
        n = sum(v.size for v in values)
        assert wd == pytest.approx(1e-3 * l2, rel=float32_sum_rtol(n + 2))


def test_carried_state_equals_one_long_window(sess):
    features, ids = make_features(steps=6)
    inputs = tf.placeholder(tf.int32, [None, None])
    state = tuple(tf.nn.rnn_cell.LSTMStateTuple(
        tf.placeholder(tf.float32, [None, n]),
        tf.placeholder(tf.float32, [None, n]))
        for n in model.layer_sizes(as_params(PARAMS)))
    out = model.build_lm({"inputs": inputs, "targets": inputs,
                          "state": state}, False, dict(PARAMS, model="awd"))
    sess.run(tf.global_variables_initializer())
    flat_in = [t for s in state for t in s]
    flat_out = [t for s in out.final_state for t in s]
    zeros = [np.zeros((3, t.shape[1].value), np.float32) for t in flat_in]

    def feed(state_values, window):
        return dict(list(zip(flat_in, state_values)) + [(inputs, window)])

    full = sess.run(out.logits, feed(zeros, ids[:, :6]))
    first, carried = sess.run([out.logits, flat_out], feed(zeros, ids[:, :3]))
    second = sess.run(out.logits, feed(carried, ids[:, 3:6]))
    # The carried state is a copy, but the windows' shapes differ (3 steps
    # against 6), so the kernels may block their sums otherwise:
    # FLOAT_LOG_PROB_ATOL's derivation (was atol 1e-6 + rtol 1e-5).
    np.testing.assert_allclose(np.concatenate([first, second], 1), full,
                               rtol=0, atol=FLOAT_LOG_PROB_ATOL)


def test_train_op_decreases_loss(sess):
    tf.set_random_seed(0)
    features, _ = make_features(batch=4, steps=6)
    out = model.build_lm(features, TRAIN,
                         dict(PARAMS, model="plain"))
    train, opt = build_train_op(out.loss, 4.0, {"clip": 0.25,
                                                "optimizer": "ntasgd"})
    sess.run(tf.global_variables_initializer())
    before = sess.run(out.xent)
    for _ in range(40):
        sess.run(train)
    after = sess.run(out.xent)
    assert after < before - 0.3
    assert not sess.run(opt.averaging)


@pytest.mark.parametrize("change,match", [
    ({"model": "big"}, "params\\['model'\\]"),
    ({"dropout": 1.0}, "params\\['dropout'\\]"),
    ({"num_layers": 0}, "params\\['num_layers'\\]"),
    ({"sparsity": "l0"}, "params\\['sparsity_weight'\\]"),
])
def test_bad_params(change, match):
    features, _ = make_features()
    with pytest.raises(ValueError, match=match):
        model.build_lm(features, False, dict(PARAMS, model="awd", **{
            k: v for k, v in change.items() if k != "model"}) if "model"
            not in change else dict(PARAMS, **change))
    with pytest.raises(ValueError, match="missing 'model'"):
        model.build_lm(features, False, PARAMS)
    with pytest.raises(ValueError, match="optimizer"):
        build_train_op(tf.constant(1.0), 1.0, {"optimizer": "adam"})


@pytest.mark.parametrize("technique", ["variational_dropout", "l0"])
def test_sparsity_loss_and_report(sess, technique):
    """Sparse embedding + cells: the penalty is on, weighting it heavily
    raises the fraction of zero weights in the sparsity report."""
    from sparse_layers import report
    tf.set_random_seed(2)
    features, _ = make_features(batch=4, steps=6)
    out = model.build_lm(features, TRAIN, dict(
        PARAMS, model="awd", sparsity=technique, sparsity_weight=1.0))
    assert len(tf.get_collection(
        "theta_logsigma2" if technique == "variational_dropout"
        else "theta_logalpha")) == 3  # embedding and two cells
    # Clipped: at lr 1 the KL gradient on small weights (through
    # log alpha = log sigma2 - log theta^2) throws plain SGD to NaN within
    # ~35 steps, depending on last-bit float differences (TF 1.13 / 1.15).
    train, _ = build_train_op(out.loss, 1.0, {"optimizer": "sgd",
                                              "clip": 20.0})
    zeros = report.sparsity_report(summaries=False)["global"]
    sess.run(tf.global_variables_initializer())
    before = sess.run(zeros)
    assert sess.run(out.sparsity_loss) > 0
    for _ in range(80):
        sess.run(train)
    assert np.isfinite(sess.run(out.loss))
    assert sess.run(zeros) > before + 0.2


def _state(batch, layers):
    return tuple(tf.nn.rnn_cell.LSTMStateTuple(tf.zeros([batch, n]),
                                               tf.zeros([batch, n]))
                 for n in model.layer_sizes(as_params(PARAMS))[:layers])


@pytest.mark.parametrize("features,match", [
    # A state for 1 layer of 2 (was IndexError: tuple index out of range).
    (lambda: dict(make_features()[0], state=_state(3, 1)),
     r"^features\['state'\] must hold one LSTMStateTuple per layer \(2, "
     r"params\['num_layers'\]\), got 1$"),
    # A state of batch 3 for inputs of batch 2 (was a concat shape error).
    (lambda: dict(make_features(batch=2)[0], state=_state(3, 2)),
     r"^features\['state'\]\[0\]\.c must have shape \[2, 6\] .*got \(3, 6\)"),
    # Zero rows or steps: the mean over 0 tokens was NaN.
    (lambda: make_features(batch=0)[0],
     r"^features\['inputs'\] must have at least one row and one step .*"
     r"got shape \(0, 5\)"),
    (lambda: make_features(steps=0)[0],
     r"^features\['inputs'\] must have at least one row and one step .*"
     r"got shape \(3, 0\)"),
    (lambda: dict(make_features()[0], targets=tf.zeros([3, 4], tf.int32)),
     r"^features\['targets'\] must have the shape of"),
], ids=["layers", "state-batch", "zero-batch", "zero-window", "targets"])
def test_features_that_do_not_fit_are_named(features, match):
    with pytest.raises(ValueError, match=match):
        model.build_lm(features(), False, dict(PARAMS, model="awd"))


def test_unknown_shapes_are_asserted_when_run(sess):
    """Placeholders of unknown batch and time (the training loop's): the
    same checks, at run time (named without quotes, which TensorFlow
    prints escaped)."""
    ids = tf.placeholder(tf.int32, [None, None])
    c0 = tf.placeholder(tf.float32, [None, None])
    state = (tf.nn.rnn_cell.LSTMStateTuple(c0, c0), _state(2, 2)[1])
    out = model.build_lm({"inputs": ids, "targets": ids, "state": state},
                         False, dict(PARAMS, model="awd"))
    sess.run(tf.global_variables_initializer())
    cases = [({ids: np.zeros((2, 3)), c0: np.zeros((3, 6))},
              # c and h are both fed batch 3: whichever is checked first.
              r"features\.state\[0\]\.[ch] must have shape \[batch of "
              r"features\.inputs, 6\]"),
             ({ids: np.zeros((2, 0)), c0: np.zeros((2, 6))},
              r"features\.inputs must have at least one row and one step")]
    for feed, match in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=match):
            sess.run(out.xent, feed)
    # A fitting feed runs: uniform logits at zero weights would be log(11);
    # the loss is finite and positive.
    value = sess.run(out.xent, {ids: np.zeros((2, 3)), c0: np.zeros((2, 6))})
    assert np.isfinite(value) and value > 0


# --- the weight decay: exactly the weights ---

WDECAY = 1e-3


def _weight_names(num_layers):
    """The model's weights, written out by hand (the reference)."""
    names = ["lm/embedding", "lm/softmax_bias"]
    for i in range(num_layers):
        names += ["lm/layer_%d/lstm_%d/kernel" % (i, i),
                  "lm/layer_%d/lstm_%d/bias" % (i, i)]
    return names


@pytest.mark.parametrize("sparsity,quant,use_vd,others", [
    (None, False, False, []),
    ("variational_dropout", False, False, ["log_sigma2"]),
    ("l0", False, False, ["log_alpha"]),
    (None, True, True, ["/quant/", "weight_drop_mask"]),
    ("l0", True, False, ["log_alpha", "/quant/"]),
])
def test_weight_decay_is_l2_of_exactly_the_weights(sess, sparsity, quant,
                                                   use_vd, others):
    tf.set_random_seed(3)
    features, _ = make_features()
    params = dict(PARAMS, model="awd", wdecay=WDECAY, use_vd=use_vd)
    if sparsity:
        params.update(sparsity=sparsity, sparsity_weight=1.0)
    if quant:
        params.update(quant=True, quant_delay=0)
    out = model.build_lm(features, True, params)
    # Masks are local variables (never checkpointed), ranges global.
    by_name = {v.op.name: v for v in tf.global_variables()
               + tf.local_variables()}
    weights = _weight_names(PARAMS["num_layers"])
    # The variables decay must skip exist (and the sparse ones train).
    for part in others:
        skipped = [n for n in by_name if part in n]
        assert skipped, (part, sorted(by_name))
        if part.startswith("log_"):
            trainable = {v.op.name for v in tf.trainable_variables()}
            assert set(skipped) <= trainable
            assert len(skipped) == 1 + PARAMS["num_layers"]  # emb + cells
    sess.run(tf.global_variables_initializer())
    values = sess.run({n: by_name[n] for n in weights})
    want = WDECAY * sum(0.5 * np.sum(np.square(v, dtype=np.float64))
                        for v in values.values())
    # A float32 sum of squares (same sign) in any order, each square and
    # the scalings rounded: gamma(n + 3) relative to the float64 sum (rel
    # 1e-5 was under it for these ~450 weights: gamma(450) = 2.7e-5).
    n = sum(v.size for v in values.values())
    assert sess.run(out.weight_decay) == pytest.approx(
        want, rel=float32_sum_rtol(n + 3))
    # The training objective is the sum of its terms, decay included: the
    # same fetched float32 terms added by TF (4 additions, any order) and
    # here in float64: gamma(4) of sum |term| (was rel 1e-5, 40 times it).
    got = sess.run([out.loss, out.xent, out.ar, out.tar, out.weight_decay,
                    out.sparsity_loss])
    assert got[0] == pytest.approx(
        sum(got[1:]), abs=float32_sum_rtol(4) * sum(abs(t) for t in got[1:]))


def test_no_weight_decay_without_wdecay_or_for_plain():
    for params in (dict(PARAMS, model="awd", wdecay=0.0),
                   dict(PARAMS, model="plain")):
        with tf.Graph().as_default():
            features, _ = make_features()
            out = model.build_lm(features, True, params)
            assert _compat.get_static_value(out.weight_decay) == 0.0


# --- bad parameters and modes: a ValueError naming the parameter ---

@pytest.mark.parametrize("change,name", [
    ({"vocab_size": 10.7}, "params['vocab_size']"),
    ({"vocab_size": True}, "params['vocab_size']"),
    ({"emb_size": "4"}, "params['emb_size']"),
    ({"hidden_size": -6}, "params['hidden_size']"),
    ({"dropouth": float("nan")}, "params['dropouth']"),
    ({"wdecay": -1.0}, "params['wdecay']"),
    ({"sparsity": "magnitude"}, "params['sparsity']"),
])
def test_build_lm_bad_params(change, name):
    features, _ = make_features()
    with pytest.raises(ValueError) as error:
        model.build_lm(features, False, dict(PARAMS, model="awd", **change))
    assert str(error.value).startswith(name), error.value


@pytest.mark.parametrize("mode", ["training", "TRAIN", "", 1,
                                  tf.constant(1.0)])
def test_build_lm_bad_mode(mode):
    features, _ = make_features()
    with pytest.raises((ValueError, TypeError), match="^mode"):
        model.build_lm(features, mode, dict(PARAMS, model="awd"))


# tf.estimator.ModeKeys' values (TRAIN, EVAL, PREDICT), as documented: the
# model takes them also on TF 2.16+, which has no tf.estimator.
MODE_KEYS = ("train", "eval", "infer")


@needs_estimator
def test_mode_keys_are_estimators():
    keys = tf.estimator.ModeKeys
    assert MODE_KEYS == (keys.TRAIN, keys.EVAL, keys.PREDICT)


def test_build_lm_modes_that_are_accepted():
    """Every ModeKeys value and both kinds of training flag still build."""
    flags = (lambda: True, lambda: False,
             lambda: tf.placeholder_with_default(True, []))
    for make_mode in tuple((lambda m=m: m) for m in MODE_KEYS) + flags:
        with tf.Graph().as_default():
            features, _ = make_features()
            model.build_lm(features, make_mode(), dict(PARAMS, model="awd"))
