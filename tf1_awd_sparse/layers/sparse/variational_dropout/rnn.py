"""RNN and LSTM cells with sparse variational dropout weights.

After Lobacheva, Chirkova, Vetrov 2017 ("Bayesian Sparsification of
Recurrent Neural Networks"), in training the noise is drawn once per
`session.run` and held for all time steps:

* input-to-hidden part: local reparameterization with one noise vector
  per example and pre-activation unit, `x @ theta_x + sqrt(x^2 @ sigma2_x
  + eps) * noise_x` (noise_x of shape [batch, gates * num_units], hence a
  static batch size is needed);
* hidden-to-hidden part: one weight sample `W_h = theta_h + sigma_h *
  noise_h` shared by the batch.

At evaluation the weights with log(alpha) >= threshold are zeroed.
"""
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.base import _docs
from tf1_awd_sparse.base.control_flow import smart_cond
from tf1_awd_sparse.layers.sparse import _rnn
from tf1_awd_sparse.ops.sparse import common
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.ops.sparse.common import EPSILON, THRESHOLD
from tf1_awd_sparse.ops.sparse import variational_dropout as nn

__all__ = ["RNNCell", "LSTMCell"]


class _VDHeldWeights(_rnn.HeldWeights):
    """Input part by local reparameterization with per-example noise held
    over time steps, hidden part by one weight sample (module doc)."""

    def __init__(self, kernel_weights, training, clip_alpha, threshold, eps):
        super(_VDHeldWeights, self).__init__(
            techniques.get("variational_dropout"), kernel_weights, training,
            {"clip_alpha": clip_alpha, "threshold": threshold, "eps": eps})
        self.clip_alpha, self.eps = clip_alpha, eps

    def _train_fn(self, inputs, input_size):
        batch = dimension_value(inputs.shape[0])
        if batch is None:
            raise ValueError(
                "the variational-dropout RNN cell holds per-example input "
                "noise over time steps and needs a static batch size in "
                "training; got inputs of shape %s" % inputs.shape)
        theta, log_sigma2 = self.params
        log_sigma2 = common.clip_log_sigma2(log_sigma2, theta,
                                            self.clip_alpha, self.eps)
        theta_x, theta_h = _rnn.split_rows(theta, input_size)
        log_sigma2_x, log_sigma2_h = _rnn.split_rows(log_sigma2, input_size)
        noise_x = common.standard_normal([batch, tf.shape(theta)[1]],
                                         dtype=theta.dtype)
        weights_h = nn.train_weights((theta_h, log_sigma2_h), eps=self.eps)

        def preactivation(x, h):
            return (nn.matmul_train(x, (theta_x, log_sigma2_x),
                                    eps=self.eps, noise=noise_x)
                    + tf.matmul(h, weights_h))
        return preactivation

    def make(self, inputs, input_size):
        if self.training is False:
            return _rnn.concat_matmul(self.eval_weights())
        train_fn = self._train_fn(inputs, input_size)
        if self.training is True:
            return train_fn
        eval_fn = _rnn.concat_matmul(self.eval_weights())
        return lambda x, h: smart_cond(
            self.training, lambda: train_fn(x, h), lambda: eval_fn(x, h))


@_docs.append(_rnn.RNN_CELL_DOC)
class RNNCell(_rnn.SparseRNNCell):
    """Basic RNN cell `h' = activation([x, h] @ W + b)`, sparse VD weights.

    Args:
      kernel_weights: (theta, log_sigma2), see below.
      training: Python bool, scalar tf.bool tensor, or None; True (the
        default) trains: the noise is held over time steps (see module doc)
        and the static batch size of the inputs must be known, otherwise
        the first call raises ValueError. Pass False to evaluate.
      clip_alpha: None, or clip log(alpha) to [-clip_alpha, clip_alpha] in
        training.
      threshold: at evaluation, weights with log(alpha) >= threshold are 0.
      eps: numerical floor.
    """

    def __init__(self, kernel_weights, bias_weights, num_units,
                 training=True, clip_alpha=None, threshold=THRESHOLD,
                 eps=EPSILON, activation=None, reuse=None, name=None):
        super(RNNCell, self).__init__(
            _VDHeldWeights(kernel_weights, training, clip_alpha, threshold,
                         eps), bias_weights, num_units,
            activation=activation, reuse=reuse, name=name)


@_docs.append(_rnn.LSTM_CELL_DOC)
class LSTMCell(_rnn.SparseLSTMCell):
    """LSTM cell (gate layout of `tf.nn.rnn_cell.LSTMCell`), sparse VD.

    Args:
      kernel_weights: (theta, log_sigma2), see below.
      training, clip_alpha, threshold, eps: as for `RNNCell`.
    """

    def __init__(self, kernel_weights, bias_weights, num_units,
                 training=True, clip_alpha=None, threshold=THRESHOLD,
                 eps=EPSILON, forget_bias=1.0, activation=None, reuse=None,
                 name=None):
        super(LSTMCell, self).__init__(
            _VDHeldWeights(kernel_weights, training, clip_alpha, threshold,
                         eps), bias_weights, num_units,
            forget_bias=forget_bias, activation=activation, reuse=reuse,
            name=name)
