"""L0-regularized layers with hard-concrete gates (tf.layers style).

Each layer creates `kernel` (theta), `log_alpha` (normal init, mean 2.197 =
log(9), i.e. gates mostly open at first, stddev 0.01) and optionally
`bias`, and registers `(kernel, log_alpha)` with
`sparse_layers.techniques.register_pair`, so that `sparse_layers.losses`,
`sparse_layers.report` and `sparse_layers.strip` cover it. Called in
training (the default, or `training=True`) the layer samples one gate per
weight; with `training=False` it scales the weights by the deterministic
gate; a scalar bool tensor picks at run time.
"""
from tf1_awd_sparse.base import _docs
from tf1_awd_sparse.layers.sparse import _layers
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.ops.sparse.common import BETA, EPSILON, GAMMA, ZETA

__all__ = ["FullyConnected", "Conv2D"]

_L0 = techniques.get("l0")


def _l0_options(log_alpha_initializer, beta, gamma, zeta, eps):
    """Keyword arguments of the base layer for this technique."""
    return {"aux_initializer": log_alpha_initializer,
            "technique_options": {"beta": beta, "gamma": gamma,
                                  "zeta": zeta, "eps": eps}}


@_docs.append(_layers.FULLY_CONNECTED_DOC)
class FullyConnected(_layers.FullyConnected):
    """Fully connected layer with L0 hard-concrete gated weights.

    Args:
      log_alpha_initializer: initializer of the gates' log_alpha (normal,
        mean 2.197, stddev 0.01 if None).
      beta, gamma, zeta: hard-concrete temperature and stretch interval.
      eps: numerical floor (see `sparse_layers.common.EPSILON`).
    """

    TECHNIQUE = _L0

    def __init__(self, units, *args, log_alpha_initializer=None, beta=BETA,
                 gamma=GAMMA, zeta=ZETA, eps=EPSILON, **kwargs):
        kwargs.update(_l0_options(log_alpha_initializer, beta, gamma, zeta,
                                  eps))
        super(FullyConnected, self).__init__(units, *args, **kwargs)


@_docs.append(_layers.CONV2D_DOC)
class Conv2D(_layers.Conv2D):
    """2-D convolution with L0 hard-concrete gated weights.

    Args:
      log_alpha_initializer and the technique options: as for
        `FullyConnected`.
    """

    TECHNIQUE = _L0

    def __init__(self, filters, kernel_size, *args,
                 log_alpha_initializer=None, beta=BETA, gamma=GAMMA,
                 zeta=ZETA, eps=EPSILON, **kwargs):
        kwargs.update(_l0_options(log_alpha_initializer, beta, gamma, zeta,
                                  eps))
        super(Conv2D, self).__init__(filters, kernel_size, *args, **kwargs)
