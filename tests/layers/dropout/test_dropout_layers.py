"""VariationalDropout, locked_dropout and embedding_dropout against numpy.

Statistical checks use fixed seeds; tolerances are stated where used.
"""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from variational_dropout import (VariationalDropout, embedding_dropout,
                                 locked_dropout)
from support.tolerances import U32


def test_mask_is_sampled_at_init_and_applied_with_scaling(sess):
    keep = 0.5
    vd = VariationalDropout(input_shape=[2000], keep_prob=keep, seed=1)
    x = tf.constant(np.random.RandomState(0).randn(3, 2000), tf.float32)
    y = vd(x)
    # The mask is a local variable (per process, never in a checkpoint).
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    mask, got, xv = sess.run([vd.mask, y, x])
    assert set(np.unique(mask)) == {0.0, 1.0}
    # 2000 Bernoulli(0.5) draws: std of the mean 0.011; 0.06 is > 5 std.
    assert abs(mask.mean() - keep) < 0.06
    # One mask for every batch row (broadcast), kept entries scaled: a 0/1
    # mask and a division by 0.5 (a power of two) are exact (was rtol 1e-6).
    np.testing.assert_array_equal(got, xv * mask / keep)
    assert vd.mask not in tf.trainable_variables()


def test_port_pattern_update_changes_mask_only_when_run(sess):
    vd = VariationalDropout(input_shape=[5], keep_prob=0.5)
    y = vd(tf.ones([2, 5]))
    updates = vd.get_update_mask_op()
    n_ops = len(tf.get_default_graph().get_operations())
    assert vd.get_update_mask_op() == updates and len(updates) == 1
    assert len(tf.get_default_graph().get_operations()) == n_ops
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == updates
    sess.run(tf.global_variables_initializer())
    tf.get_default_graph().finalize()
    seen = [sess.run(y)]
    seen.append(sess.run(y))
    np.testing.assert_array_equal(seen[0], seen[1])
    changed = 0
    for _ in range(6):  # P(5-entry mask unchanged) = 1/32 per update
        sess.run(vd.get_update_mask_op())
        changed += not np.array_equal(sess.run(y), seen[-1])
        seen.append(sess.run(y))
    assert changed >= 3
    # A 0/1 mask divided by 0.5: exact.
    np.testing.assert_array_equal(seen[-1], [sess.run(vd.mask) * 2.0] * 2)


def test_training_switch_bool_and_tensor(sess):
    vd = VariationalDropout([50], 0.5, dtype=tf.float64, seed=3)
    x = tf.constant(np.arange(1.0, 101.0).reshape(2, 50))  # float64
    training = tf.placeholder_with_default(True, [])
    off = vd(x, training=False)
    switched = vd(x, training=training)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    xv, mask = sess.run([x, vd.mask])
    np.testing.assert_array_equal(sess.run(off), xv)
    # Times a 0/1 mask, divided by 0.5: exact.
    np.testing.assert_array_equal(sess.run(switched), xv * mask * 2.0)
    np.testing.assert_array_equal(sess.run(switched, {training: False}), xv)
    with pytest.raises(ValueError, match="training"):
        vd(x, training=tf.constant([True, False]))


def test_resource_variables_as_training_flag_and_keep_prob(sess):
    # On TensorFlow 2.x a resource variable is not a tf.compat.v1.Variable
    # (that is the ref variables' class): the checks must take it anyway.
    vd = VariationalDropout([50], 0.5, seed=3)
    x = tf.constant(np.arange(1.0, 101.0).reshape(2, 50), tf.float32)
    training = tf.get_variable("training", [], tf.bool, use_resource=True,
                               initializer=tf.constant_initializer(True))
    keep = tf.get_variable("keep", [], tf.float32, use_resource=True,
                           initializer=tf.constant_initializer(0.25))
    y = vd(x, training=training)
    params = tf.constant(np.arange(1.0, 41.0).reshape(20, 2), tf.float32)
    ids = tf.constant(np.arange(20), tf.int64)
    emb = embedding_dropout(params, ids, keep, seed=4)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    xv, mask = sess.run([x, vd.mask])
    # Times a 0/1 mask, divided by 0.5 and by 0.25 (powers of two): exact.
    np.testing.assert_array_equal(sess.run(y), xv * mask * 2.0)
    got = sess.run(emb)
    kept = (got != 0).all(-1)
    np.testing.assert_array_equal(got[kept], sess.run(params)[kept] * 4.0)
    sess.run(training.assign(False))
    np.testing.assert_array_equal(sess.run(y), xv)


