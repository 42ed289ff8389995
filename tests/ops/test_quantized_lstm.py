"""`ops.quantized_lstm`, the quantization-aware LSTM step on its own (the
cell that runs it: tests/layers/weight_drop_lstm_cell/test_quant_cell.py):
the ranges a step needs, the folded forget bias, the argument checks, the
weight quantization switched by ``quant_delay``, and one evaluation step
with peepholes, a projection and clips.

The references: numpy (`support.references`: TFLite's fake quantization
and the fake-quantized LSTM step of LSTMCell's math), and TF's own
``fake_quant_with_min_max_vars`` for the weights."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.references import (fake_quant, lstm_quant_step, nudge,
                                quantize_weight)
from tf1_awd_sparse.ops import quantized_lstm as ql

D, N, P, B = 3, 4, 2, 5
BASE = ["input", "gates", "forget_state", "input_state", "state", "output"]


@pytest.mark.parametrize("peepholes", [False, True])
@pytest.mark.parametrize("projection", [False, True])
def test_range_names_are_the_steps_quantized_tensors(peepholes, projection):
    want = list(BASE)
    if peepholes:
        want += ["peephole_i", "gate_i", "peephole_f", "gate_f",
                 "peephole_o", "gate_o"]
    if projection:
        want += ["cell_output"]
    assert ql.range_names(peepholes, projection) == want


@pytest.mark.parametrize("forget_bias", [0.0, 1.0, -2.5])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_fold_forget_bias_adds_it_to_the_f_block(sess, forget_bias, dtype):
    bias = np.random.RandomState(0).randn(4 * N)
    tensor = tf.constant(bias, dtype)
    folded = ql.fold_forget_bias(tensor, forget_bias, N)
    if not forget_bias:
        assert folded is tensor
    # Added in the bias's own dtype: the same rounding as numpy's.
    want = bias.astype(dtype.as_numpy_dtype)
    want[2 * N:3 * N] += dtype.as_numpy_dtype(forget_bias)
    got = sess.run(folded)
    assert got.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kwargs, message", [
    (dict(weight_bits=1), "weight_bits"),
    (dict(activation_bits=9), "activation_bits"),
    (dict(quant_activation="relu"), "quant_activation"),
    (dict(quant_delay=-1), "quant_delay")])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ql.LSTMQuantizer(N, **kwargs)


class _Layer(object):
    """What the quantizer needs of its cell: ``add_weight``."""

    @staticmethod
    def add_weight(name, **kwargs):
        return tf.get_variable(name, **kwargs)


def _quantizer(**kwargs):
    quantizer = ql.LSTMQuantizer(N, **kwargs)
    quantizer.create_variables(_Layer())
    assert quantizer.created
    return quantizer


@pytest.mark.parametrize("bits", [8, 4])
def test_quantize_weight_waits_for_quant_delay_in_training(sess, bits):
    step = tf.train.get_or_create_global_step()
    training = tf.placeholder(tf.bool, [])
    quantizer = _quantizer(quant_delay=5, weight_bits=bits)
    quantizer.begin_run(training)
    w = np.random.RandomState(1).randn(D + N, 4 * N).astype(np.float32)
    out = quantizer.quantize_weight(w)
    sess.run(tf.global_variables_initializer())
    quantized = quantize_weight(w, bits)
    assert not np.allclose(quantized, w)
    for value, train, want in ((0, True, w), (5, True, quantized),
                               (0, False, quantized)):
        step.load(value, sess)
        np.testing.assert_allclose(sess.run(out, {training: train}), want,
                                   rtol=0, atol=1e-6)


def test_quant_delay_in_training_needs_a_global_step():
    quantizer = _quantizer(quant_delay=3)
    with pytest.raises(ValueError, match="global step"):
        quantizer.begin_run(True)
    quantizer.begin_run(False)    # evaluation: no step needed


@pytest.mark.parametrize("hard", [False, True], ids=["standard", "hard"])
def test_an_evaluation_step_is_numpys_fake_quantized_lstm_step(sess, hard):
    """Peepholes, a projection, both clips and a forget bias; ranges set
    by hand. Ties of float32 may round apart in TF and numpy: one output
    step at most, and almost all exact."""
    rng = np.random.RandomState(2)
    cell_clip, proj_clip, forget_bias = 0.8, 0.5, 0.7
    quantizer = _quantizer(num_proj=P, use_peepholes=True,
                           cell_clip=cell_clip, proj_clip=proj_clip,
                           forget_bias=forget_bias,
                           quant_activation="hard" if hard else "standard")
    names = ql.range_names(True, True)
    ranges = {name: (-rng.uniform(0.5, 3.), rng.uniform(0.5, 3.))
              for name in names}
    weights = {"kernel": rng.randn(D + P, 4 * N).astype(np.float32) * 0.5,
               "bias": rng.randn(4 * N).astype(np.float32) * 0.2,
               "projection": rng.randn(N, P).astype(np.float32)}
    for gate in "ifo":
        weights["w_%s_diag" % gate] = rng.randn(N).astype(np.float32)
    quantizer.begin_run(False)
    quantizer.prepare(
        quantizer.quantize_weight(weights["kernel"]), weights["bias"],
        peepholes=[weights["w_%s_diag" % g] for g in "ifo"],
        projection=weights["projection"])
    x = rng.uniform(-2, 2, (B, D)).astype(np.float32)
    # The carried state on its grids (clipped ranges), as a step leaves it.
    clipped = {"state": cell_clip, "output": proj_clip}
    bounded = {name: (max(ranges[name][0], -clip), min(ranges[name][1], clip))
               for name, clip in clipped.items()}
    c = fake_quant(rng.uniform(-1, 1, (B, N)), *bounded["state"])
    h = fake_quant(rng.uniform(-0.5, 0.5, (B, P)), *bounded["output"])
    m, c_new = quantizer.step(tf.constant(x), tf.constant(c, tf.float32),
                              tf.constant(h, tf.float32))
    sess.run(tf.global_variables_initializer())
    for name, (lo, hi) in ranges.items():
        index = quantizer.ranges.names.index(name)
        quantizer.ranges.min_vars[index].load(lo, sess)
        quantizer.ranges.max_vars[index].load(hi, sess)
    got_m, got_c = sess.run([m, c_new])
    want_m, want_c = lstm_quant_step(x, c, h, weights, ranges, hard=hard,
                                     forget_bias=forget_bias,
                                     cell_clip=cell_clip,
                                     proj_clip=proj_clip)
    for got, want, name in ((got_m, want_m, "output"),
                            (got_c, want_c, "state")):
        clip = clipped[name]
        _, _, scale = nudge(*bounded[name])
        assert np.abs(got - want).max() <= scale * 1.001
        assert np.mean(np.abs(got - want) < 1e-6) > 0.85
        assert np.abs(got).max() <= clip + scale
