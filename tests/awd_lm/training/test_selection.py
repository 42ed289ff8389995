"""`awd_lm.training.selection`: which epoch is a run's best - none before
``select_from_epoch``; with ``select_min_sparsity``, an epoch that
reaches it (within `SPARSITY_TOLERANCE`) beats one that does not; else the
lower validation loss - checked against every order of a few epochs."""
import itertools

import pytest

from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.awd_lm.training import runstate, selection

#: A run's state before its first epoch (`runstate.fresh_state`).
FRESH = runstate.fresh_state(Params.from_flat({}))


@pytest.mark.parametrize("select_from", [1, 3])
def test_an_epoch_before_select_from_epoch_is_never_the_best(select_from):
    params = Params.from_flat({"select_from_epoch": select_from})
    assert [selection.selectable(params, e) for e in (1, 2, 3, 4)] == [
        e >= select_from for e in (1, 2, 3, 4)]


@pytest.mark.parametrize("target", [0.0, 0.5, 0.9])
def test_sparsity_is_reached_within_the_tolerance(target):
    params = Params.from_flat({"select_min_sparsity": target})
    tolerance = selection.SPARSITY_TOLERANCE
    assert selection.reaches_sparsity(params, target)
    assert selection.reaches_sparsity(params, target - tolerance + 1e-9)
    assert selection.reaches_sparsity(params, 1.0)
    if target > 0:
        assert not selection.reaches_sparsity(params, target - 0.02)


#: (validation loss, reached the target sparsity) of four epochs.
EPOCHS = [(4.0, False), (3.0, False), (5.0, True), (4.5, True)]


def _chosen(epochs):
    """The best of ``epochs`` by the rule, found without `is_best`: those
    that reached the sparsity if any did, then the least loss (the first
    of equal ones)."""
    pool = [e for e in epochs if e[1]] or list(epochs)
    return min(pool, key=lambda e: e[0])


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_the_best_of_a_run_in_any_order(order):
    state, best = FRESH, None
    for i in order:
        loss, reached = EPOCHS[i]
        if selection.is_best(state, loss, reached):
            state = state.replace(best_valid=loss, best_reached=reached)
            best = EPOCHS[i]
    assert best == _chosen([EPOCHS[i] for i in order])


def test_without_a_sparsity_target_the_lower_loss_wins():
    # The default of ``reached`` (True) and a state's (True): the loss
    # alone.
    assert FRESH.best_valid is None and FRESH.best_reached is True
    assert selection.is_best(FRESH, 9.0)
    best = FRESH.replace(best_valid=4.0)
    assert selection.is_best(best, 3.9)
    assert not selection.is_best(best, 4.0)
    assert not selection.is_best(best, 3.0, reached=False)
