"""The L0 cells' own options (`layers.sparse.l0_regularization.rnn`):
``gamma`` and ``zeta`` stretch the gate evaluation scales the weights by,
so an `LSTMCell` / `RNNCell` at evaluation computes what TensorFlow's
LSTMCell / BasicRNNCell compute on the numpy weights
theta clip(sigmoid(log_alpha) (zeta - gamma) + gamma, 0, 1). The
machinery both techniques share: tests/layers/sparse/test_rnn.py."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers.l0_regularization import rnn as l0_rnn
from support.references import lstm_tolerance, sigmoid
from support.sparse import cell_against_tf_cell
from tf1_awd_sparse.ops.sparse.common import GAMMA, ZETA

BATCH, STEPS, INPUT, UNITS = 4, 5, 2, 3
#: A stretch under which every gate below is exactly 0 or 1: sigmoid(-1.5)
#: 1.7 - 0.4 < 0 and sigmoid(2) 1.7 - 0.4 > 1 (the default stretch makes
#: them 0.12 and 0.96), so the reference weights are theta or 0 exactly.
STRETCH = (-0.4, 1.3)
LOG_ALPHAS = [-50.0, -1.5, 2.0, 50.0]


@pytest.mark.parametrize("cell_cls,ref_cls,gates", [
    (l0_rnn.LSTMCell, tf.nn.rnn_cell.LSTMCell, 4),
    (l0_rnn.RNNCell, tf.nn.rnn_cell.BasicRNNCell, 1)])
def test_evaluation_gates_by_the_stretch(sess, cell_cls, ref_cls, gates):
    gamma, zeta = STRETCH
    rng = np.random.RandomState(0)
    shape = (INPUT + UNITS, gates * UNITS)
    theta = (0.5 * rng.randn(*shape)).astype(np.float32)
    log_alpha = rng.choice(LOG_ALPHAS, shape).astype(np.float32)
    bias = (0.1 * rng.randn(gates * UNITS)).astype(np.float32)
    gate = np.clip(sigmoid(log_alpha) * (zeta - gamma) + gamma, 0.0, 1.0)
    assert set(np.unique(gate)) == {0.0, 1.0}
    default = np.clip(sigmoid(log_alpha) * (ZETA - GAMMA) + GAMMA, 0.0, 1.0)
    assert not np.array_equal(gate, default)
    inputs = tf.constant(rng.randn(BATCH, STEPS, INPUT), tf.float32)
    cell = cell_cls((theta, log_alpha), bias, UNITS, training=False,
                    gamma=gamma, zeta=zeta)
    got, want = cell_against_tf_cell(sess, cell, ref_cls(UNITS), inputs,
                                     theta * gate.astype(np.float32), bias)
    np.testing.assert_allclose(got, want, rtol=0, atol=lstm_tolerance(
        tf.float32, evaluations=2, steps=STEPS, terms=INPUT + UNITS + 1))
