"""`transforms.graph_quantize.batch_norm.match`: the batch norm after a
layer op, as ``tf.layers.batch_normalization`` builds it (fused, unfused,
between two Reshapes, behind an Identity), in training and inference, and
no match where there is none (NCHW, a second reader, no batch norm).

The references: the batch norm's own variables and output tensor, and
numpy's batch statistics (the mean, the variance: without Bessel's
correction unfused, with it as the fused op gives it) of the layer's
output."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.transforms.graph_quantize import batch_norm

SHAPE = [4, 5, 5, 3]
EPSILON = 0.01


def _conv_bn(kind, training, scale=True):
    """(layer output, batch norm output) of a conv then a batch norm."""
    x = tf.constant(np.random.RandomState(0).randn(*SHAPE), tf.float32)
    h = tf.layers.conv2d(x, 4, 3, use_bias=False, name="c1")
    source = h
    if kind == "identity":
        source = tf.identity(h)
    if kind == "reshaped":   # slim's 2-D batch norm, by hand
        flat = tf.reshape(tf.layers.flatten(h)[:, :4], [-1, 1, 1, 4])
        h = tf.layers.flatten(h)[:, :4]
        out = tf.layers.batch_normalization(
            tf.reshape(h, [-1, 1, 1, 4]), training=training, name="bn",
            epsilon=EPSILON, scale=scale)
        return h, tf.reshape(out, [-1, 4]), flat
    out = tf.layers.batch_normalization(
        source, fused=kind != "unfused", training=training, name="bn",
        epsilon=EPSILON, scale=scale)
    return h, out, h


def _variable(name):
    return [v for v in tf.global_variables() if v.op.name == "bn/" + name][0]


@pytest.mark.parametrize("scale", [True, False], ids=["gamma", "no_gamma"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("kind", ["fused", "unfused", "identity",
                                  "reshaped"])
def test_match_finds_the_batch_norms_tensors(sess, kind, training, scale):
    h, out, normalized = _conv_bn(kind, training, scale)
    norm = batch_norm.match(h)
    assert norm is not None
    assert norm.output is out or norm.output.op is out.op
    assert norm.training == training
    assert norm.epsilon == pytest.approx(EPSILON)
    assert (norm.fused_op is not None) == (kind != "unfused")
    sess.run(tf.global_variables_initializer())
    rng = np.random.RandomState(1)
    for name in ("gamma", "beta", "moving_mean", "moving_variance"):
        if name != "gamma" or scale:
            _variable(name).load(rng.uniform(0.5, 2.0, 4), sess)
    if scale:
        np.testing.assert_array_equal(sess.run(norm.gamma),
                                      sess.run(_variable("gamma")))
    elif kind == "unfused":
        assert norm.gamma is None
    else:   # the fused op's input: ones
        np.testing.assert_array_equal(sess.run(norm.gamma), np.ones(4))
    np.testing.assert_array_equal(sess.run(norm.beta),
                                  sess.run(_variable("beta")))
    value = sess.run(normalized).reshape(-1, 4).astype(np.float64)
    if training:
        # The fused op's own variance has Bessel's correction (the fold
        # computes the moments of `moments_of` again); the unfused one not.
        want_mean, want_var = value.mean(0), value.var(
            0, ddof=0 if kind == "unfused" else 1)
        np.testing.assert_array_equal(sess.run(norm.moving_mean),
                                      sess.run(_variable("moving_mean")))
        np.testing.assert_array_equal(
            sess.run(norm.moving_variance),
            sess.run(_variable("moving_variance")))
        assert [op.type for op in norm.updates] == ["Sub", "Sub"]
        if kind != "unfused":
            assert norm.moments_of.op is norm.fused_op.inputs[0].op
    else:
        want_mean, want_var = (sess.run(_variable(n)) for n in (
            "moving_mean", "moving_variance"))
        assert norm.moving_mean is None and norm.updates == []
    got_mean, got_var = sess.run([norm.mean, norm.variance])
    np.testing.assert_allclose(got_mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_var, want_var, rtol=1e-4, atol=1e-6)


def test_no_match_without_a_batch_norm_or_with_another_reader():
    x = tf.zeros(SHAPE)
    h = tf.layers.conv2d(x, 4, 3, use_bias=False, name="plain")
    assert batch_norm.match(h) is None
    tf.nn.relu(h)
    assert batch_norm.match(h) is None
    # A fused batch norm with a second reader of the conv: no single path.
    h2 = tf.layers.conv2d(x, 4, 3, use_bias=False, name="shared")
    tf.layers.batch_normalization(h2, fused=True, name="bn2")
    tf.identity(h2)
    assert batch_norm.match(h2) is None


def test_no_match_for_an_nchw_fused_batch_norm():
    h = tf.layers.conv2d(tf.zeros(SHAPE), 4, 3, use_bias=False)
    nchw = tf.transpose(h, [0, 3, 1, 2])
    out = tf.nn.fused_batch_norm(nchw, tf.ones([4]), tf.zeros([4]),
                                 data_format="NCHW")[0]
    assert out.op.type.startswith("FusedBatchNorm")
    assert batch_norm.match(nchw) is None
