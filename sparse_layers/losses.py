"""Training penalties of the sparse layers, read from the graph collections.

`kl_loss` sums the sparse-VD KL over every `(theta, log_sigma2)` pair in
`'theta_logsigma2'`; `l0_loss` sums the expected L0 norm over every
`(theta, log_alpha)` pair in `'theta_logalpha'`. Both are scaled by a
weight that ramps linearly from 0 at `begin_step` to `weight` at
`end_step` of the global step, and write summaries of the current weight
and of the weighted value. Add the result to the data loss, e.g.
`loss = xent + kl_loss(weight=1. / num_train_examples, end_step=10000)`.
"""
import tensorflow as tf

from sparse_layers import _docs
from sparse_layers import common
from sparse_layers.common import BETA, EPSILON, GAMMA, ZETA
from sparse_layers.l0_regularization import nn as l0_nn
from sparse_layers.variational_dropout import nn as vd_nn


def ramp_weight(weight, begin_step=0, end_step=0, global_step=None):
    """`weight * clip((step - begin_step) / (end_step - begin_step), 0, 1)`.

    With `end_step == begin_step` the weight jumps from 0 to `weight` at
    `begin_step`; the defaults (0, 0) give `weight` from the start.

    Args:
      weight: non-negative float, the final weight.
      begin_step: int, last step with weight 0 (of a linear ramp).
      end_step: int >= begin_step, first step with the full weight.
      global_step: int tensor; default `tf.train.get_global_step()`, which
        may be absent only when the weight is constant (begin = end = 0).

    Returns:
      float32 scalar tensor.

    Raises:
      ValueError: negative weight, end_step < begin_step, or a ramp without
        a global step.
    """
    if weight < 0:
        raise ValueError("weight must be >= 0, got %r" % (weight,))
    if end_step < begin_step:
        raise ValueError("end_step must be >= begin_step, got begin_step=%r "
                         "end_step=%r" % (begin_step, end_step))
    if global_step is None:
        global_step = tf.train.get_global_step()
    if global_step is None:
        if begin_step == end_step == 0:
            return tf.constant(float(weight))
        raise ValueError("a ramp from begin_step=%r to end_step=%r needs a "
                         "global step; pass global_step or create one with "
                         "tf.train.get_or_create_global_step()"
                         % (begin_step, end_step))
    step = tf.cast(global_step, tf.float32)
    if end_step == begin_step:
        fraction = tf.cast(step >= begin_step, tf.float32)
    else:
        fraction = tf.clip_by_value(
            (step - begin_step) / float(end_step - begin_step), 0., 1.)
    return float(weight) * fraction


_LOSS_DOC = """
    Other arguments:
      begin_step, end_step, global_step: linear ramp, see `ramp_weight`.
      name: name scope, also the summaries' prefix.
      summaries: write scalar summaries `<name>/weight` (current weight)
        and `<name>/value` (weighted loss).

    Returns:
      float32 scalar tensor, the current weight times the summed penalty
      (0 if the collection is empty).

    Raises:
      ValueError: see `ramp_weight`.
"""


def _collection_loss(penalty, collection, weight, begin_step, end_step,
                     global_step, name, summaries):
    with tf.name_scope(name):
        pairs = tf.get_collection(collection)
        if not pairs:
            # Usually the loss was built before the layers that fill it.
            tf.logging.warning("%s: collection %r is empty; build the "
                               "loss after the sparse layers/cells", name,
                               collection)
        total = tf.add_n([penalty(pair) for pair in pairs]) if pairs \
            else tf.constant(0.)
        current = ramp_weight(weight, begin_step, end_step, global_step)
        loss = tf.identity(current * total, name="weighted")
        if summaries:
            tf.summary.scalar("weight", current)
            tf.summary.scalar("value", loss)
        return loss


@_docs.append(_LOSS_DOC)
def kl_loss(weight=1.0, begin_step=0, end_step=0, global_step=None,
            clip_alpha=None, eps=EPSILON, collection=common.VD_COLLECTION,
            name="kl_loss", summaries=True):
    """Ramped, weighted KL of all sparse-VD parameters in `collection`.

    Args:
      weight: final weight of the summed KL (often 1 / training-set size
        when the data loss is a per-example mean).
      clip_alpha: None or clip bound of log(alpha) inside the KL.
      eps: numerical floor inside the log.
      collection: collection of (theta, log_sigma2) pairs.
    """
    return _collection_loss(
        lambda pair: vd_nn.negative_dkl(pair, clip_alpha, eps), collection,
        weight, begin_step, end_step, global_step, name, summaries)


@_docs.append(_LOSS_DOC)
def l0_loss(weight=1.0, begin_step=0, end_step=0, global_step=None,
            beta=BETA, gamma=GAMMA, zeta=ZETA,
            collection=common.L0_COLLECTION, name="l0_loss",
            summaries=True):
    """Ramped, weighted expected L0 norm of all gates in `collection`.

    Args:
      weight: final weight of the summed expected number of non-zeros.
      beta, gamma, zeta: hard-concrete temperature and stretch interval.
      collection: collection of (theta, log_alpha) pairs.
    """
    return _collection_loss(
        lambda pair: l0_nn.l0_norm(pair[1], beta, gamma, zeta), collection,
        weight, begin_step, end_step, global_step, name, summaries)
