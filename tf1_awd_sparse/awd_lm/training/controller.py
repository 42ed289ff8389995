"""The sparsity controller of a VD / L0 ramp (a compression stage's
``sparsity_controller``): after each epoch it raises the KL / L0 weight's
scale while the measured sparsity lags the schedule, the cubic ramp to
``target_sparsity`` over the run's ``max_epochs``.

`controller_ops` adds its ops to the training graph (`train_graph.Graph`);
`control` is the step `train.Trainer` takes after an epoch's validation.
The rule itself is `sparse_layers.losses.controlled_weight_scale`.
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.layers.sparse import losses as sparse_losses
from tf1_awd_sparse.transforms import magnitude_pruning
from tf1_awd_sparse.awd_lm.graph import compression_ops

__all__ = ["controller_ops", "control"]


def controller_ops(params):
    """Names of the sparsity controller's scale variable, its new value's
    placeholder and their assignment, or None without a controller.

    Args:
      params: the model's parameters (a `Params`); a controller
        needs ``sparse.sparsity`` and ``stage.sparsity_controller``.

    Returns:
      None or {'scale', 'value', 'assign': tensor / op names}; the ops are
      added to the default graph.
    """
    if not (params.sparse.sparsity and params.stage.sparsity_controller):
        return None
    scale = compression_ops.sparsity_weight_scale()
    value = tf.placeholder(tf.float32, [], "sparsity_weight_scale_value")
    assign = tf.assign(scale, value)
    return {"scale": scale.name, "value": value.name, "assign": assign.name}


def control(sess, ops, params, epoch, measured):
    """The sparsity controller after an epoch: raises the KL / L0
    weight's scale while ``measured`` lags the schedule (the cubic
    ramp to ``target_sparsity`` over the run's ``max_epochs``; rule:
    `sparse_layers.losses.controlled_weight_scale`).

    Args:
      sess: a session of the graph holding ``ops``.
      ops: `controller_ops`' names.
      params: the run's parameters (a `Params`).
      epoch: the epoch just validated (1-based).
      measured: float, the validated weights' fraction of zeros.

    Returns:
      the record's fields: {'scheduled_sparsity': float,
      'sparsity_weight_scale': float, the new scale}.
    """
    scheduled = float(magnitude_pruning.gradual_sparsity(
        epoch, 0, max(1, params.stopping.max_epochs),
        params.prune.target_sparsity))
    scale = float(sess.run(ops["scale"]))
    new = sparse_losses.controlled_weight_scale(
        scale, min(1.0, max(0.0, measured)), scheduled,
        params.stage.sparsity_controller)
    if new != scale:
        sess.run(ops["assign"], {ops["value"]: new})
    return {"scheduled_sparsity": scheduled,
            "sparsity_weight_scale": new}
