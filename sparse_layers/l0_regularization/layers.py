"""L0-regularized layers with hard-concrete gates (tf.layers style).

Each layer creates `kernel` (theta), `log_alpha` (normal init, mean 2.197 =
log(9), i.e. gates mostly open at first, stddev 0.01) and optionally
`bias`, and adds `(kernel, log_alpha)` to the `'theta_logalpha'` collection
read by `sparse_layers.losses` and `sparse_layers.report`. Called with
`training=True` the layer samples one gate per weight; with
`training=False` it scales the weights by the deterministic gate; a scalar
bool tensor picks at run time.
"""
import tensorflow as tf

from sparse_layers import _layers
from sparse_layers import common
from sparse_layers.common import BETA, EPSILON, GAMMA, ZETA
from sparse_layers.l0_regularization import nn

_L0 = _layers.Technique(aux_name="log_alpha",
                        collection=common.L0_COLLECTION, nn=nn,
                        train_args=("beta", "gamma", "zeta", "eps"),
                        eval_args=("gamma", "zeta"))


def _l0_options(beta, gamma, zeta, eps):
    return {"beta": beta, "gamma": gamma, "zeta": zeta, "eps": eps}


def _default_log_alpha_initializer():
    return tf.random_normal_initializer(mean=2.197, stddev=0.01)


class FullyConnected(_layers.FullyConnected):
    """Fully connected layer with L0 hard-concrete gated weights.

    Args:
      units: positive int, output width.
      activation: activation function, name or None.
      use_bias: whether to add a bias.
      kernel_initializer: initializer of theta (glorot uniform if None).
      bias_initializer: initializer of the bias (zeros if None).
      log_alpha_initializer: initializer of the gates' log_alpha (normal,
        mean 2.197, stddev 0.01 if None).
      beta, gamma, zeta: hard-concrete temperature and stretch interval.
      eps: numerical floor (see `sparse_layers.common.EPSILON`).
      trainable, name, **kwargs: as for `tf.layers.Layer`.

    Call: `layer(inputs, training=False)`; inputs [batch, ..., in].

    Raises:
      ValueError: non-positive `units`, or inputs without a known last
        dimension (at build).
    """

    TECHNIQUE = _L0

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None,
                 log_alpha_initializer=None, beta=BETA, gamma=GAMMA,
                 zeta=ZETA, eps=EPSILON, trainable=True, name=None,
                 **kwargs):
        super(FullyConnected, self).__init__(
            units, activation=activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            aux_initializer=(log_alpha_initializer
                             or _default_log_alpha_initializer()),
            technique_options=_l0_options(beta, gamma, zeta, eps),
            trainable=trainable, name=name, **kwargs)


class Conv2D(_layers.Conv2D):
    """2-D convolution with L0 hard-concrete gated weights.

    Args:
      filters: positive int, output channels.
      kernel_size: int or 2 ints.
      strides: int or 2 ints.
      padding: 'valid' or 'same' (any case).
      data_format: 'channels_last'/'NHWC' or 'channels_first'/'NCHW'.
      activation, use_bias, kernel_initializer, bias_initializer,
      log_alpha_initializer, beta, gamma, zeta, eps, trainable, name:
        as for `FullyConnected`.

    Call: `layer(inputs, training=False)`; inputs rank 4 in `data_format`.

    Raises:
      ValueError: bad `filters`, `kernel_size`, `strides`, `padding` or
        `data_format`; inputs not rank 4 (at build).
    """

    TECHNIQUE = _L0

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None,
                 log_alpha_initializer=None, beta=BETA, gamma=GAMMA,
                 zeta=ZETA, eps=EPSILON, trainable=True, name=None,
                 **kwargs):
        super(Conv2D, self).__init__(
            filters, kernel_size, strides=strides, padding=padding,
            data_format=data_format, activation=activation,
            use_bias=use_bias, kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            aux_initializer=(log_alpha_initializer
                             or _default_log_alpha_initializer()),
            technique_options=_l0_options(beta, gamma, zeta, eps),
            trainable=trainable, name=name, **kwargs)
