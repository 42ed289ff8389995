"""A training run's state (training.runstate): the state before epoch 1,
the stopping rule, and the state a resumed run reads back (a changed
max_epochs extends it, other parameters are refused, an old or damaged
state.json)."""
import json
import os

import pytest

from support.lm_api import tiny_params
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.config.runrecord import RunState
from tf1_awd_sparse.awd_lm.graph.checkpoints import CheckpointError
from tf1_awd_sparse.awd_lm.training import runstate, selection

pytestmark = pytest.mark.per_python


def _params(**changes):
    return as_params(tiny_params()).replace(**changes)


def test_the_fresh_state_holds_every_key_at_its_start():
    params = _params(max_epochs=4)
    state = runstate.fresh_state(params)
    assert isinstance(state, RunState)
    assert state.to_json() == {
        "epoch": 0, "best_valid": None, "best_epoch": 0, "since_best": 0,
        "val_history": [], "averaging_epoch": None, "epochs": [],
        "train_seconds": 0.0, "done": False,
        "params": dict(params.to_flat())}
    assert runstate.stop_reason(state, params) is None


@pytest.mark.parametrize("changes,reason", [
    ({"since_best": 3}, "no improvement for 3 epochs"),
    ({"since_best": 2, "epoch": 4}, "max epochs (4)"),
    ({"since_best": 2, "epoch": 3}, None)])
def test_the_stopping_rule(changes, reason):
    params = _params(max_epochs=4, patience=3)
    state = runstate.fresh_state(params).replace(**changes)
    assert runstate.stop_reason(state, params) == reason


def _write_state(path, params, **changes):
    """A finished two-epoch state.json of ``params``."""
    state = runstate.fresh_state(params).replace(**dict(dict(
        epoch=2, best_valid=2.0, best_epoch=2, done=True, test_loss=2.1,
        stop_reason="max epochs (2)"), **changes))
    with open(path, "w") as handle:
        json.dump(state.to_json(), handle, indent=1, sort_keys=True)
    with open(path) as handle:
        return handle.read()


def test_a_longer_max_epochs_reopens_a_finished_run(tmp_path):
    path = str(tmp_path / "state.json")
    text = _write_state(path, _params(max_epochs=2))
    state = runstate.read_state(path, _params(max_epochs=3), "run")
    assert not state.done and state.params["max_epochs"] == 3
    assert state.epoch == 2 and state.test_loss == 2.1
    # The same maximum: still done; the file is not written here.
    again = runstate.read_state(path, _params(max_epochs=2), "run")
    assert again.done and again.params["max_epochs"] == 2
    with open(path) as handle:
        assert handle.read() == text


def test_other_parameters_are_refused_naming_them(tmp_path):
    path = str(tmp_path / "state.json")
    _write_state(path, _params(max_epochs=2))
    with pytest.raises(ValueError, match=r"resume: run was made with "
                                         r"different parameters \(lr\)"):
        runstate.read_state(path, _params(max_epochs=2, lr=3.0), "run")


def test_an_old_state_without_newer_keys_resumes(tmp_path):
    """A state.json of the first version: no best_reached (the selection
    rule reads its default: the best epoch reached the sparsity), no
    sparsity report, no quantization ranges."""
    path = str(tmp_path / "state.json")
    params = _params(max_epochs=2)
    _write_state(path, params, done=False, test_loss=None)
    with open(path) as handle:
        obj = json.load(handle)
    for key in ("test_loss", "stop_reason"):
        obj.pop(key)
    with open(path, "w") as handle:
        json.dump(obj, handle)
    state = runstate.read_state(path, params, "run")
    assert not state.holds("best_reached") and state.best_reached is True
    assert state.sparsity_report is None and state.quant_ranges is None
    assert state.to_json() == obj
    assert selection.is_best(state, 1.9) and not selection.is_best(state,
                                                                   2.1)
    assert selection.is_best(state.replace(best_reached=False), 2.5)


@pytest.mark.parametrize("damage,key", [
    (lambda s: s.pop("epoch"), "missing key 'epoch'"),
    (lambda s: s.update(since_best=1.5), "'since_best' must be an integer"),
    (lambda s: s.update(done="no"), "'done' must be true or false"),
    (lambda s: s.pop("params"), "missing key 'params'")])
def test_a_damaged_state_is_a_checkpoint_error_naming_the_key(
        tmp_path, damage, key):
    path = str(tmp_path / "state.json")
    _write_state(path, _params(max_epochs=2))
    with open(path) as handle:
        obj = json.load(handle)
    damage(obj)
    with open(path, "w") as handle:
        json.dump(obj, handle)
    with open(path) as handle:
        text = handle.read()
    with pytest.raises(CheckpointError) as error:
        runstate.read_state(path, _params(max_epochs=2), "run")
    message = str(error.value)
    assert message.startswith(path + ": ") and key in message, message
    assert "nothing was deleted" in message
    with open(path) as handle:
        assert handle.read() == text
    assert os.listdir(str(tmp_path)) == ["state.json"]
