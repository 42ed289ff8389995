"""build_lm's weight decay covers the weights only (issue 10.3): the
embedding, each cell's kernel and bias and the softmax bias, never a sparse
technique's log_sigma2 / log_alpha, a DropConnect mask or a quantization
range. Checked against numpy on the variables' values, by name."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base import compat as _compat

from tf1_awd_sparse.awd_lm.graph import model
from support.lm import PARAMS, make_features
from support.tolerances import float32_sum_rtol

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
