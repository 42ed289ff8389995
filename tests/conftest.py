"""Shared test setup: a quiet TensorFlow and a fresh graph per test."""
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

# Harnesses the tests share with the examples (LocalCluster) live there,
# outside the library's import path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "examples"))

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.util import deprecation  # noqa: E402

# tf.compat.v1.logging: on 1.15 the tf.logging name logs a deprecation
# warning itself.
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access

SHARED_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                           "data")


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test builds into its own default graph, so names never leak."""
    graph = tf.Graph()
    with graph.as_default():
        yield graph


@pytest.fixture
def sess(fresh_graph):
    """A session on the test's graph; single-threaded ops keep 2 cores free."""
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    with tf.Session(graph=fresh_graph, config=config) as session:
        yield session
