"""The language model's training step: `build_train_op`'s clipped
NT-ASGD / SGD step and `build_train_step`, that step followed by magnitude
pruning's mask update, the one step every driver runs. (`graph.model`
re-exports both.)
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.awd_lm.config.params import takes_params
from tf1_awd_sparse.awd_lm.graph import ntasgd
from tf1_awd_sparse.awd_lm.graph.compression_ops import magnitude_pruning_op

__all__ = ["build_train_op", "build_train_step"]


def _scaled(gradient, scale):
    """``gradient * scale`` for a dense gradient or IndexedSlices."""
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(gradient.values * scale, gradient.indices,
                                gradient.dense_shape)
    return gradient * scale


@takes_params()
def build_train_op(loss, learning_rate, params, global_step=None):
    """Clipped-gradient step: NT-ASGD when ``params.optimization.optimizer``
    is 'ntasgd', else SGD.

    Args:
      loss: scalar tensor.
      learning_rate: float or scalar tensor (the loop scales it by the BPTT
        window length).
      params: the model's parameters (a `config.params.Params` or a dict,
        `as_params`); its ``optimization`` section: ``clip`` (global-norm
        clip, 0 for none), ``optimizer`` ('ntasgd' or 'sgd'), ``nonmono``
        and ``aux_lr_scale`` (the sparse auxiliary variables' learning
        rate as a multiple of lr).
      global_step: optional step variable to increment.
    Returns:
      (train_op, optimizer).
    Raises:
      ValueError: bad params, e.g. an unknown optimizer (`as_params`).
    """
    optimization = params.optimization
    if optimization.optimizer == "ntasgd":
        opt = ntasgd.NTASGDOptimizer(learning_rate,
                                     nonmono=optimization.nonmono)
    else:   # 'sgd': as_params refuses any other
        opt = tf.train.GradientDescentOptimizer(learning_rate)
    grads_and_vars = opt.compute_gradients(loss)
    grads, tvars = zip(*[(g, v) for g, v in grads_and_vars if g is not None])
    if optimization.clip > 0:
        grads, _ = tf.clip_by_global_norm(grads, optimization.clip)
    scale = float(optimization.aux_lr_scale)
    if scale != 1.0:
        # log_sigma2 / log_alpha live on another scale than the weights:
        # plain SGD at the weights' rate barely moves them (the L0 / VD
        # papers use Adam), so they get their own rate (after clipping,
        # which the weights' gradients keep governing).
        aux = set(pair[1] for name in techniques.NAMES
                  for pair in techniques.registered_pairs(name))
        grads = [_scaled(g, scale) if v in aux else g
                 for g, v in zip(grads, tvars)]
    # TF1's convention (batch norm's): the update ops (held dropout masks,
    # params.stage.use_vd) run with the step, ordered after their reads.
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        return opt.apply_gradients(zip(grads, tvars), global_step), opt


@takes_params()
def build_train_step(loss, learning_rate, params, global_step=None):
    """The language model's one training step, for every driver (the
    loop's `train.Graph`, the Estimator's `model_fn.train_step` and so
    `awd_lm.monitored`): `build_train_op`'s clipped step (NT-ASGD or SGD,
    after the ``UPDATE_OPS``: held dropout masks) that increments
    ``global_step``, followed with ``params.prune.pruning == 'magnitude'`` by
    `magnitude_pruning_op`'s mask update (so the masks follow their
    schedule under every driver).

    Args:
      loss: float32 scalar tensor, the loss the gradients come from.
      learning_rate: float or float32 scalar tensor.
      params: the model's parameters (`as_params`): the ``optimization``
        section (`build_train_op`) and the ``prune`` one (``pruning`` and
        its schedule).
      global_step: the step variable the step increments; needed (and
        read) by the pruning schedule.

    Returns:
      ``(train_op, optimizer)``: the op of one step (the pruning update
      runs after the gradient step, in the same ``session.run``) and the
      optimizer (NT-ASGD's has ``averaging``).

    Raises:
      ValueError: bad params, e.g. an unknown optimizer (`as_params`), or
        ``pruning='magnitude'`` without a ``global_step``.
    """
    if params.prune.pruning == "magnitude" and global_step is None:
        raise ValueError("global_step: params['pruning'] 'magnitude' needs "
                         "the global step (its schedule counts it), got "
                         "None")
    train_op, optimizer = build_train_op(loss, learning_rate, params,
                                         global_step)
    pruning = magnitude_pruning_op(params, global_step, train_op)
    return (train_op if pruning is None else pruning), optimizer
