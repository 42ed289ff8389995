"""The pruning-mask kernel transform: a fixed mask that keeps pruned weights
exactly zero through DropConnect and fake quantization, and that
a gradual magnitude schedule drives: the library's MagnitudePruning
(tests/transforms/test_magnitude_pruning.py) or, on TF 1.x, tf.contrib.model_pruning,
its reference (the contrib test below)."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.transforms.kernel import PRUNING_MASKS
from support.versions import contrib, needs_contrib
from weight_drop_lstm import WeightDropLSTMCell

B, T, D, N = 3, 4, 5, 6


def _inputs():
    return tf.constant(np.random.RandomState(0).randn(B, T, D), tf.float32)


def _random_mask(fraction_zero, seed=1):
    rng = np.random.RandomState(seed)
    return (rng.rand(D + N, 4 * N) >= fraction_zero).astype(np.float32)


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(weight_drop_kr=0.5),
    dict(weight_drop_kr=0.5, use_vd=True, drop_input_weights=True),
    dict(is_quant=True),
    dict(is_quant=True, weight_drop_kr=0.5),
    dict(sparsity="l0", weight_drop_kr=0.7),
], ids=["plain", "dropconnect", "held", "quant", "quant_dropconnect", "l0"])
@pytest.mark.parametrize("training", [True, False])
def test_pruned_weights_stay_exactly_zero(sess, kwargs, training):
    flag = tf.placeholder_with_default(training, [])
    cell = WeightDropLSTMCell(N, pruning_mask=True, is_train=flag, seed=2,
                              **kwargs)
    out, _ = tf.nn.dynamic_rnn(cell, _inputs(), dtype=tf.float32)
    loss = tf.reduce_sum(tf.square(out))
    assert cell.pruning_mask_variable in tf.get_collection(PRUNING_MASKS)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    mask = _random_mask(0.6)
    cell.pruning_mask_variable.load(mask, sess)
    kernel = [v for v in cell.weights if v.op.name.endswith("/kernel")][0]
    effective, grads = sess.run([cell.effective_kernel,
                                 tf.gradients(loss, kernel)[0]])
    assert np.all(effective[mask == 0] == 0.0)
    assert np.all(grads[mask == 0] == 0.0)  # pruned weights get no update
    if not kwargs and not training:
        np.testing.assert_array_equal(effective, sess.run(kernel) * mask)


def test_mask_is_model_state_in_checkpoints(tmp_path):
    path = str(tmp_path / "pruned.ckpt")
    mask = _random_mask(0.8)
    with tf.Graph().as_default():
        cell = WeightDropLSTMCell(N, pruning_mask=True, is_train=False)
        out, _ = tf.nn.dynamic_rnn(cell, _inputs(), dtype=tf.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            cell.pruning_mask_variable.load(mask, sess)
            expected = sess.run(out)
            tf.train.Saver().save(sess, path)
    names = dict(tf.train.list_variables(path))
    assert "rnn/lstm_cell/pruning_mask" in names
    with tf.Graph().as_default():
        cell = WeightDropLSTMCell(N, pruning_mask=True, is_train=False)
        out, _ = tf.nn.dynamic_rnn(cell, _inputs(), dtype=tf.float32)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_array_equal(sess.run(out), expected)


@needs_contrib
def test_model_pruning_schedule_prunes_the_kernel_by_magnitude(sess):
    step = tf.train.get_or_create_global_step()
    cell = WeightDropLSTMCell(N, pruning_mask=True, weight_drop_kr=0.8)
    out, _ = tf.nn.dynamic_rnn(cell, _inputs(), dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(out - 0.3))
    hparams = contrib.model_pruning.get_pruning_hparams().parse(
        "name=test,begin_pruning_step=0,end_pruning_step=20,"
        "target_sparsity=0.75,pruning_frequency=2,"
        "sparsity_function_begin_step=0,sparsity_function_end_step=20")
    pruning = contrib.model_pruning.Pruning(hparams, global_step=step)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, step)
    with tf.control_dependencies([train]):
        update = pruning.conditional_mask_update_op()
    kernel = [v for v in cell.weights if v.op.name.endswith("/kernel")][0]
    sess.run(tf.global_variables_initializer())
    for _ in range(25):
        sess.run(update)
    mask, weights, effective = sess.run(
        [cell.pruning_mask_variable, kernel, cell.effective_kernel])
    assert abs((mask == 0).mean() - 0.75) < 0.02
    # The mask keeps the largest magnitudes (as of the last update).
    kept, pruned = np.abs(weights[mask == 1]), np.abs(weights[mask == 0])
    assert kept.min() >= np.percentile(pruned, 90)
    assert np.all(effective[mask == 0] == 0.0)
