"""The environment the library is pinned to: TF 1.13.1 in graph mode."""
import numpy as np
import tensorflow as tf


def test_tensorflow_version_is_pinned():
    assert tf.__version__ == "1.13.1"


def test_numpy_below_1_17():
    major, minor = (int(v) for v in np.__version__.split(".")[:2])
    assert (major, minor) < (1, 17)


def test_graph_mode_and_contrib_quantize(sess):
    assert not tf.executing_eagerly()
    import tensorflow.contrib.quantize as quantize  # noqa: F401
    assert callable(quantize.create_training_graph)
    assert callable(quantize.create_eval_graph)
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_allclose(sess.run(tf.matmul(x, tf.transpose(x))), [[5.0]])
