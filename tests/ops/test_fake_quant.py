"""The fake-quant building blocks (tf1_awd_sparse.ops.fake_quant) against
the numpy references of tests/support/references.py."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base import checks
from tf1_awd_sparse.ops import fake_quant as fq
from tf1_awd_sparse.export.graphdef import nudged_quantization
from support.references import nudge, fake_quant


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
        checks.check_num_bits(9, "weight_bits")
    with pytest.raises(ValueError, match="activation_bits"):
        checks.check_num_bits(8.0, "activation_bits")
    with pytest.raises(ValueError, match="unique"):
        fq.RangeSet(["a", "a"])
    with pytest.raises(ValueError, match="ema_decay"):
        fq.RangeSet(["a"], ema_decay=1.0)
