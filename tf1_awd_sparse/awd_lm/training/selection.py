"""Which epoch of a run is its best: the rule `train.Trainer.validate`
applies before it saves the best checkpoint.

An epoch before ``select_from_epoch`` (while a pruning schedule or a
sparsity-loss ramp still runs) is never the best; with
``select_min_sparsity``, an epoch whose weights reach that fraction of
zeros (within `SPARSITY_TOLERANCE`) beats every epoch that does not,
whatever its loss; among either kind the lower validation loss wins.
"""

__all__ = ["SPARSITY_TOLERANCE", "selectable", "reaches_sparsity",
           "is_best"]

#: How far below ``select_min_sparsity`` an epoch still reaches it.
SPARSITY_TOLERANCE = 0.01


def selectable(params, epoch):
    """Whether ``epoch`` (1-based) may be the best: from the parameters'
    ``select_from_epoch`` on (a `Params`)."""
    return epoch >= params.stopping.select_from_epoch


def reaches_sparsity(params, sparsity):
    """Whether weights with the fraction ``sparsity`` of zeros reach the
    parameters' ``select_min_sparsity`` (within `SPARSITY_TOLERANCE`)."""
    return sparsity >= (params.stage.select_min_sparsity
                        - SPARSITY_TOLERANCE)


def is_best(state, valid_loss, reached=True):
    """Whether an epoch beats the best so far: one that reached the target
    sparsity beats one that did not; else the lower loss wins.

    Args:
      state: the run's `runrecord.RunState`: its ``best_valid`` (None
        before the first best) and ``best_reached``.
      valid_loss: the epoch's validation loss.
      reached: whether the epoch reached ``select_min_sparsity``
        (`reaches_sparsity`).

    Returns:
      bool.
    """
    if state.best_valid is None:
        return True
    if reached != state.best_reached:
        return reached
    return valid_loss < state.best_valid
