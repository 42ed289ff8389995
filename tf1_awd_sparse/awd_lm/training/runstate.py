"""A training run's Python-side state (state.json): the state before
epoch 1, the stopping rule, and the state a resumed run reads back.

The state is a `runrecord.RunState` (each key's meaning is its field's
docstring): the epoch, the best validation loss and its epoch, the epochs
since, NT-ASGD's validation history, the epoch records and the run's
parameters (flat, as config.json writes them). With the saved checkpoints
it is all an epoch depends on, so that `train.Trainer` redoes an
interrupted epoch exactly.
"""
from tf1_awd_sparse.awd_lm.config import presets, registry
from tf1_awd_sparse.awd_lm.config.runrecord import RunState
from tf1_awd_sparse.base.jsonrecord import RecordError
from tf1_awd_sparse.awd_lm.graph.checkpoints import CheckpointError

__all__ = ["EXTENDING_KEYS", "fresh_state", "stop_reason",
           "changed_parameters", "read_state"]

#: The parameters a resumed run may change: they extend or shorten it (a
#: quantized run's max_epochs is its quant_epochs).
EXTENDING_KEYS = registry.keys(extends=True)


def fresh_state(params):
    """The loop's Python-side state before epoch 1.

    Args:
      params: the run's parameters (a `Params`); the state holds
        them flat (`Params.to_flat`), as config.json does.

    Returns:
      `RunState`.
    """
    return RunState(epoch=0, best_valid=None, best_epoch=0, since_best=0,
                    val_history=[], averaging_epoch=None, epochs=[],
                    train_seconds=0.0, done=False,
                    params=dict(params.to_flat()))


def stop_reason(state, params):
    """Why training stops after the last finished epoch, or None.

    The rule, the same for every model: stop when validation has not
    improved for `patience` epochs (counted from the best epoch, or from
    the epoch NT-ASGD started averaging if that is later), or after
    `max_epochs`.

    Args:
      state: the run's `RunState`.
      params: the run's parameters (a `Params`).

    Returns:
      str or None.
    """
    stopping = params.stopping
    if state.since_best >= stopping.patience:
        return "no improvement for %d epochs" % stopping.patience
    if state.epoch >= stopping.max_epochs:
        return "max epochs (%d)" % stopping.max_epochs
    return None


def changed_parameters(params, recorded):
    """The keys whose values differ between a run's parameters and those
    it recorded, but `EXTENDING_KEYS`, sorted.

    Both are compared flat (``config.json``'s keys), so a run recorded by
    an earlier version resumes: a parameter the run's version did not
    have yet counts as its default (`presets.DEFAULTS`).

    Args:
      params: the parameters given now (a `Params`).
      recorded: the flat dict the run recorded (state.json's ``params``).

    Returns:
      list of str.
    """
    flat = params.to_flat()
    return sorted(k for k in set(flat) | set(recorded)
                  if flat.get(k) != recorded.get(k, presets.DEFAULTS.get(k))
                  and k not in EXTENDING_KEYS)


def read_state(path, params, run_dir):
    """The state.json of a run to resume with ``params``.

    A changed ``max_epochs`` extends or shortens the run: a run that was
    done but stops later now is continued.

    Args:
      path: the run's state.json.
      params: the parameters it resumes with (a `Params`).
      run_dir: the run's directory (in messages).

    Returns:
      `RunState`.

    Raises:
      CheckpointError: an unreadable state.json, or one without a key
        every version wrote or with a value of the wrong type (named
        with the key; nothing deleted).
      ValueError: parameters that differ from the run's (named), but
        `EXTENDING_KEYS`.
    """
    try:
        state = RunState.read(path)
    except RecordError as e:
        raise CheckpointError("%s; unreadable run state, nothing was "
                              "deleted" % (e,))
    changed = changed_parameters(params, state.params)
    if changed:
        raise ValueError("resume: %s was made with different parameters "
                         "(%s): resume it with its own, or train these "
                         "in a new directory; nothing was changed"
                         % (run_dir, ", ".join(changed)))
    max_epochs, old = params.stopping.max_epochs, state.params
    if old.get("max_epochs") != max_epochs:
        state = state.replace(params=dict(old, max_epochs=max_epochs))
        if state.done and stop_reason(state, params) is None:
            # Extended past its old maximum.
            state = state.replace(done=False)
    return state
