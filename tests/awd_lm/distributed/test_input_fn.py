"""The input pipeline of the distributed programs: BPTT batches as
consecutive windows of the streams, shards, repetition, against numpy."""
import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.distributed import input_fn


def test_bptt_batches_are_consecutive_windows_of_the_streams():
    ids = np.arange(103)
    inputs, targets = input_fn.bptt_batches(ids, batch_size=4, bptt=6)
    # 4 streams of 25 tokens: stream b is ids[25b : 25b + 25]; 24 input
    # positions make 4 full windows of 6.
    streams = ids[:100].reshape(4, 25)
    assert inputs.shape == targets.shape == (4, 4, 6)
    for w in range(4):
        np.testing.assert_array_equal(inputs[w], streams[:, 6 * w:6 * w + 6])
        np.testing.assert_array_equal(targets[w],
                                      streams[:, 6 * w + 1:6 * w + 7])
    assert inputs.dtype == np.int32


def test_bptt_batches_errors():
    with pytest.raises(ValueError, match="bptt"):
        input_fn.bptt_batches(np.arange(100), 2, 0)
    with pytest.raises(ValueError, match="too short"):
        input_fn.bptt_batches(np.arange(20), 2, 10)


def _windows(input_fn, sess, n):
    features, targets = input_fn().make_one_shot_iterator().get_next()
    return [sess.run([features["inputs"], targets]) for _ in range(n)]


def test_shards_are_disjoint_and_cover_every_window(sess):
    ids = np.arange(2 * 41)
    inputs, _ = input_fn.bptt_batches(ids, 2, 4)       # 10 windows
    seen = []
    for shard in range(3):
        fn = input_fn.make_input_fn(ids, 2, 4, num_shards=3,
                                     shard_index=shard, repeat=False)
        n = len(range(shard, 10, 3))
        got = _windows(fn, sess, n)
        for (x, _), w in zip(got, range(shard, 10, 3)):
            np.testing.assert_array_equal(x, inputs[w])
        seen.extend(range(shard, 10, 3))
    assert sorted(seen) == list(range(10))


def test_training_input_repeats(sess):
    ids = np.arange(2 * 21)
    fn = input_fn.make_input_fn(ids, 2, 4)               # 5 windows
    got = _windows(fn, sess, 6)
    np.testing.assert_array_equal(got[5][0], got[0][0])


def test_make_input_fn_errors():
    ids = np.arange(2 * 21)
    with pytest.raises(ValueError, match="shard_index"):
        input_fn.make_input_fn(ids, 2, 4, num_shards=2, shard_index=2)
    with pytest.raises(ValueError, match="cannot be shared by 9 workers"):
        input_fn.make_input_fn(ids, 2, 4, num_shards=9, shard_index=0)


def test_a_bad_bptt_is_named_first():
    with pytest.raises(ValueError, match="^bptt"):
        input_fn.bptt_batches(np.arange(100), 2, 0)
