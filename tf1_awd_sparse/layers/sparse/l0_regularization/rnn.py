"""RNN and LSTM cells with L0 hard-concrete gated weights.

In training one gate per weight is sampled once per `session.run` and held
for all time steps (the gated kernel is built outside the `dynamic_rnn`
loop); at evaluation the kernel is scaled by the deterministic gate
`hard_concrete_mean(log_alpha)`.
"""
from tf1_awd_sparse.base import _docs
from tf1_awd_sparse.layers.sparse import _rnn
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.ops.sparse.common import BETA, EPSILON, GAMMA, ZETA

__all__ = ["RNNCell", "LSTMCell"]


def _l0_held_weights(kernel_weights, training, beta, gamma, zeta, eps):
    return _rnn.HeldWeights(techniques.get("l0"), kernel_weights, training,
                            {"beta": beta, "gamma": gamma, "zeta": zeta,
                             "eps": eps})


@_docs.append(_rnn.RNN_CELL_DOC)
class RNNCell(_rnn.SparseRNNCell):
    """Basic RNN cell `h' = activation([x, h] @ W + b)`, L0-gated weights.

    Args:
      training: Python bool, scalar tf.bool tensor, or None; True (the
        default) trains: the gates are sampled once per run and held over
        time steps. Pass False to evaluate.
      kernel_weights: (theta, log_alpha), see below.
      beta, gamma, zeta: hard-concrete temperature and stretch interval.
      eps: numerical floor.
    """

    def __init__(self, kernel_weights, bias_weights, num_units,
                 training=True, beta=BETA, gamma=GAMMA, zeta=ZETA,
                 eps=EPSILON, activation=None, reuse=None, name=None):
        super(RNNCell, self).__init__(
            _l0_held_weights(kernel_weights, training, beta, gamma, zeta, eps),
            bias_weights, num_units, activation=activation, reuse=reuse,
            name=name)


@_docs.append(_rnn.LSTM_CELL_DOC)
class LSTMCell(_rnn.SparseLSTMCell):
    """LSTM cell (gate layout of `tf.nn.rnn_cell.LSTMCell`), L0-gated.

    Args:
      kernel_weights: (theta, log_alpha), see below.
      training, beta, gamma, zeta, eps: as for `RNNCell`.
    """

    def __init__(self, kernel_weights, bias_weights, num_units,
                 training=True, beta=BETA, gamma=GAMMA, zeta=ZETA,
                 eps=EPSILON, forget_bias=1.0, activation=None, reuse=None,
                 name=None):
        super(LSTMCell, self).__init__(
            _l0_held_weights(kernel_weights, training, beta, gamma, zeta, eps),
            bias_weights, num_units, forget_bias=forget_bias,
            activation=activation, reuse=reuse, name=name)
