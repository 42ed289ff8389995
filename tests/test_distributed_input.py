"""Input pipeline and command-line pieces of awd_lm.estimator (issue 7),
against numpy and hand-written expectations."""
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm import estimator
from local_cluster import free_ports, tf_config


def test_bptt_batches_are_consecutive_windows_of_the_streams():
    ids = np.arange(103)
    inputs, targets = estimator.bptt_batches(ids, batch_size=4, bptt=6)
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
        estimator.bptt_batches(np.arange(100), 2, 0)
    with pytest.raises(ValueError, match="too short"):
        estimator.bptt_batches(np.arange(20), 2, 10)


def _windows(input_fn, sess, n):
    features, targets = input_fn().make_one_shot_iterator().get_next()
    return [sess.run([features["inputs"], targets]) for _ in range(n)]


def test_shards_are_disjoint_and_cover_every_window(sess):
    ids = np.arange(2 * 41)
    inputs, _ = estimator.bptt_batches(ids, 2, 4)       # 10 windows
    seen = []
    for shard in range(3):
        fn = estimator.make_input_fn(ids, 2, 4, num_shards=3,
                                     shard_index=shard, repeat=False)
        n = len(range(shard, 10, 3))
        got = _windows(fn, sess, n)
        for (x, _), w in zip(got, range(shard, 10, 3)):
            np.testing.assert_array_equal(x, inputs[w])
        seen.extend(range(shard, 10, 3))
    assert sorted(seen) == list(range(10))


def test_training_input_repeats(sess):
    ids = np.arange(2 * 21)
    fn = estimator.make_input_fn(ids, 2, 4)               # 5 windows
    got = _windows(fn, sess, 6)
    np.testing.assert_array_equal(got[5][0], got[0][0])


def test_make_input_fn_errors():
    ids = np.arange(2 * 21)
    with pytest.raises(ValueError, match="shard_index"):
        estimator.make_input_fn(ids, 2, 4, num_shards=2, shard_index=2)
    with pytest.raises(ValueError, match="cannot be shared by 9 workers"):
        estimator.make_input_fn(ids, 2, 4, num_shards=9, shard_index=0)


def test_parse_hparams_types_and_errors():
    got = estimator.parse_hparams("emb_size=16, lr=2.5,variable_bptt=false")
    assert got == {"emb_size": 16, "lr": 2.5, "variable_bptt": False}
    assert estimator.parse_hparams("") == {}
    with pytest.raises(ValueError, match="nonsense"):
        estimator.parse_hparams("nonsense=1")
    with pytest.raises(ValueError, match="emb_size"):
        estimator.parse_hparams("emb_size")


def test_tf_config_and_free_ports():
    ports = free_ports(3)
    assert len(set(ports)) == 3
    cluster = {"ps": ["localhost:%d" % ports[0]],
               "chief": ["localhost:%d" % ports[1]],
               "worker": ["localhost:%d" % ports[2]]}
    config = json.loads(tf_config(cluster, "worker", 0))
    assert config == {"cluster": cluster,
                      "task": {"type": "worker", "index": 0}}
    with pytest.raises(ValueError, match="worker:1"):
        tf_config(cluster, "worker", 1)


def test_session_config_filters_devices_per_task():
    worker = estimator.session_config(1, "worker", 3)
    assert list(worker.device_filters) == ["/job:ps", "/job:worker/task:3"]
    single = estimator.session_config(1, num_cpus=2)
    assert list(single.device_filters) == []
    assert single.device_count["CPU"] == 2


def test_mask_update_hook_argument():
    with pytest.raises(ValueError, match="every_n_steps"):
        estimator.MaskUpdateHook(every_n_steps=0)


def test_model_fn_eval_graph_has_no_masks_and_predicts():
    params = dict(vocab_size=20, emb_size=4, hidden_size=6, num_layers=2,
                  model="awd", wdrop=0.5, use_vd=True, lr=1.0, clip=0.25)
    x = tf.zeros([2, 5], tf.int32)
    spec = estimator.model_fn({"inputs": x}, x, tf.estimator.ModeKeys.EVAL,
                              params)
    assert tf.local_variables() and not [
        v for v in tf.global_variables() + tf.local_variables()
        if "mask" in v.name]
    assert set(spec.eval_metric_ops) == {"xent", "perplexity"}
    with tf.Graph().as_default():
        spec = estimator.model_fn({"inputs": tf.zeros([2, 5], tf.int32)},
                                  None, tf.estimator.ModeKeys.PREDICT,
                                  params)
        assert spec.predictions["logits"].shape.as_list() == [2, 5, 20]


def test_model_fn_train_step_resamples_each_mask_once():
    """The masks' update ops run with the training step (UPDATE_OPS around
    the optimizer), once: no hook resamples them a second time."""
    params = dict(vocab_size=20, emb_size=4, hidden_size=6, num_layers=2,
                  model="awd", wdrop=0.5, use_vd=True, lr=1.0, clip=0.25)
    x = tf.constant(np.arange(10).reshape(2, 5) % 20, tf.int32)
    spec = estimator.model_fn({"inputs": x}, x, tf.estimator.ModeKeys.TRAIN,
                              params)
    assert not spec.training_hooks
    masks = [v for v in tf.local_variables() if "weight_drop_mask" in v.name]
    assert len(masks) == 2
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    # Every update op is an ancestor of the train op.
    train = getattr(spec.train_op, "op", spec.train_op)
    seen, stack = set(), [train]
    while stack:
        op = stack.pop()
        if op not in seen:
            seen.add(op)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    assert all(u in seen for u in updates)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(),
                  tf.local_variables_initializer()])
        for _ in range(3):
            before = sess.run([m.read_value() for m in masks])
            sess.run(spec.train_op)
            after = sess.run([m.read_value() for m in masks])
            assert all(not np.array_equal(b, a)
                       for b, a in zip(before, after))
