"""The parameters of each compression stage (`awd_lm.training.compression`),
made from the float model's: the pipeline steers `train.run` only through
them.

Every function takes the float model's parameters (its checked
`Params`, with the compression settings) and returns the stage's as a new
checked `Params` (`Params.replace`): the keys of the float model's phase
(`presets.split_quant`: no quantization or compression key) and the ones
the stage sets, which its ``config.json`` records.
"""
from tf1_awd_sparse.awd_lm.config import presets, registry

__all__ = ["RAMP_FRACTION", "DROPOUT_KEYS", "AUX_LR_SCALE", "ramp_epochs",
           "survivors_epochs", "finetune_base", "compressed_dropout",
           "settled_optimizer", "with_teacher", "finetune_params",
           "survivors_params", "reference_params", "quantize_params",
           "model_params", "compressed_structure"]

#: Fraction of the fine-tuning budget over which the sparsity loss ramps up
#: and magnitude pruning's schedule runs, by default (``ramp_fraction``).
RAMP_FRACTION = presets.DEFAULTS["ramp_fraction"]
#: The auxiliary variables' learning rate as a multiple of the weights'
#: (measured on the demo preset: at 1 L0's gates never close within the
#: budget; at 1000 they pass the target within it).
AUX_LR_SCALE = {"variational_dropout": 1.0, "l0": 1000.0}
#: The model's dropout rates (the regularization's rates), scaled by
#: ``finetune_dropout_scale`` in the compressed model's fine-tunings.
DROPOUT_KEYS = registry.keys(section="regularization", check=registry.RATE)


def ramp_epochs(float_params):
    """Epochs of a technique's first phase (the ramp / schedule up to the
    exact cut): ``ramp_fraction`` (default `RAMP_FRACTION`) of
    ``finetune_epochs``, rounded, at least 1 and leaving at least 1 epoch
    to fine-tune the survivors (a budget of 1 epoch runs one epoch of each
    phase)."""
    compression = float_params.compression
    epochs = int(compression.finetune_epochs)
    return max(1, min(epochs - 1, int(round(
        float(compression.ramp_fraction) * epochs))))


def survivors_epochs(float_params):
    """Epochs of a technique's second phase: the rest of the budget,
    ``finetune_epochs - ramp_epochs``, at least 1."""
    return max(1, int(float_params.compression.finetune_epochs)
               - ramp_epochs(float_params))


def model_params(float_params, **changes):
    """The model's parameters without the pipeline's own (the float
    phase's keys, `presets.split_quant`), with ``changes`` (flat keys).

    Returns:
      Params."""
    float_phase, _ = presets.split_quant(
        float_params.replace(quant=False))
    return float_phase.replace(**changes)


def finetune_base(float_params, epochs, optimizer="sgd"):
    """The float model's parameters for a fine-tuning of ``epochs`` epochs
    at ``finetune_lr`` (default lr / 4) with ``optimizer``: plain SGD for
    a ramp (NT-ASGD would validate, and keep, averages of masks and gates
    that lag the ones being pruned), ``finetune_optimizer`` where nothing
    is pruned any more (the survivors, the reference).

    Returns:
      Params."""
    lr = (float_params.compression.finetune_lr
          or float_params.optimization.lr / 4.0)
    return model_params(float_params, max_epochs=epochs, lr=lr,
                        optimizer=optimizer)


def compressed_dropout(params, float_params):
    """``params`` with every rate of `DROPOUT_KEYS` times the
    float model's ``finetune_dropout_scale`` (default 0.5): a model with a
    twentieth of its weights underfits under the float model's rates
    (ptb-small at 95 %: training perplexity with dropout above
    validation's).

    Returns:
      Params."""
    scale = float(float_params.compression.finetune_dropout_scale)
    rates = params.regularization
    return params.replace(**dict(
        (key, getattr(rates, key) * scale) for key in DROPOUT_KEYS))


def settled_optimizer(float_params):
    """The optimizer of the fine-tunings whose masks no longer move (the
    survivors, the reference): ``finetune_optimizer``, 'sgd' or 'ntasgd'
    (NT-ASGD with the float model's ``nonmono``; its averages are of
    weights under fixed masks)."""
    return float_params.compression.finetune_optimizer


def with_teacher(params, float_params, teacher):
    """``params`` with the pipeline's distillation settings: the float
    model's ``distill_weight`` and ``distill_temperature``, and with a
    weight > 0 the teacher checkpoint ``distill_from = teacher``.

    Returns:
      Params.

    Raises:
      ValueError: a weight > 0 and no teacher."""
    distill = float_params.distill
    weight = float(distill.distill_weight or 0.0)
    params = params.replace(
        distill_weight=weight,
        distill_temperature=float(distill.distill_temperature))
    if weight > 0:
        if not teacher:
            raise ValueError("teacher: distill_weight %r needs the "
                             "teacher's checkpoint prefix, got %r"
                             % (weight, teacher))
        params = params.replace(distill_from=teacher)
    return params


