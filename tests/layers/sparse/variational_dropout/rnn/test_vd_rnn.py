"""The variational-dropout cells' own options
(`layers.sparse.variational_dropout.rnn`): ``threshold`` sets which
weights evaluation drops, so an `LSTMCell` / `RNNCell` at evaluation
computes what TensorFlow's LSTMCell / BasicRNNCell compute on the numpy
weights theta (log(alpha) < threshold). The machinery both techniques
share: tests/layers/sparse/test_rnn.py."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers.variational_dropout import rnn as vd_rnn
from support.references import lstm_tolerance
from support.sparse import cell_against_tf_cell
from tf1_awd_sparse.ops.sparse.common import EPSILON, THRESHOLD

BATCH, STEPS, INPUT, UNITS = 4, 5, 2, 3
#: log(alpha) values at least 1 from both thresholds below.
LOG_ALPHAS = [-3.0, 0.0, 2.0, 5.0]


@pytest.mark.parametrize("cell_cls,ref_cls,gates", [
    (vd_rnn.LSTMCell, tf.nn.rnn_cell.LSTMCell, 4),
    (vd_rnn.RNNCell, tf.nn.rnn_cell.BasicRNNCell, 1)])
@pytest.mark.parametrize("threshold", [THRESHOLD, 1.0])
def test_evaluation_drops_by_the_threshold(sess, cell_cls, ref_cls, gates,
                                           threshold):
    rng = np.random.RandomState(0)
    shape = (INPUT + UNITS, gates * UNITS)
    theta = (0.5 * rng.randn(*shape)).astype(np.float32)
    log_alpha = rng.choice(LOG_ALPHAS, shape)
    log_sigma2 = (log_alpha + np.log(theta.astype(np.float64) ** 2
                                     + EPSILON)).astype(np.float32)
    bias = (0.1 * rng.randn(gates * UNITS)).astype(np.float32)
    kept = theta * (log_alpha < threshold)
    assert 0 < np.count_nonzero(kept) < kept.size
    if threshold != THRESHOLD:
        assert not np.array_equal(kept, theta * (log_alpha < THRESHOLD))
    inputs = tf.constant(rng.randn(BATCH, STEPS, INPUT), tf.float32)
    cell = cell_cls((theta, log_sigma2), bias, UNITS, training=False,
                    threshold=threshold)
    got, want = cell_against_tf_cell(sess, cell, ref_cls(UNITS), inputs,
                                     kept, bias)
    np.testing.assert_allclose(got, want, rtol=0, atol=lstm_tolerance(
        tf.float32, evaluations=2, steps=STEPS, terms=INPUT + UNITS + 1))
