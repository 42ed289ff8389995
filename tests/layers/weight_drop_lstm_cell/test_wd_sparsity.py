"""WeightDropLSTMCell(sparsity=...) with the sparse_layers ops, losses and
report; references are numpy formulas of the issue's math."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import losses, report, techniques
from support.references import (DEPTH, UNITS, lstm_inputs, lstm_tolerance,
                                np_lstm, sigmoid)
from support.tolerances import transcendental_rtol
from weight_drop_lstm import WeightDropLSTMCell

TECHNIQUES = {
    "variational_dropout": ("log_sigma2", losses.kl_loss),
    "l0": ("log_alpha", losses.l0_loss),
}


def _np_eval_kernel(sparsity, theta, aux):
    if sparsity == "variational_dropout":
        log_alpha = aux - np.log(theta ** 2 + 1e-8)
        return theta * (log_alpha < 3.0)
    return theta * np.clip(sigmoid(aux) * 1.2 - 0.1, 0.0, 1.0)


@pytest.mark.parametrize("sparsity", sorted(TECHNIQUES))
def test_eval_uses_the_techniques_eval_weights(sess, sparsity):
    x = lstm_inputs(tf.float64)
    cell = WeightDropLSTMCell(UNITS, sparsity=sparsity, is_train=False,
                              weight_drop_kr=0.5, dtype=tf.float64)
    out = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)[0]
    aux_name, _ = TECHNIQUES[sparsity]
    aux = cell.sparse_aux_variable
    assert aux.op.name == "rnn/lstm_cell/" + aux_name
    assert techniques.registered_pairs(sparsity) == [(cell._kernel, aux)]
    sess.run(tf.global_variables_initializer())
    # Spread aux so that part of the weights are zero at eval.
    rng = np.random.RandomState(0)
    sess.run(aux.assign(rng.uniform(-6, 4, aux.get_shape().as_list())))
    theta, aux_v, bias = sess.run([cell._kernel, aux, cell._bias])
    want_kernel = _np_eval_kernel(sparsity, theta, aux_v)
    assert 0 < (want_kernel == 0).mean() < 1
    # float64 theta times a 0/1 mask (VD: exact) or a clipped sigmoid
    # gate (L0: TF's sigmoid against numpy's, a few ulp, times |theta|).
    np.testing.assert_allclose(
        sess.run(cell.effective_kernel), want_kernel, rtol=0,
        atol=np.abs(theta).max() * transcendental_rtol(np.float64, 2))
    np.testing.assert_allclose(sess.run(out),
                               np_lstm(sess.run(x), want_kernel, bias),
                               atol=lstm_tolerance(tf.float64))


@pytest.mark.parametrize("sparsity", sorted(TECHNIQUES))
def test_training_sample_held_over_steps_with_drop_connect(sess, sparsity):
    x = lstm_inputs(tf.float64)
    cell = WeightDropLSTMCell(UNITS, sparsity=sparsity, weight_drop_kr=0.5,
                              seed=1, dtype=tf.float64)
    out = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)[0]
    sess.run(tf.global_variables_initializer())
    aux = cell.sparse_aux_variable
    if sparsity == "variational_dropout":
        # Large enough noise to see; the default -10 is almost none.
        sess.run(aux.assign(tf.fill(tf.shape(aux),
                                    tf.constant(-2.0, aux.dtype))))
    bias, theta = sess.run([cell._bias, cell._kernel])
    kernels = []
    for _ in range(2):
        outputs, kernel = sess.run([out, cell.effective_kernel])
        # One weight sample for every step and example of the run.
        np.testing.assert_allclose(outputs,
                                   np_lstm(sess.run(x), kernel, bias),
                                   atol=lstm_tolerance(tf.float64))
        assert not np.allclose(kernel[DEPTH:], theta[DEPTH:])
        kernels.append(kernel)
    assert not np.array_equal(kernels[0], kernels[1])
    if sparsity == "variational_dropout":
        # DropConnect on top: the hidden rows have exact zeros, the input
        # rows (a continuous sample) have none.
        assert (kernels[0][DEPTH:] == 0).any()
        assert not (kernels[0][:DEPTH] == 0).any()


def _train_sparsity(sparsity, penalty_weight, steps=12):
    """Trains a small cell; returns (penalty before, zero fraction after)."""
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(0)
        cell = WeightDropLSTMCell(UNITS, sparsity=sparsity,
                                  weight_drop_kr=0.8, seed=2)
        outputs = tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)[0]
        data_loss = tf.reduce_mean(tf.square(outputs - 0.3))
        penalty = TECHNIQUES[sparsity][1](weight=1.0, summaries=False)
        loss = data_loss + penalty_weight * penalty
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        zeros = report.sparsity_report(summaries=False)["global"]
        config = tf.ConfigProto(intra_op_parallelism_threads=1,
                                inter_op_parallelism_threads=1)
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(tf.global_variables_initializer())
            first_penalty = sess.run(penalty)
            for _ in range(steps):
                assert np.isfinite(sess.run([loss, train])[0])
            return first_penalty, sess.run(zeros)


@pytest.mark.parametrize("sparsity", sorted(TECHNIQUES))
def test_penalty_is_nonzero_and_heavy_weight_raises_sparsity(sparsity):
    penalty, light = _train_sparsity(sparsity, 0.0)
    assert penalty > 0
    _, heavy = _train_sparsity(sparsity, 100.0)
    assert light < 0.05
    assert heavy > light + 0.3


def test_sparsity_errors():
    with pytest.raises(ValueError, match="num_unit_shards"):
        WeightDropLSTMCell(UNITS, sparsity="l0", num_unit_shards=2)
    with pytest.raises(ValueError, match="sparsity"):
        WeightDropLSTMCell(UNITS, sparsity="L0")
    cell = WeightDropLSTMCell(UNITS, sparsity="l0", seed=1)
    clone = WeightDropLSTMCell.from_config(cell.get_config())
    assert clone.get_config()["sparsity"] == "l0"
