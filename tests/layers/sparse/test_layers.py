"""Sparse FullyConnected / Conv2D layers against numpy and tf.nn ops."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common, techniques
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.variational_dropout import layers as vd_layers
from support.references import sigmoid

EPS = common.EPSILON
MODULES = {"vd": vd_layers, "l0": l0_layers}
TECHNIQUES = {"vd": "variational_dropout", "l0": "l0"}


def _eval_weights(technique, theta, aux):
    """Numpy reference of the evaluation-time weights."""
    if technique == "vd":
        return theta * (aux - np.log(theta ** 2 + EPS) < common.THRESHOLD)
    gate = np.clip(sigmoid(aux) * (common.ZETA - common.GAMMA)
                   + common.GAMMA, 0, 1)
    return theta * gate


def _randomize(sess, layer, rng, aux_range):
    """Sets kernel, aux and bias to random values; returns them."""
    values = [rng.randn(*layer.kernel.shape.as_list()).astype(np.float32),
              rng.uniform(*aux_range, size=layer.aux.shape.as_list())
              .astype(np.float32),
              rng.randn(*layer.bias.shape.as_list()).astype(np.float32)]
    sess.run([v.assign(x) for v, x in zip(
        [layer.kernel, layer.aux, layer.bias], values)])
    return values


AUX_RANGES = {"vd": (-4., 6.), "l0": (-3., 3.)}


@pytest.mark.parametrize("technique", ["vd", "l0"])
def test_fully_connected_eval_train_and_training_tensor(sess, technique):
    rng = np.random.RandomState(0)
    x = rng.randn(4, 5).astype(np.float32)
    x3 = rng.randn(4, 2, 5).astype(np.float32)
    training = tf.placeholder(tf.bool, [])
    layer = MODULES[technique].FullyConnected(3, activation=tf.nn.relu,
                                              name="fc")
    switch = layer(x, training=training)
    evals = [layer(x, training=False), layer(x3, training=False)]
    trains = [layer(x, training=True), layer(x3, training=True)]
    assert [v.name for v in layer.variables] == [
        "fc/kernel:0", "fc/" + layer.TECHNIQUE.aux_name + ":0", "fc/bias:0"]
    assert techniques.registered_pairs(TECHNIQUES[technique]) == [
        (layer.kernel, layer.aux)]
    assert trains[1].shape.as_list() == [4, 2, 3]
    sess.run(tf.global_variables_initializer())
    theta, aux, bias = _randomize(sess, layer, rng, AUX_RANGES[technique])
    w = _eval_weights(technique, theta, aux)
    assert 0 < np.count_nonzero(w) < w.size
    got = sess.run(evals)
    np.testing.assert_allclose(got[0], np.maximum(x @ w + bias, 0),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], np.maximum(np.tensordot(x3, w, 1)
                                                  + bias, 0),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(sess.run(switch, {training: False}),
                                  got[0])
    a, b = sess.run(trains), sess.run(trains)
    assert not np.allclose(a[0], b[0]) and not np.allclose(a[1], b[1])
    assert not np.allclose(sess.run(switch, {training: True}), got[0])


@pytest.mark.parametrize("technique", ["vd", "l0"])
@pytest.mark.parametrize("data_format", ["channels_last", "NCHW"])
def test_conv2d_with_bias_equals_tf_conv_on_eval_weights(sess, technique,
                                                         data_format):
    rng = np.random.RandomState(1)
    img = rng.randn(2, 6, 6, 3).astype(np.float32)
    channels_first = data_format == "NCHW"
    inputs = img.transpose(0, 3, 1, 2) if channels_first else img
    layer = MODULES[technique].Conv2D(4, (3, 2), strides=2, padding="SAME",
                                      data_format=data_format,
                                      use_bias=True, name="conv")
    out = layer(inputs, training=False)
    train = layer(inputs)  # training is the default
    sess.run(tf.global_variables_initializer())
    theta, aux, bias = _randomize(sess, layer, rng, AUX_RANGES[technique])
    ref = tf.nn.conv2d(img, _eval_weights(technique, theta, aux),
                       [1, 2, 2, 1], "SAME") + bias
    got, ref, t1 = sess.run([out, ref, train])
    t2 = sess.run(train)
    if channels_first:
        ref = ref.transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    assert t1.shape == ref.shape and not np.allclose(t1, t2)


def test_initializers_match_the_spec(sess):
    vd_fc = vd_layers.FullyConnected(2000, name="vd")
    l0_fc = l0_layers.FullyConnected(2000, name="l0")
    x = tf.zeros([1, 10])
    vd_fc(x), l0_fc(x)
    sess.run(tf.global_variables_initializer())
    log_sigma2, log_alpha = sess.run([vd_fc.aux, l0_fc.aux])
    assert np.all(log_sigma2 == -10.)
    # 20000 draws of N(2.197, 0.01): mean within 5e-4 (7 standard errors),
    # stddev within 5%.
    assert abs(log_alpha.mean() - 2.197) < 5e-4
    assert abs(log_alpha.std() - 0.01) < 5e-4


@pytest.mark.parametrize("technique", ["vd", "l0"])
def test_config_round_trip_reuse_and_saver(sess, technique, tmp_path):
    module = MODULES[technique]
    layers = [module.FullyConnected(3, activation="tanh", use_bias=False,
                                    name="fc"),
              module.Conv2D(2, 3, strides=(1, 2), padding="valid",
                            data_format="channels_first", name="conv")]
    for layer in layers:
        config = layer.get_config()
        clone = type(layer).from_config(config)
        assert clone.get_config() == config
    # Rebuilding under reuse shares the variables and the collection entry.
    x = tf.ones([2, 4])
    with tf.variable_scope("net"):
        first = module.FullyConnected(3, name="fc")
        out = first(x, training=False)
    with tf.variable_scope("net", reuse=True):
        module.FullyConnected(3, name="fc")(x)
    assert len(tf.global_variables()) == 3
    assert len(techniques.registered_pairs(TECHNIQUES[technique])) == 1
    sess.run(tf.global_variables_initializer())
    before = sess.run(out)
    path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default(), tf.Session() as other:
        with tf.variable_scope("net"):
            restored = module.FullyConnected(3, name="fc")(
                tf.ones([2, 4]), training=False)
        tf.train.Saver().restore(other, path)
        np.testing.assert_array_equal(other.run(restored), before)


@pytest.mark.parametrize("technique", ["vd", "l0"])
def test_layer_bad_arguments_raise(technique):
    module = MODULES[technique]
    with pytest.raises(ValueError, match="units"):
        module.FullyConnected(0)
    with pytest.raises(ValueError, match="data_format"):
        module.Conv2D(2, 3, data_format="NWHC")
    with pytest.raises(ValueError, match="padding"):
        module.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="kernel_size"):
        module.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="rank 4"):
        module.Conv2D(2, 3)(tf.zeros([2, 5, 5]))
    with pytest.raises(ValueError, match="last dimension"):
        module.FullyConnected(2)(tf.placeholder(tf.float32, [2, None]))
    with pytest.raises(TypeError, match="training"):
        module.FullyConnected(2)(tf.zeros([2, 3]), training=1)
    with pytest.raises(TypeError, match="int32"):
        module.FullyConnected(2)(tf.zeros([2, 3]),
                                 training=tf.constant(1))
