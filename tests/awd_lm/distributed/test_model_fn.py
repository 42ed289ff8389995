"""The distributed programs' model function: its train step, its evaluation
graph, its mask-update hook, against hand-written expectations."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.distributed import model_fn
from support.lm import AWD_VD_PARAMS as PARAMS
from support.versions import needs_estimator


def test_mask_update_hook_argument():
    with pytest.raises(ValueError, match="every_n_steps"):
        model_fn.MaskUpdateHook(every_n_steps=0)


def test_eval_xent_graph_has_no_masks():
    x = tf.zeros([2, 5], tf.int32)
    xent = model_fn.eval_xent({"inputs": x}, x, PARAMS)
    assert xent.shape.ndims == 0
    assert not [v for v in tf.global_variables() + tf.local_variables()
                if "mask" in v.name]


@needs_estimator
def test_model_fn_eval_graph_has_no_masks_and_predicts():
    params = PARAMS
    x = tf.zeros([2, 5], tf.int32)
    spec = model_fn.model_fn({"inputs": x}, x, tf.estimator.ModeKeys.EVAL,
                              params)
    assert tf.local_variables() and not [
        v for v in tf.global_variables() + tf.local_variables()
        if "mask" in v.name]
    assert set(spec.eval_metric_ops) == {"xent", "perplexity"}
    with tf.Graph().as_default():
        spec = model_fn.model_fn({"inputs": tf.zeros([2, 5], tf.int32)},
                                  None, tf.estimator.ModeKeys.PREDICT,
                                  params)
        assert spec.predictions["logits"].shape.as_list() == [2, 5, 20]


@needs_estimator
def test_model_fn_train_spec_has_no_hooks_but_the_callers():
    x = tf.constant(np.arange(10).reshape(2, 5) % 20, tf.int32)
    spec = model_fn.model_fn({"inputs": x}, x, tf.estimator.ModeKeys.TRAIN,
                              PARAMS)
    assert not spec.training_hooks
    hook = model_fn.MaskUpdateHook()
    with tf.Graph().as_default():
        spec = model_fn.model_fn(
            {"inputs": tf.zeros([2, 5], tf.int32)},
            tf.zeros([2, 5], tf.int32), tf.estimator.ModeKeys.TRAIN,
            dict(PARAMS, training_hooks=lambda loss: [hook]))
        assert list(spec.training_hooks) == [hook]


def test_train_step_resamples_each_mask_once():
    """The masks' update ops run with the training step (UPDATE_OPS around
    the optimizer), once: no hook resamples them a second time."""
    x = tf.constant(np.arange(10).reshape(2, 5) % 20, tf.int32)
    loss, train_op = model_fn.train_step({"inputs": x}, x, PARAMS)
    assert loss.shape.ndims == 0
    masks = [v for v in tf.local_variables() if "weight_drop_mask" in v.name]
    assert len(masks) == 2
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    # Every update op is an ancestor of the train op.
    train = getattr(train_op, "op", train_op)
    seen, stack = set(), [train]
    while stack:
        op = stack.pop()
        if op not in seen:
            seen.add(op)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    assert all(u in seen for u in updates)
    step = tf.train.get_global_step()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(),
                  tf.local_variables_initializer()])
        for i in range(3):
            before = sess.run([m.read_value() for m in masks])
            sess.run(train_op)
            after = sess.run([m.read_value() for m in masks])
            assert all(not np.array_equal(b, a)
                       for b, a in zip(before, after))
            assert sess.run(step) == i + 1
