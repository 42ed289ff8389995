"""Training penalties of the sparse layers, over the registered pairs.

`kl_loss` sums the sparse-VD KL over every registered
`(theta, log_sigma2)` pair; `l0_loss` sums the expected L0 norm over every
registered `(theta, log_alpha)` pair (`sparse_layers.techniques`: layers
register theirs when built). Both are scaled by a weight that ramps
linearly from 0 at `begin_step` to `weight` at `end_step` of the global
step, and write summaries of the current weight and of the weighted value.
Build them after the sparse layers / cells and add the result to the data
loss, e.g.
`loss = xent + kl_loss(weight=1. / num_train_examples, end_step=10000)`.
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base import _docs
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.ops.sparse.common import (
    BETA, EPSILON, GAMMA, ZETA, check_sparse_options)
from tf1_awd_sparse.base.checks import check_tensor
from tf1_awd_sparse.base.scalar_checks import check_bool, check_int, check_real

__all__ = ["ramp_weight", "controlled_weight_scale", "kl_loss", "l0_loss"]


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
      ValueError: a weight that is not a finite number >= 0, steps that are
        not ints, end_step < begin_step, or a ramp without a global step.
      TypeError: a `global_step` that is not an int tensor.
    """
    weight = check_real(weight, "weight", low=0)
    begin_step = check_int(begin_step, "begin_step")
    end_step = check_int(end_step, "end_step")
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
    step = tf.cast(check_tensor(global_step, "global_step", kind="int",
                                rank=0), tf.float32)
    if end_step == begin_step:
        fraction = tf.cast(step >= begin_step, tf.float32)
    else:
        fraction = tf.clip_by_value(
            (step - begin_step) / float(end_step - begin_step), 0., 1.)
    return float(weight) * fraction


def controlled_weight_scale(scale, measured, scheduled, factor,
                            max_scale=1e6):
    """One step of the sparsity controller: the regularization weight's
    next scale.

    The rule: while the measured fraction of zeros lags the schedule
    (``measured < scheduled``) the scale is multiplied by ``factor``
    (capped at ``max_scale``); once it has caught up the scale is kept
    (never lowered: the weights already zero stay cheap to keep zero).
    The language model applies it after each epoch's validation, with the
    schedule of magnitude pruning (`pruning_schedule.gradual_sparsity`
    over the epochs of the ramp).

    Args:
      scale: the current scale, a float > 0.
      measured: the fraction of zeros measured, in [0, 1].
      scheduled: the fraction the schedule asks for now, in [0, 1].
      factor: float >= 1, the multiplier while behind (1: no control).
      max_scale: float >= 1, the cap.

    Returns:
      float, the new scale.

    Raises:
      ValueError: an argument out of range (named).
    """
    scale = check_real(scale, "scale", low=0, low_open=True)
    measured = check_real(measured, "measured", low=0, high=1)
    scheduled = check_real(scheduled, "scheduled", low=0, high=1)
    factor = check_real(factor, "factor", low=1)
    max_scale = check_real(max_scale, "max_scale", low=1)
    if measured < scheduled:
        return min(scale * factor, max_scale)
    return scale


_LOSS_DOC = """
    Other arguments:
      begin_step, end_step, global_step: linear ramp, see `ramp_weight`.
      name: name scope, also the summaries' prefix.
      summaries: write scalar summaries `<name>/weight` (current weight)
        and `<name>/value` (weighted loss).
      allow_empty: accept a graph without registered pairs (the loss is
        then 0); by default that raises, as it almost always means the
        loss was built before the sparse layers / cells.

    Returns:
      float32 scalar tensor, the current weight times the summed penalty.

    Raises:
      ValueError: no pairs registered (unless `allow_empty`); a technique
        option out of range (named); a non-bool `summaries`/`allow_empty`;
        see also `ramp_weight`.
      ParamsError (a ValueError): the technique's collection holds an item
        that is not a pair, e.g. a bare tensor or a 3-tuple added with
        `tf.add_to_collection` (see `techniques.registered_pairs`).
"""


def _pairs_loss(technique, options, weight, begin_step, end_step,
                global_step, name, summaries, allow_empty):
    technique = techniques.get(technique)
    check_sparse_options(**options)
    summaries = check_bool(summaries, "summaries")
    allow_empty = check_bool(allow_empty, "allow_empty")
    pairs = techniques.registered_pairs(technique)
    if not pairs and not allow_empty:
        raise ValueError(
            "%s: the graph has no registered %s pairs (theta, %s). Build the "
            "loss after the sparse layers/cells (they register their pairs "
            "when built), register your own pairs with sparse_layers."
            "techniques.register_pair, or pass allow_empty=True for a zero "
            "loss." % (name, technique.name, technique.aux_name))
    with tf.name_scope(name):
        total = tf.add_n([technique.penalty(pair, **options)
                          for pair in pairs]) if pairs else tf.constant(0.)
        current = ramp_weight(weight, begin_step, end_step, global_step)
        loss = tf.identity(current * total, name="weighted")
        if summaries:
            tf.summary.scalar("weight", current)
            tf.summary.scalar("value", loss)
        return loss


@_docs.append(_LOSS_DOC)
def kl_loss(weight=1.0, begin_step=0, end_step=0, global_step=None,
            clip_alpha=None, eps=EPSILON, name="kl_loss", summaries=True,
            allow_empty=False):
    """Ramped, weighted KL of all registered sparse-VD pairs.

    Args:
      weight: final weight of the summed KL (often 1 / training-set size
        when the data loss is a per-example mean).
      clip_alpha: None or clip bound of log(alpha) inside the KL.
      eps: numerical floor inside the log.
    """
    return _pairs_loss("variational_dropout",
                       {"clip_alpha": clip_alpha, "eps": eps}, weight,
                       begin_step, end_step, global_step, name, summaries,
                       allow_empty)


@_docs.append(_LOSS_DOC)
def l0_loss(weight=1.0, begin_step=0, end_step=0, global_step=None,
            beta=BETA, gamma=GAMMA, zeta=ZETA, name="l0_loss",
            summaries=True, allow_empty=False):
    """Ramped, weighted expected L0 norm of all registered L0 gates.

    Args:
      weight: final weight of the summed expected number of non-zeros.
      beta, gamma, zeta: hard-concrete temperature and stretch interval.
    """
    return _pairs_loss("l0", {"beta": beta, "gamma": gamma, "zeta": zeta},
                       weight, begin_step, end_step, global_step, name,
                       summaries, allow_empty)
