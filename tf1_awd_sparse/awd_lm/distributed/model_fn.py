"""The language model as an Estimator ``model_fn``, the training step and
evaluation it is made of (`train_step`, `eval_xent`: no ``tf.estimator``,
for `awd_lm.monitored` too), and a hook that resamples dropout-mask
variables on a schedule of one's own."""
from __future__ import absolute_import, division, print_function

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_positive_int
from tf1_awd_sparse.awd_lm.config.params import takes_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.graph.train_op import build_train_step

__all__ = ["MASK_UPDATE_OPS", "model_fn", "train_step", "eval_xent",
           "MaskUpdateHook"]

# Update ops MaskUpdateHook runs (every replica's: under MirroredStrategy
# Estimator keeps the first replica's hooks only). model_fn needs no hook:
# its masks resample with each step (UPDATE_OPS).
MASK_UPDATE_OPS = "awd_lm_mask_update_ops"

# tf.estimator.ModeKeys' values, spelt out (TF 2.16+ has no tf.estimator).
TRAIN, EVAL = "train", "eval"


@takes_params()
def train_step(features, labels, params):
    """The training step of `model_fn`, without ``tf.estimator``: the
    regularized loss and the model's one training step
    (`train_op.build_train_step` with plain SGD: clipped gradients after the
    ``UPDATE_OPS``, the global step's increment and, with ``pruning``
    'magnitude', the pruning masks' scheduled update).

    Under a ``tf.distribute`` strategy (built in a replica's context) the
    loss the gradients come from is scaled (`_compat.scale_replica_loss`)
    so that the replicas' gradients average, as under Estimator.

    Args:
      features: dict with 'inputs', int32 ``[batch, time]`` word ids.
      labels: int32 ``[batch, time]``, the next word of each input.
      params: a `Params` or a parameter dict (`as_params`): 'lr', 'clip',
        'use_vd' as for `model_fn` ('training_hooks' is not one).

    Returns:
      ``(loss, train_op)``: the regularized loss (unscaled, a float32
      scalar) and the step's op.

    Raises:
      ValueError: bad params (named, see `model.build_lm`);
        ``distill_weight > 0`` (distillation runs in `awd_lm.training.train`
        only: its teacher's state is carried by the training loop).
    """
    if float(params.distill.distill_weight or 0.0) > 0:
        raise ValueError(
            "params['distill_weight'] must be 0 under Estimator / monitored "
            "training (knowledge distillation runs in the training loop, "
            "awd_lm.train, and the compression pipeline only), got %r"
            % (params.distill.distill_weight,))
    out = model.build_lm({"inputs": features["inputs"], "targets": labels},
                         TRAIN, params)
    sgd = params.replace(optimizer="sgd")
    train_op, _ = build_train_step(
        _compat.scale_replica_loss(out.loss), params.optimization.lr, sgd,
        tf.train.get_or_create_global_step())
    tf.summary.scalar("xent", out.xent)
    return out.loss, train_op


@takes_params()
def eval_xent(features, labels, params):
    """The evaluation graph of `model_fn`, without ``tf.estimator``: the
    mean cross-entropy (nats per token) of one batch, no regularization,
    no dropout and no mask variables.

    Args:
      features, labels, params: as for `train_step`.

    Returns:
      float32 scalar tensor.

    Raises:
      ValueError: bad params (named, see `model.build_lm`).
    """
    return model.build_lm({"inputs": features["inputs"], "targets": labels},
                          EVAL, params).xent


def model_fn(features, labels, mode, params):
    """Estimator ``model_fn`` of the language model.

    Args:
      features: dict with 'inputs', int32 ``[batch, time]`` word ids.
      labels: int32 ``[batch, time]``, the next word of each input.
      mode: a ``tf.estimator.ModeKeys``.
      params: the Estimator's plain dict: the model's parameters
        (`awd_lm.config.presets.params_for`, read as `as_params`), with
        'lr' and 'clip'; 'use_vd' makes the DropConnect masks variables
        whose update ops (``tf.GraphKeys.UPDATE_OPS``) run with every
        training step, ordered after the step's reads (a step trains on
        the current masks and leaves new ones); 'training_hooks'
        (optional) a function ``loss -> list of SessionRunHooks`` added to
        the training hooks.

    Returns:
      ``tf.estimator.EstimatorSpec``: PREDICT gives 'logits'; EVAL the mean
      cross-entropy as loss with 'perplexity' as metric; TRAIN the
      regularized loss and a clipped SGD step (`train_step`).

    Raises:
      ValueError: bad params (named, see `model.build_lm`).
    """
    # The hooks are no parameter of the model: take them out; the rest
    # is checked where it enters, by `build_lm`, `eval_xent` or
    # `train_step` (`takes_params`).
    given = dict(params)   # the Estimator's own dict stays as it is
    make_hooks = given.pop("training_hooks", None)
    if mode == tf.estimator.ModeKeys.PREDICT:
        # build_lm needs targets; predictions do not depend on them.
        out = model.build_lm({"inputs": features["inputs"],
                              "targets": tf.zeros_like(features["inputs"])},
                             mode, given)
        return tf.estimator.EstimatorSpec(mode,
                                          predictions={"logits": out.logits})
    if mode == tf.estimator.ModeKeys.EVAL:
        xent = eval_xent(features, labels, given)
        mean_xent = tf.metrics.mean(xent)
        return tf.estimator.EstimatorSpec(
            mode, loss=xent,
            eval_metric_ops={"xent": mean_xent,
                             "perplexity": (tf.exp(mean_xent[0]),
                                            mean_xent[1])})
    loss, train_op = train_step(features, labels, given)
    hooks = []
    if make_hooks:
        hooks.extend(make_hooks(loss))
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      training_hooks=hooks)


class MaskUpdateHook(tf.compat.v1.train.SessionRunHook):
    """Resamples dropout-mask variables every n training steps, for masks
    kept out of ``UPDATE_OPS`` (``updates_collection=None``) in a
    ``model_fn`` of one's own (this module's `model_fn` needs no hook).

    Runs the ops of the `MASK_UPDATE_OPS` collection (add every replica's
    update ops to it) in a separate ``session.run`` after every n-th step,
    so a step always reads one mask, drawn before it started. Masks are
    local to the worker/replica (`mask_placement`), so this never touches
    another worker's mask.

    Args:
      every_n_steps: resample after every n-th step.

    Raises:
      ValueError: ``every_n_steps`` not a positive int.
    """

    def __init__(self, every_n_steps=1):
        self._every = check_positive_int(every_n_steps, "every_n_steps")
        self._ops = []
        self._steps = 0

    def begin(self):
        self._ops = tf.get_collection(MASK_UPDATE_OPS)

    def after_run(self, run_context, run_values):
        self._steps += 1
        if self._ops and self._steps % self._every == 0:
            run_context.session.run(self._ops)