def test_inside_while_loop_same_mask_and_update_before_loop(sess):
    vd = VariationalDropout([4, 6], 0.5, seed=7)
    update = vd.get_update_mask_op()

    def body(t, acc):
        return t + 1, acc.write(t, vd(tf.ones([4, 6])))

    with tf.control_dependencies(update):
        _, acc = tf.while_loop(lambda t, _: t < 5, body,
                               (0, tf.TensorArray(tf.float32, 5)))
    steps = acc.stack()
    sess.run(tf.global_variables_initializer())
    for _ in range(2):
        out = sess.run(steps)
        for t in range(1, 5):
            np.testing.assert_array_equal(out[t], out[0])
        # The update ran before the loop: the loop used the current mask.
        np.testing.assert_array_equal(out[0], sess.run(vd.mask) * 2.0)


def test_same_name_twice_gets_unique_scopes(sess):
    a = VariationalDropout([3], 0.5, name="drop")
    b = VariationalDropout([3], 0.5, name="drop")
    assert a.mask.name != b.mask.name
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2


@pytest.mark.parametrize("keep", [0.0, 1.5, -0.1, True, "0.5", None])
def test_bad_keep_prob(keep):
    with pytest.raises(ValueError, match="keep_prob"):
        VariationalDropout([3], keep)
    with pytest.raises(ValueError, match="keep_prob"):
        locked_dropout(tf.ones([2, 3, 4]), keep)


def test_shape_errors():
    with pytest.raises(ValueError, match="input_shape"):
        VariationalDropout([None, 3], 0.5)
    vd = VariationalDropout([3], 0.5)
    with pytest.raises(ValueError, match="broadcast"):
        vd(tf.ones([2, 4]))


@pytest.mark.parametrize("time_axis", [1, 0])
def test_locked_dropout_one_mask_per_sequence(sess, time_axis):
    keep = 0.6
    shape = [40, 7, 30] if time_axis == 1 else [7, 40, 30]
    x = tf.constant(np.random.RandomState(2).rand(*shape) + 0.5, tf.float32)
    y = locked_dropout(x, keep, time_axis=time_axis, seed=4)
    xv, a, b = sess.run(x), sess.run(y), sess.run(y)
    if time_axis == 0:
        xv, a, b = (np.swapaxes(v, 0, 1) for v in (xv, a, b))
    kept = a != 0
    # The same mask at every step of each sequence...
    for t in range(1, 7):
        np.testing.assert_array_equal(kept[:, t], kept[:, 0])
    # x * mask / 0.6 against x / 0.6: a rounding each, and one more if the
    # mask is scaled first (mask / keep): 3 u relative (was rtol 1e-6).
    np.testing.assert_allclose(a[kept], xv[kept] / keep, rtol=3 * U32)
    # ...but differing across examples; 1200 Bernoulli(0.6) draws: std of
    # the mean 0.014, 0.07 is 5 std.
    assert abs(kept[:, 0].mean() - keep) < 0.07
    assert not np.array_equal(kept[0, 0], kept[1, 0])
    assert not np.array_equal(a, b)  # a new mask each run


