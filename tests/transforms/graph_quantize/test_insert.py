"""`transforms.graph_quantize.insert`, the FakeQuants the rewrite puts
in: a weight's (narrow range, last value, one per variable, per channel
and symmetric as asked), an activation's (the zero-debiased moving
average of its batch ranges, its readers rerouted), both behind
``quant_delay``, and the settings' checks.

The references: numpy fake quantization (`support.references`) on the
ranges numpy computes from the same values, the moving average written
out, and the graph's own readers."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.references import fake_quant
from tf1_awd_sparse.transforms.graph_quantize import insert
from tf1_awd_sparse.transforms.graph_quantize.report import RewriteReport

W = (np.random.RandomState(0).randn(6, 4) * [1, 2, 3, .5]).astype(np.float32)


def _weight():
    w = tf.get_variable("w", initializer=W, use_resource=False)
    return w, w.value()


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("symmetric", [False, True])
def test_a_weight_is_fake_quantized_on_its_own_range(sess, bits, symmetric):
    _, value = _weight()
    settings = insert.Settings(True, weight_bits=bits, symmetric=symmetric)
    out = insert.quantize_weight(value, "layer/", settings)
    sess.run(tf.global_variables_initializer())
    low, high = min(W.min(), 0.), max(W.max(), 0.)
    if symmetric:   # narrow range: the same distance both ways
        low, high = min(low, -high), max(high, -low)
    np.testing.assert_allclose(sess.run(out),
                               fake_quant(W, low, high, bits, narrow=True),
                               rtol=0, atol=1e-6)
    ranges = {v.op.name: v for v in tf.global_variables()
              if "weights_quant" in v.op.name}
    assert sorted(ranges) == ["layer/weights_quant/max",
                              "layer/weights_quant/min"]
    # The last value's range is kept for evaluation.
    np.testing.assert_allclose(
        sess.run([ranges["layer/weights_quant/min"],
                  ranges["layer/weights_quant/max"]]), [low, high],
        rtol=1e-6)


def test_per_channel_ranges_are_each_channels_magnitude(sess):
    _, value = _weight()
    settings = insert.Settings(True, per_channel=True)
    out = insert.quantize_weight(value, "conv/", settings, per_channel=True)
    sess.run(tf.global_variables_initializer())
    want = np.stack([fake_quant(W[:, c], -np.abs(W[:, c]).max(),
                                np.abs(W[:, c]).max(), narrow=True)
                     for c in range(W.shape[1])], 1)
    np.testing.assert_allclose(sess.run(out), want, rtol=0, atol=1e-6)
    assert out.op.type == "FakeQuantWithMinMaxVarsPerChannel"


def test_one_fake_quant_per_variable_and_the_report(sess):
    w, value = _weight()
    settings = insert.Settings(True)
    settings.report = RewriteReport(tf.get_default_graph(), True)
    first = insert.quantize_weight(value, "a/", settings)
    again = insert.quantize_weight(tf.identity(w), "b/", settings)
    assert again is first
    computed = value * 2.0     # a computed weight (folded) is its own
    other = insert.quantize_weight(computed, "c/", settings)
    assert other is not first
    assert [(q.tensor, q.kind, q.scope) for q in settings.report.quantized] \
        == [(value.name, "weights_quant", "a/weights_quant/"),
            (computed.name, "weights_quant", "c/weights_quant/")]


def test_evaluation_reads_the_ranges_it_is_given(sess):
    _, value = _weight()
    out = insert.quantize_weight(value, "layer/", insert.Settings(False))
    sess.run(tf.global_variables_initializer())
    low_var, high_var = [v for v in tf.global_variables()
                         if "weights_quant" in v.op.name]
    low_var.load(-1.0, sess)
    high_var.load(0.5, sess)
    np.testing.assert_allclose(sess.run(out),
                               fake_quant(W, -1.0, 0.5, narrow=True),
                               rtol=0, atol=1e-6)


def test_quant_delay_passes_the_weight_through_until_reached(sess):
    _, value = _weight()
    out = insert.quantize_weight(value, "layer/",
                                 insert.Settings(True, quant_delay=3))
    step = tf.train.get_global_step()
    sess.run(tf.global_variables_initializer())
    np.testing.assert_array_equal(sess.run(out), W)
    step.load(3, sess)
    np.testing.assert_allclose(
        sess.run(out), fake_quant(W, W.min(), W.max(), narrow=True),
        rtol=0, atol=1e-6)


@pytest.mark.parametrize("symmetric", [None, True])
@pytest.mark.parametrize("bits", [8, 5])
def test_an_activations_range_is_the_debiased_moving_average(sess, symmetric,
                                                             bits):
    x = tf.placeholder(tf.float32, [3, 4])
    act = tf.nn.relu(x) - 0.25
    reader, other = tf.square(act), tf.negative(act)
    settings = insert.Settings(True, activation_bits=bits)
    quantized = insert.quantize_activation(act, "layer/", "act_quant",
                                           settings, readers=[reader.op],
                                           symmetric=symmetric)
    # Only the reader given reads the quantized tensor.
    assert list(reader.op.inputs) == [quantized]
    assert list(other.op.inputs) == [act]
    sess.run(tf.global_variables_initializer())
    rng = np.random.RandomState(1)
    decay, biased, levels = insert.EMA_DECAY, np.zeros(2), 2.0 ** bits
    for run in range(1, 4):
        feed = rng.randn(3, 4).astype(np.float32) * run
        value = np.maximum(feed, 0) - 0.25
        low, high = min(value.min(), 0.), max(value.max(), 0.)
        if symmetric:   # full range: one code more below 0 than above
            ratio = (levels - 2.0) / levels
            low, high = min(low, -high / ratio), max(high, -low * ratio)
        biased = decay * biased + (1 - decay) * np.array([low, high])
        ema = biased / (1 - decay ** run)
        got_q, got_r = sess.run([quantized, reader], {x: feed})
        want = fake_quant(value, ema[0], ema[1], bits)
        # TF's average is float32 (numpy's float64): the grid a few float32
        # units apart, each value as far in proportion.
        np.testing.assert_allclose(got_q, want, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got_r, want ** 2, rtol=3e-4, atol=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    (dict(training="yes"), "training"),
    (dict(training=True, weight_bits=9), "weight_bits"),
    (dict(training=True, activation_bits=1), "activation_bits"),
    (dict(training=True, quant_delay=-1), "quant_delay"),
    (dict(training=True, freeze_bn_delay=1.5), "freeze_bn_delay"),
    (dict(training=True, symmetric=1), "symmetric"),
    (dict(training=True, per_channel=None), "per_channel")])
def test_settings_name_a_bad_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        insert.Settings(**kwargs)