def _technique_changes(float_params, technique, steps):
    """The flat keys of a technique's ramp over ``steps`` steps.

    Raises:
      ValueError: an unknown technique."""
    if technique == "magnitude":
        # The group lasso empties weak blocks before the cut, so it is
        # the ramp's alone (magnitude's: VD / L0 have their own loss).
        return dict(pruning="magnitude", pruning_begin_step=0,
                    pruning_end_step=steps,
                    pruning_frequency=max(1, steps // 40),
                    group_lasso=float(float_params.prune.group_lasso))
    if technique not in ("variational_dropout", "l0"):
        raise ValueError("technique must be one of %s, got %r"
                         % (", ".join(presets.COMPRESS_TECHNIQUES),
                            technique))
    compression = float_params.compression
    changes = dict(sparsity=technique, sparsity_ramp_steps=steps,
                   sparsity_controller=float(
                       compression.compress_controller))
    if compression.compress_sparsity_weight is not None:
        changes["sparsity_weight"] = compression.compress_sparsity_weight
    # SGD at the weights' rate barely moves log_sigma2 / log_alpha.
    changes["aux_lr_scale"] = AUX_LR_SCALE[technique]
    return changes


def finetune_params(float_params, technique, steps_per_epoch, teacher=None):
    """The parameters of a technique's first phase from the float model:
    the ramp to the target, ended by the exact cut (`cut_checkpoint`).

    Args:
      float_params: the model's parameters with the compression settings
        (``finetune_epochs``, ``finetune_lr``, ``target_sparsity``,
        ``compress_controller``, ``distill_weight``,
        ``distill_temperature``).
      technique: one of ``presets.COMPRESS_TECHNIQUES``.
      steps_per_epoch: training windows per epoch (for the schedules).
      teacher: the checkpoint prefix of the distillation's teacher (the
        float model's, or the reference's with ``distill_teacher=
        'reference'``; ``distill_from``, needed when ``distill_weight >
        0``).

    Returns:
      Params: ``max_epochs = ramp_epochs(...)`` at ``finetune_lr``, plain
      SGD, the dropout rates scaled (`compressed_dropout`), the
      ``pruning_block`` and ``table_sparsity`` of the ramp's pruning and
      cut; magnitude: the
      gradual schedule over all of it and the ``group_lasso``; VD / L0: the KL / L0 weight ramped
      over all of it, the controller's factor ``sparsity_controller`` and
      the auxiliary learning-rate scale; only the last epoch selectable
      (the cut reads the last checkpoint); the distillation settings
      (``distill_weight``, ``distill_temperature``, ``distill_from`` with a
      weight > 0).

    Raises:
      ValueError: an unknown technique; ``distill_weight > 0`` without a
        teacher.
    """
    epochs = ramp_epochs(float_params)
    steps = max(1, epochs * steps_per_epoch)
    changes = _technique_changes(float_params, technique, steps)
    params = finetune_base(float_params, epochs).replace(
        # The ramp's pruning and the exact cut read the block and the
        # table's budget from these parameters; `split_quant` strips them
        # with the other compression keys.
        pruning_block=int(float_params.prune.pruning_block),
        table_sparsity=float_params.prune.table_sparsity,
        target_sparsity=float_params.prune.target_sparsity,
        select_from_epoch=epochs,
        **dict(compressed_structure(float_params), **changes))
    params = compressed_dropout(params, float_params)
    return with_teacher(params, float_params, teacher)


def survivors_params(float_params, teacher=None):
    """The parameters of a technique's second phase: the cut model's
    survivors fine-tuned (masks fixed, ``pruning='fixed'``) for
    `survivors_epochs` at ``finetune_lr`` with ``finetune_optimizer``
    (`settled_optimizer`), dropout scaled as the first phase's and
    distilled from ``teacher`` as it is (see `finetune_params`).

    Returns:
      Params.

    Raises:
      ValueError: ``distill_weight > 0`` without a teacher."""
    params = finetune_base(float_params, survivors_epochs(float_params),
                           settled_optimizer(float_params)).replace(
        pruning="fixed",
        select_min_sparsity=float_params.prune.target_sparsity,
        **compressed_structure(float_params))
    params = compressed_dropout(params, float_params)
    return with_teacher(params, float_params, teacher)


def reference_params(float_params):
    """The honest reference: the float model fine-tuned for as many epochs
    as a technique's two phases take together (``finetune_epochs``; 2 for
    a budget of 1, which runs one epoch of each phase) at ``finetune_lr``
    with ``finetune_optimizer`` and, with NT-ASGD, averaging from the
    first step (``average_from_start``: it starts from the float model's
    averaged weights, whose gain plain SGD throws away before the trigger
    fires again); the float model's dropout (the compressed model's
    half dropout made the dense one worse on the demo: validation 113.79
    against 113.24); no compression, no distillation (``distill_weight``
    0). `run_pipeline` reports the float model itself as the reference
    when this one validates worse.

    Returns:
      Params."""
    params = finetune_base(float_params, ramp_epochs(float_params)
                           + survivors_epochs(float_params),
                           settled_optimizer(float_params))
    return params.replace(
        distill_weight=0.0,
        average_from_start=params.optimization.optimizer == "ntasgd")


def quantize_params(float_params):
    """The parameters of the quantization-aware fine-tuning of the pruned
    model: ``--quant``'s phase of the float model (`presets.split_quant`:
    ``quant_epochs`` at ``quant_lr``) with the masks held (``pruning=
    'fixed'``) and the dropout rates scaled as the other compressed
    stages'.

    Returns:
      Params.

    Raises:
      ValueError: a bad ``quant_epochs`` or ``quant_lr``."""
    _, quant = presets.split_quant(float_params.replace(quant=True))
    return compressed_dropout(quant.replace(
        pruning="fixed", **compressed_structure(float_params)), float_params)


def compressed_structure(float_params):
    """The compression keys that shape the compressed model's graph, which
    each of its stages (ramp, survivors, QAT) carries and `split_quant`
    strips from the float model's (the registry's ``carried`` keys:
    ``table_rank`` and ``table_rank_rows``, `tables.table_low_rank`) where
    the rank is set.

    Returns:
      dict of flat keys."""
    if not float_params.prune.table_rank:
        return {}
    return dict((key, getattr(getattr(
        float_params, registry.BY_NAME[key].section), key))
        for key in registry.keys(carried=True))
