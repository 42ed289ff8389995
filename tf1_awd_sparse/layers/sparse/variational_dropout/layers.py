"""Sparse variational dropout layers (tf.layers style).

Each layer creates `kernel` (theta), `log_sigma2` (initialised to -10, i.e.
almost no noise at first) and optionally `bias`, and registers
`(kernel, log_sigma2)` with `sparse_layers.techniques.register_pair`, so
that `sparse_layers.losses`, `sparse_layers.report` and
`sparse_layers.strip` cover it. Called in training (the default, or
`training=True`) the layer samples by local reparameterization; with
`training=False` it uses the masked weights; a scalar bool tensor picks at
run time.
"""
from tf1_awd_sparse.base import _docs
from tf1_awd_sparse.layers.sparse import _layers
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.ops.sparse.common import EPSILON, THRESHOLD

__all__ = ["FullyConnected", "Conv2D"]

_VD = techniques.get("variational_dropout")


def _vd_options(log_sigma2_initializer, clip_alpha, threshold, eps):
    """Keyword arguments of the base layer for this technique."""
    return {"aux_initializer": log_sigma2_initializer,
            "technique_options": {"clip_alpha": clip_alpha,
                                  "threshold": threshold, "eps": eps}}


@_docs.append(_layers.FULLY_CONNECTED_DOC)
class FullyConnected(_layers.FullyConnected):
    """Fully connected layer with sparse variational dropout weights.

    Args:
      log_sigma2_initializer: initializer of log(sigma^2) (constant -10 if
        None).
      clip_alpha: None, or clip log(alpha) to [-clip_alpha, clip_alpha] in
        training.
      threshold: at evaluation, weights with log(alpha) >= threshold are 0.
      eps: numerical floor (see `sparse_layers.common.EPSILON`).
    """

    TECHNIQUE = _VD

    def __init__(self, units, *args, log_sigma2_initializer=None,
                 clip_alpha=None, threshold=THRESHOLD, eps=EPSILON,
                 **kwargs):
        kwargs.update(_vd_options(log_sigma2_initializer, clip_alpha,
                                  threshold, eps))
        super(FullyConnected, self).__init__(units, *args, **kwargs)


@_docs.append(_layers.CONV2D_DOC)
class Conv2D(_layers.Conv2D):
    """2-D convolution with sparse variational dropout weights.

    Args:
      log_sigma2_initializer and the technique options: as for
        `FullyConnected`.
    """

    TECHNIQUE = _VD

    def __init__(self, filters, kernel_size, *args,
                 log_sigma2_initializer=None, clip_alpha=None,
                 threshold=THRESHOLD, eps=EPSILON, **kwargs):
        kwargs.update(_vd_options(log_sigma2_initializer, clip_alpha,
                                  threshold, eps))
        super(Conv2D, self).__init__(filters, kernel_size, *args, **kwargs)
