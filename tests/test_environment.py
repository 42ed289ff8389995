"""The environment the suite runs in: a supported TensorFlow 1.x (1.13.1 by
default, 1.15.5 with `make test-tf115`) in graph mode, with the numpy that
version needs; under make, exactly the pins of the environment's
constraints file."""
import os

import numpy as np
import pkg_resources
import pytest
import tensorflow as tf

# As declared in setup.py.
SUPPORTED = pkg_resources.Requirement.parse("tensorflow>=1.13.1,<1.16")


def _version(text):
    return tuple(int(v) for v in text.split(".")[:2])


def test_tensorflow_version_is_supported():
    assert tf.__version__ in SUPPORTED
    # The installed distribution is the one imported (not a stray copy).
    assert pkg_resources.get_distribution("tensorflow").version == \
        tf.__version__


def test_numpy_fits_the_tensorflow_version():
    # numpy >= 1.17 makes TF 1.13 (and 1.14) print FutureWarnings on import;
    # TF 1.15.5 itself requires numpy < 1.19.
    below = (1, 17) if _version(tf.__version__) < (1, 15) else (1, 19)
    assert _version(np.__version__) < below


@pytest.mark.skipif(not os.environ.get("TF1_AWD_CONSTRAINTS"),
                    reason="set by `make test` / `make test-tf115` to the "
                           "environment's constraints file")
def test_installed_versions_match_the_constraints_file():
    path = os.environ["TF1_AWD_CONSTRAINTS"]
    with open(path) as f:
        lines = [line.split("#")[0].strip() for line in f]
    requirements = [pkg_resources.Requirement.parse(line)
                    for line in lines if line]
    assert any(r.project_name == "tensorflow" for r in requirements), path
    for requirement in requirements:
        installed = pkg_resources.get_distribution(requirement.project_name)
        assert installed.version in requirement, (path, str(requirement))


def test_graph_mode_and_contrib_quantize(sess):
    assert not tf.executing_eagerly()
    import tensorflow.contrib.quantize as quantize  # noqa: F401
    assert callable(quantize.create_training_graph)
    assert callable(quantize.create_eval_graph)
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_allclose(sess.run(tf.matmul(x, tf.transpose(x))), [[5.0]])
