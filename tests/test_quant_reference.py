"""Numpy references for the quantization tests (TensorFlow's fake-quant
nudging, a fake-quantized LSTM step written from the spec of issue 5), used
by the other test_quant_* files, and tests of the fake-quant building blocks
against them."""
import numpy as np


def nudge(lo, hi, bits=8, narrow=False):
    """(nudged_min, nudged_max, scale) as tf.fake_quant_with_min_max_vars."""
    qmin, qmax = (1 if narrow else 0), 2 ** bits - 1
    scale = (np.float32(hi) - np.float32(lo)) / np.float32(qmax - qmin)
    zp_from_min = qmin - np.float32(lo) / scale
    if zp_from_min < qmin:
        zp = qmin
    elif zp_from_min > qmax:
        zp = qmax
    else:
        zp = np.floor(zp_from_min + 0.5)
    return (np.float32((qmin - zp) * scale), np.float32((qmax - zp) * scale),
            np.float32(scale))


def fake_quant(x, lo, hi, bits=8, narrow=False):
    """Numpy fake quantization (clamp to the nudged range, round)."""
    nmin, nmax, scale = nudge(lo, hi, bits, narrow)
    x = np.clip(np.asarray(x, np.float32), nmin, nmax)
    return (np.floor((x - nmin) / scale + np.float32(0.5)) * scale
            + nmin).astype(np.float32)


def grid_offset(x, lo, hi, bits=8):
    """Distance of each value from the nearest grid point, in steps."""
    nmin, _, scale = nudge(lo, hi, bits)
    steps = (np.asarray(x, np.float64) - nmin) / scale
    return np.abs(steps - np.round(steps))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_quant_step(x, c, h, w, r, bits=8, hard=False, forget_bias=1.0,
                    cell_clip=None):
    """One fake-quantized LSTM step (no peepholes / projection).

    Args:
      x, c, h: [batch, ...] float arrays.
      w: dict 'kernel', 'bias' (float arrays).
      r: dict range name -> (lo, hi), with 'input', 'gates',
        'forget_state', 'input_state', 'state', 'output'.

    Returns:
      (h_new, c_new).
    """
    n = c.shape[1]
    sig_r = (0.0, 255.0 / 256.0)
    tanh_r = (-1.0, 127.0 / 128.0)
    kernel = fake_quant(w["kernel"], w["kernel"].min(), w["kernel"].max(),
                        bits, narrow=True)
    bias = w["bias"].copy()
    bias[2 * n:3 * n] += forget_bias
    concat_r = (min(r["input"][0], r["output"][0]),
                max(r["input"][1], r["output"][1]))
    c = fake_quant(c, *r["state"])
    h = fake_quant(h, *r["output"])
    joined = fake_quant(np.concatenate([x, h], 1), *concat_r)
    z = fake_quant(joined.dot(kernel) + bias, *r["gates"])
    i, j, f, o = np.split(z, 4, axis=1)

    def gate(t):
        if hard:
            scaled = fake_quant(0.2 * t, 0.2 * r["gates"][0],
                                0.2 * r["gates"][1])
            return fake_quant(scaled + 0.5, *sig_r)
        return fake_quant(sigmoid(t), *sig_r)

    def squash(t, t_range):
        if hard:
            return fake_quant(np.maximum(t, 0.0), *t_range)
        return fake_quant(np.tanh(t), *tanh_r)

    kept = fake_quant(gate(f) * c, *r["forget_state"])
    added = fake_quant(gate(i) * squash(j, r["gates"]), *r["input_state"])
    state_r = r["state"]
    if cell_clip is not None:
        state_r = (max(state_r[0], -cell_clip), min(state_r[1], cell_clip))
    c_new = fake_quant(kept + added, *state_r)
    h_new = fake_quant(gate(o) * squash(c_new, state_r), *r["output"])
    return h_new, c_new


def lstm_float_step(x, c, h, kernel, bias, forget_bias=1.0, hard=False):
    """Plain float LSTM step (LSTMCell's math; with ``hard``, hard sigmoid
    clip(0.2 x + 0.5, 0, 1) and ReLU instead of sigmoid and tanh)."""
    gate = (lambda t: np.clip(0.2 * t + 0.5, 0.0, 1.0)) if hard else sigmoid
    squash = (lambda t: np.maximum(t, 0.0)) if hard else np.tanh
    z = np.concatenate([x, h], 1).dot(kernel) + bias
    i, j, f, o = np.split(z, 4, axis=1)
    c = gate(f + forget_bias) * c + gate(i) * squash(j)
    return gate(o) * squash(c), c


