"""The environment the suite runs in: a supported TensorFlow (1.13.1 by
default; 1.15.5, 2.15.1 and the newest 2.x with tf-keras under the other
make targets, docs/versions.md) in graph mode, with the numpy that version
needs; under make, exactly the pins of the environment's constraints file."""
import os
import sys

import numpy as np
import pkg_resources
import pytest
import tensorflow as tf_root
import tensorflow.compat.v1 as tf

from support.versions import IS_TF2, needs_contrib

# As declared in setup.py, per Python.
SUPPORTED = pkg_resources.Requirement.parse(
    "tensorflow>=2.15,<2.22" if IS_TF2 else "tensorflow>=1.13.1,<1.16")


def _version(text):
    return tuple(int(v) for v in text.split(".")[:2])


def test_tensorflow_version_is_supported():
    assert tf_root.__version__ in SUPPORTED
    if IS_TF2:
        # setup.py's CPython range for 2.x; 1.x wheels exist only for 3.7.
        assert (3, 9) <= sys.version_info[:2] <= (3, 12)
        # The imported package is the distribution the constraints name
        # (the tf2 extra's one TensorFlow, which tf-keras requires).
        dist = pkg_resources.get_distribution("tensorflow")
    else:
        assert sys.version_info[:2] <= (3, 7)
        dist = pkg_resources.get_distribution("tensorflow")
    # The installed distribution is the one imported (not a stray copy).
    assert dist.version == tf_root.__version__


def test_numpy_fits_the_tensorflow_version():
    # numpy >= 1.17 makes TF 1.13 (and 1.14) print FutureWarnings on import;
    # TF 1.15.5 itself requires numpy < 1.19; TF 2.15 numpy < 2.
    if IS_TF2:
        below = (2, 0) if _version(tf_root.__version__) < (2, 18) else (3, 0)
    else:
        below = (1, 17) if _version(tf_root.__version__) < (1, 15) \
            else (1, 19)
    assert _version(np.__version__) < below


@pytest.mark.skipif(not os.environ.get("TF1_AWD_CONSTRAINTS"),
                    reason="set by the make test targets to the "
                           "environment's constraints file")
def test_installed_versions_match_the_constraints_file():
    path = os.environ["TF1_AWD_CONSTRAINTS"]
    with open(path) as f:
        lines = [line.split("#")[0].strip() for line in f]
    requirements = [pkg_resources.Requirement.parse(line)
                    for line in lines if line]
    assert any(r.project_name.startswith("tensorflow")
               for r in requirements), path
    for requirement in requirements:
        installed = pkg_resources.get_distribution(requirement.project_name)
        assert installed.version in requirement, (path, str(requirement))


def test_graph_mode(sess):
    assert not tf.executing_eagerly()
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_allclose(sess.run(tf.matmul(x, tf.transpose(x))), [[5.0]])


@needs_contrib
def test_contrib_quantize_on_tf1():
    import tensorflow.contrib.quantize as quantize  # noqa: F401
    assert callable(quantize.create_training_graph)
    assert callable(quantize.create_eval_graph)


@pytest.mark.skipif(not IS_TF2 or _version(tf_root.__version__) < (2, 16),
                    reason="Keras 3 is the default only from TF 2.16")
def test_keras_2_through_tf_keras():
    # The v1 RNN cells exist only with Keras 2; the make target sets this.
    assert os.environ.get("TF_USE_LEGACY_KERAS") == "1"
    import tf_keras
    assert tf_keras.__version__.startswith("2.")
    # The v1 cells resolve to tf_keras's (Keras 2) implementation.
    assert tf.nn.rnn_cell.RNNCell.__module__.startswith("tf_keras.")