def test_locked_dropout_eval_and_errors(sess):
    x = tf.ones([2, 3, 4])
    training = tf.placeholder_with_default(True, [])
    y = locked_dropout(x, 0.5, training=training, seed=1)
    np.testing.assert_array_equal(sess.run(y, {training: False}),
                                  np.ones([2, 3, 4]))
    np.testing.assert_array_equal(sess.run(locked_dropout(x, 0.5, False)),
                                  np.ones([2, 3, 4]))
    with pytest.raises(ValueError, match="time_axis"):
        locked_dropout(x, 0.5, time_axis=3)
    with pytest.raises(ValueError, match="rank"):
        locked_dropout(tf.ones([4]), 0.5)


def test_embedding_dropout_drops_whole_words_once_per_run(sess):
    vocab, depth, keep = 500, 8, 0.7
    params = tf.get_variable("emb", [vocab, depth],
                             initializer=tf.random_uniform_initializer(
                                 0.5, 1.0, seed=1))
    ids = tf.constant(np.tile(np.arange(vocab), 2).reshape(2, vocab),
                      tf.int64)
    y = embedding_dropout(params, ids, keep, seed=3)
    # Cost: no tensor of vocabulary x depth is ever built besides params.
    for op in tf.get_default_graph().get_operations():
        if op.name.startswith("embedding_dropout"):
            for out in op.outputs:
                assert out.get_shape().as_list() != [vocab, depth], op.name
    sess.run(tf.global_variables_initializer())
    pv, a, b = sess.run(params), sess.run(y), sess.run(y)
    dropped = (a == 0).all(-1)
    assert ((a == 0).any(-1) == dropped).all()  # whole vectors only
    np.testing.assert_array_equal(dropped[0], dropped[1])  # per word
    # row * mask / 0.7 against row / 0.7: a rounding each, and one more if
    # the mask is scaled first: 3 u relative (was rtol 1e-6).
    np.testing.assert_allclose(a[~dropped], (pv[None] / keep)
                               .repeat(2, 0)[~dropped], rtol=3 * U32)
    # 500 Bernoulli(0.3) words: std 0.02, tolerance 0.1 is 5 std.
    assert abs(dropped[0].mean() - (1 - keep)) < 0.1
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(
        sess.run(embedding_dropout(params, ids, keep, training=False)),
        pv[ids.eval(session=sess)])


def test_embedding_dropout_with_sharded_params(sess):
    shards = [tf.constant(np.arange(12.0).reshape(6, 2) + 100 * k)
              for k in range(2)]
    ids = tf.constant([0, 1, 2, 3, 11, 11], tf.int32)
    y = embedding_dropout(shards, ids, 0.5, seed=2)
    plain = tf.nn.embedding_lookup(shards, ids)
    got, want = sess.run([y, plain])
    kept = (got != 0).all(-1)
    # float64 rows divided by 0.5: exact.
    np.testing.assert_array_equal(got[kept], want[kept] * 2.0)
    assert kept[4] == kept[5]
    with pytest.raises(ValueError, match="ids"):
        embedding_dropout(shards, tf.constant([0.0]), 0.5)


@pytest.mark.parametrize("entry", ["locked_dropout", "embedding_dropout",
                                   "l0_dense"])
def test_training_flag_of_unknown_rank_is_checked_when_run(sess, entry):
    """The one training-flag rule (_checks.check_training): a bool tensor
    of unknown rank is asserted to be a scalar when the graph runs, at
    every entry point, and works when it is one."""
    from sparse_layers.l0_regularization import layers as l0_layers
    training = tf.placeholder(tf.bool)
    x = tf.ones([2, 3, 4])
    if entry == "locked_dropout":
        out = locked_dropout(x, 0.5, training=training)
    elif entry == "embedding_dropout":
        out = embedding_dropout(tf.ones([5, 4]), tf.constant([[0, 1]]), 0.5,
                                training=training)
    else:
        out = l0_layers.FullyConnected(2)(tf.ones([3, 4]), training=training)
    sess.run(tf.global_variables_initializer())
    assert np.isfinite(sess.run(out, {training: False})).all()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="training must be a scalar bool"):
        sess.run(out, {training: [True, False]})
