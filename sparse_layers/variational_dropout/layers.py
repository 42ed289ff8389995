"""Sparse variational dropout layers (tf.layers style).

Each layer creates `kernel` (theta), `log_sigma2` (initialised to -10, i.e.
almost no noise at first) and optionally `bias`, and adds
`(kernel, log_sigma2)` to the `'theta_logsigma2'` collection read by
`sparse_layers.losses` and `sparse_layers.report`. Called with
`training=True` the layer samples by local reparameterization; with
`training=False` it uses the masked weights; a scalar bool tensor picks at
run time.
"""
import tensorflow as tf

from sparse_layers import _layers
from sparse_layers import common
from sparse_layers.common import EPSILON, THRESHOLD
from sparse_layers.variational_dropout import nn

_VD = _layers.Technique(aux_name="log_sigma2",
                        collection=common.VD_COLLECTION, nn=nn,
                        train_args=("clip_alpha", "eps"),
                        eval_args=("threshold", "eps"))


def _vd_options(clip_alpha, threshold, eps):
    return {"clip_alpha": clip_alpha, "threshold": threshold, "eps": eps}


class FullyConnected(_layers.FullyConnected):
    """Fully connected layer with sparse variational dropout weights.

    Args:
      units: positive int, output width.
      activation: activation function, name or None.
      use_bias: whether to add a bias.
      kernel_initializer: initializer of theta (glorot uniform if None).
      bias_initializer: initializer of the bias (zeros if None).
      log_sigma2_initializer: initializer of log(sigma^2) (constant -10 if
        None).
      clip_alpha: None, or clip log(alpha) to [-clip_alpha, clip_alpha] in
        training.
      threshold: at evaluation, weights with log(alpha) >= threshold are 0.
      eps: numerical floor (see `sparse_layers.common.EPSILON`).
      trainable, name, **kwargs: as for `tf.layers.Layer`.

    Call: `layer(inputs, training=False)`; inputs [batch, ..., in].

    Raises:
      ValueError: non-positive `units`, or inputs without a known last
        dimension (at build).
    """

    TECHNIQUE = _VD

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None,
                 log_sigma2_initializer=None, clip_alpha=None,
                 threshold=THRESHOLD, eps=EPSILON, trainable=True,
                 name=None, **kwargs):
        super(FullyConnected, self).__init__(
            units, activation=activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            aux_initializer=(log_sigma2_initializer
                             or tf.constant_initializer(-10.)),
            technique_options=_vd_options(clip_alpha, threshold, eps),
            trainable=trainable, name=name, **kwargs)


class Conv2D(_layers.Conv2D):
    """2-D convolution with sparse variational dropout weights.

    Args:
      filters: positive int, output channels.
      kernel_size: int or 2 ints.
      strides: int or 2 ints.
      padding: 'valid' or 'same' (any case).
      data_format: 'channels_last'/'NHWC' or 'channels_first'/'NCHW'.
      activation, use_bias, kernel_initializer, bias_initializer,
      log_sigma2_initializer, clip_alpha, threshold, eps, trainable, name:
        as for `FullyConnected`.

    Call: `layer(inputs, training=False)`; inputs rank 4 in `data_format`.

    Raises:
      ValueError: bad `filters`, `kernel_size`, `strides`, `padding` or
        `data_format`; inputs not rank 4 (at build).
    """

    TECHNIQUE = _VD

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None,
                 log_sigma2_initializer=None, clip_alpha=None,
                 threshold=THRESHOLD, eps=EPSILON, trainable=True,
                 name=None, **kwargs):
        super(Conv2D, self).__init__(
            filters, kernel_size, strides=strides, padding=padding,
            data_format=data_format, activation=activation,
            use_bias=use_bias, kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            aux_initializer=(log_sigma2_initializer
                             or tf.constant_initializer(-10.)),
            technique_options=_vd_options(clip_alpha, threshold, eps),
            trainable=trainable, name=name, **kwargs)
