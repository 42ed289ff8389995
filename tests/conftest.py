"""Shared test setup: a quiet TensorFlow and a fresh graph per test."""
import os
import sys

import tf1_awd_sparse._quiet  # noqa: F401  (before TensorFlow is imported)

# Harnesses the tests share with the examples (LocalCluster) live there,
# outside the library's import path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "examples"))

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

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
