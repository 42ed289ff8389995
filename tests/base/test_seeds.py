"""`base.seeds.derived_seed`: one object's seed gives each of its random
ops a stream of its own (two ops never draw the same numbers), the same
streams in every graph of the same graph seed, and ``seed=None`` leaves
the ops to TensorFlow's graph-level seeding (different per op)."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base.seeds import derived_seed


def _draws(seeds, graph_seed=0):
    """One uniform draw of 8 values per op seed, in a fresh graph."""
    with tf.Graph().as_default():
        tf.set_random_seed(graph_seed)
        ops = [tf.random_uniform([8], seed=s) for s in seeds]
        with tf.Session() as session:
            return session.run(ops)


def test_each_op_of_one_seed_draws_its_own_stream():
    seeds = [derived_seed(7, offset) for offset in range(3)]
    first = _draws(seeds)
    for i in range(3):
        for j in range(i):
            assert not np.allclose(first[i], first[j])
    # The same seed in another graph: the same streams.
    for a, b in zip(first, _draws(seeds)):
        np.testing.assert_array_equal(a, b)
    # Another object's seed: other streams.
    assert not np.allclose(first[0], _draws([derived_seed(8, 0)])[0])


def test_no_seed_keeps_graph_level_seeding():
    assert derived_seed(None, 3) is None
    first, second = _draws([derived_seed(None, 0), derived_seed(None, 1)])
    assert not np.allclose(first, second)
    assert derived_seed(np.int64(5), 2) == 7
    assert type(derived_seed(np.int64(5), 2)) is int


def test_a_seed_that_int_refuses_is_an_error():
    with pytest.raises((TypeError, ValueError)):
        derived_seed("x", 0)