# ----------------------------------------------------------------------------
# Tests of the building blocks in quantization.fake_quant against the numpy
# reference above.
# ----------------------------------------------------------------------------
import pytest  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from tf1_awd_sparse.quantization import fake_quant as fq  # noqa: E402
from tf1_awd_sparse.export.graphdef import nudged_quantization  # noqa: E402


@pytest.mark.parametrize("bits", [8, 4])
def test_fake_quant_matches_numpy(sess, bits):
    rng = np.random.RandomState(1)
    x = rng.randn(500).astype(np.float32) * 2
    for lo, hi in [(-1.3, 2.1), (0.2, 3.0), (-4.0, -0.5)]:
        got = sess.run(fq.fake_quant(tf.constant(x), lo, hi, bits))
        want = fake_quant(x, lo, hi, bits)
        # Ties may round differently between x / s and x * (1 / s).
        _, _, scale = nudge(lo, hi, bits)
        assert np.mean(np.abs(got - want) > 1e-6) < 0.01
        np.testing.assert_allclose(got, want, atol=scale * 1.001)


def test_quantize_weight_is_narrow_last_value(sess):
    rng = np.random.RandomState(2)
    w = rng.randn(30, 8).astype(np.float32)
    got = sess.run(fq.quantize_weight(tf.constant(w), 8))
    np.testing.assert_allclose(got, fake_quant(w, w.min(), w.max(), 8, True),
                               atol=1e-6)
    # Narrow range: 254 steps over the weight's span.
    assert len(np.unique(got)) <= 255


@pytest.mark.parametrize("bits", [8, 6])
def test_fixed_ranges_are_tflite_grids(bits):
    # TFLite uint8 Logistic: scale 1/256, zero point 0; Tanh: 1/128, 128.
    levels = 2 ** bits
    scale, zero = nudged_quantization(*fq.fixed_output_range("sigmoid",
                                                             bits), bits)
    assert (scale, zero) == (pytest.approx(1.0 / levels), 0)
    scale, zero = nudged_quantization(*fq.fixed_output_range("tanh", bits),
                                      bits)
    assert (scale, zero) == (pytest.approx(2.0 / levels), levels // 2)
    with pytest.raises(ValueError, match="kind"):
        fq.fixed_output_range("relu", bits)


def test_ema_fold_replaces_then_averages(sess):
    ema = tf.constant([1.0, -2.0])
    obs = tf.constant([6.0, 3.0])
    first = fq.ema_fold(ema, obs, tf.constant(3.0), tf.constant(0.0), 0.9)
    later = fq.ema_fold(ema, obs, tf.constant(3.0), tf.constant(1.0), 0.9)
    none = fq.ema_fold(ema, obs, tf.constant(0.0), tf.constant(1.0), 0.9)
    first, later, none = sess.run([first, later, none])
    np.testing.assert_allclose(first, [2.0, 1.0])
    np.testing.assert_allclose(later, [1.0 + 0.1 * 1.0, -2.0 + 0.1 * 3.0])
    np.testing.assert_allclose(none, [1.0, -2.0])


def test_sanitize_range_never_empty_and_clipped(sess):
    lo, hi = sess.run(fq.sanitize_range(tf.constant([0.0, 0.5, -3.0]),
                                        tf.constant([0.0, 2.0, 3.0]),
                                        limit=1.5))
    np.testing.assert_allclose(lo, [0.0, 0.0, -1.5])
    np.testing.assert_allclose(hi, [fq.MIN_RANGE_WIDTH, 1.5, 1.5])


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="weight_bits"):
        fq.check_num_bits("weight_bits", 9)
    with pytest.raises(ValueError, match="activation_bits"):
        fq.check_num_bits("activation_bits", 8.0)
    with pytest.raises(ValueError, match="unique"):
        fq.RangeSet(["a", "a"])
    with pytest.raises(ValueError, match="ema_decay"):
        fq.RangeSet(["a"], ema_decay=1.0)
