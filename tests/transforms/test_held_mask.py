"""`transforms.held_mask.train_op_with_updates`: a training step that
trains on the held masks it reads and then resamples them (a plain
``minimize`` never does), with its ``var_list`` and
``updates_collection`` arguments and its argument errors."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from variational_dropout import VariationalDropout, train_op_with_updates


def _held_mask_model():
    """A held-mask layer over held-mask dropout, with its loss."""
    from weight_drop_lstm import WeightDropLSTM
    x = tf.constant(np.random.RandomState(0).randn(3, 4, 5), tf.float32)
    vd = VariationalDropout([5], 0.5, seed=1)
    layer = WeightDropLSTM(6, weight_drop_kr=0.5, use_vd=True, seed=2)
    out, _ = layer(vd(x))
    return vd, layer, tf.reduce_mean(tf.square(out - 0.3))


@pytest.mark.parametrize("helper", [True, False])
def test_train_op_with_updates_resamples_held_masks(sess, helper):
    vd, layer, loss = _held_mask_model()
    step = tf.train.get_or_create_global_step()
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    train = (train_op_with_updates(optimizer, loss, global_step=step)
             if helper else optimizer.minimize(loss, global_step=step))
    masks = [vd.mask, layer.cell.mask_variable]
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    for i in range(3):
        before = sess.run(masks)
        _, used = sess.run([train, layer.effective_kernel])
        after = sess.run(masks)
        # The step trains on the current mask (the update runs after its
        # reads) ...
        np.testing.assert_array_equal(used[5:] == 0, before[1] == 0)
        # ... and leaves a new one with the helper; a plain minimize never
        # resamples.
        for old, new in zip(before, after):
            assert np.array_equal(old, new) != helper
    assert sess.run(step) == 3


def test_train_op_with_updates_arguments(sess):
    vd, layer, loss = _held_mask_model()
    trainable = layer.trainable_variables[:1]
    train = train_op_with_updates(tf.train.GradientDescentOptimizer(0.1),
                                  loss, var_list=trainable,
                                  updates_collection=None)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    before = sess.run([vd.mask] + layer.trainable_variables)
    sess.run(train)
    after = sess.run([vd.mask] + layer.trainable_variables)
    np.testing.assert_array_equal(before[0], after[0])  # no updates
    assert not np.array_equal(before[1], after[1])       # the kernel
    np.testing.assert_array_equal(before[2], after[2])  # not in var_list
    with pytest.raises(TypeError, match="optimizer must be"):
        train_op_with_updates("sgd", loss)
    with pytest.raises(TypeError, match="loss"):
        train_op_with_updates(tf.train.GradientDescentOptimizer(0.1),
                              tf.constant(1))
