"""What a training run's ``--out`` records about how it was made, read
back by ``awd-lm compress`` and ``awd-lm train --resume`` (issue 42).

A run's ``--out`` holds one directory per model (``awd/``, ``plain/``),
each with its ``config.json`` (`modeldir`: the complete parameters, so the
sizes, the epochs, the preset and the embedded corpus's ``hmm_*`` entries)
and ``state.json`` (the epochs run, whether the run finished); a
quantization-aware phase adds ``<model>_quant/`` alike. The corpus
directory is ``produced_by.data_dir`` of the model's config.json (an
absolute path; null for the embedded corpus); runs of versions before it
record only the corpus's name (``produced_by.corpus``, written at the end).

The whole plan of a run is recorded at its start (issue 54): the float
phase's config.json holds, in ``produced_by.plan``, the parameters of the
phases after it that were asked for, the quantization-aware one
(`presets.QUANT_KEYS`, with ``quant`` true) and the compression pipeline
(`presets.COMPRESS_KEYS`, with ``compress``), so that a run killed in its
float phase resumes into them as asked. Runs of versions before it record
a phase only once it has started (``<model>_quant/``).

`read` gathers one model's record; `explicit_conflicts` and `conflict_line`
say which explicitly given flags contradict it; `corpus_dir` decides the
corpus to read. Nothing here loads TensorFlow or a corpus.
"""
import json
import os

from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.config.rundir import (
    CONFIG_FILE, STATE_FILE, RunDir)

__all__ = ["MODELS", "Recorded", "trained_models", "read", "plan_entry",
           "recorded_overrides", "explicit_conflicts", "conflict_line",
           "corpus_dir", "EMBEDDED_PREFIX"]

#: The float models a run trains, each in ``<out>/<model>/``.
MODELS = ("plain", "awd")
#: How the embedded corpus's name starts (`synthetic.hmm_corpus`).
EMBEDDED_PREFIX = "hmm("
_MISSING = object()


class Recorded(object):
    """One model of a run as its directory records it.

    Attributes:
      model: ``'awd'`` or ``'plain'``; run_dir: ``<out>/<model>``.
      params: the float phase's complete parameters (config.json, else
        state.json).
      produced: config.json's ``produced_by`` ({} without one).
      plan: the later phases' recorded parameters (``produced_by.plan``,
        `plan_entry`; {} for a run of a version before it).
      words: the vocabulary (vocab.txt), or None.
      finished: whether the float phase finished (state.json ``done``).
      epoch: the epochs it has run.
      quant_params: the quantization-aware phase's parameters
        (``<model>_quant``), or None when the run has none.
      quant_finished: whether that phase finished.
    """

    def __init__(self, model, run_dir, params, produced, words, state,
                 quant=None):
        self.model, self.run_dir, self.params = model, run_dir, params
        self.produced, self.words = produced, words
        self.plan = dict(produced.get("plan") or {})
        self.finished = bool(state.get("done"))
        self.epoch = int(state.get("epoch") or 0)
        self.quant_params = quant[0] if quant else None
        self.quant_finished = bool(quant and quant[3].get("done"))

    def summary(self, quant=False):
        """The finished float (``quant``: quantization-aware) phase's
        summary: its summary.json, as `train.run` returned it.

        Raises:
          ValueError: the phase has not finished, or summary.json is
            unreadable (named).
        """
        run = (RunDir(os.path.dirname(self.run_dir)).quant_run(self.model)
               if quant else RunDir(self.run_dir))
        run_dir, path = run.path, run.summary_file
        done = self.quant_finished if quant else self.finished
        if not done or not os.path.isfile(path):
            where = ("" if quant else " (epoch %d of %d)" % (
                self.epoch, self.params["max_epochs"]))
            raise ValueError(
                "%s has not finished training%s: finish it first (awd-lm "
                "train --out %s --resume)" % (
                    run_dir, where, os.path.dirname(self.run_dir) or "."))
        return _load_json(path)


def _load_json(path):
    """A JSON file's object; ValueError naming the file."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError) as e:
        raise ValueError("%s: unreadable (%s); nothing was changed"
                         % (path, e))


def _phase(run_dir):
    """(params, produced_by, words, state) of a run directory, or None
    when it holds no run (neither config.json nor state.json)."""
    config_path = os.path.join(run_dir, CONFIG_FILE)
    state_path = os.path.join(run_dir, STATE_FILE)
    state = _load_json(state_path) if os.path.isfile(state_path) else {}
    if os.path.isfile(config_path):
        config = modeldir.read_config(config_path)
        return (config["params"], config.get("produced_by", {}),
                config["words"], state)
    if "params" in state:
        return state["params"], {}, None, state
    return None


def trained_models(out):
    """The float models ``out`` holds a run of (a directory with a
    config.json or state.json), in `MODELS` order."""
    return [m for m in MODELS
            if any(os.path.isfile(RunDir(out).model_run(m).join(name))
                   for name in (CONFIG_FILE, STATE_FILE))]


def read(out, model):
    """The record of ``out``'s ``model``, or None when it holds no run of
    it.

    Raises:
      modeldir.ConfigError / ValueError: an unreadable config.json or
        state.json (named).
    """
    root = RunDir(out)
    run_dir = root.model_run(model).path
    phase = _phase(run_dir)
    if phase is None:
        return None
    params, produced, words, state = phase
    return Recorded(model, run_dir, params, produced, words, state,
                    _phase(root.quant_run(model).path))


def plan_entry(params):
    """What a run's float phase records of the phases after it
    (``produced_by.plan``): every `presets.QUANT_KEYS` value when
    ``quant`` is on and every `presets.COMPRESS_KEYS` value when
    ``compress`` names techniques, as resolved (defaults included), so
    that a resumed run finishes what was asked whatever the defaults
    become.

    Args:
      params: the model's complete parameters (a mapping).

    Returns:
      dict (empty for a run of the float phase alone).
    """
    value = dict(presets.DEFAULTS, **dict(params))
    keys = ((presets.QUANT_KEYS if value["quant"] else ())
            + (presets.COMPRESS_KEYS if value["compress"] else ()))
    return {k: value[k] for k in keys}


def recorded_overrides(record, compression=True):
    """The parameters to run ``record``'s model with, as
    `presets.params_for` overrides: its float phase's, the later phases'
    it planned (`plan_entry`; ``compression`` False leaves the
    compression pipeline's out: ``awd-lm compress`` gives its own) and,
    when it has one, its quantization-aware phase's `presets.QUANT_KEYS`
    (``quant`` on; they win, as that phase ran with them)."""
    overrides = {k: v for k, v in record.params.items()
                 if k in presets.DEFAULTS and k not in presets.QUANT_KEYS}
    overrides.update((k, v) for k, v in record.plan.items()
                     if k in presets.DEFAULTS and (
                         compression or k not in presets.COMPRESS_KEYS))
    if record.quant_params is not None:
        overrides.update({k: record.quant_params[k]
                          for k in presets.QUANT_KEYS
                          if k in record.quant_params})
        overrides["quant"] = True
    return overrides


def explicit_conflicts(record, explicit, may_change=(), compression=True):
    """The explicitly given parameters that contradict ``record``.

    Args:
      record: a `Recorded`.
      explicit: {key: value} of the parameters given explicitly (flags).
      may_change: keys allowed to differ (``max_epochs`` and
        ``quant_epochs`` extend a resumed run).
      compression: whether the planned compression binds (as
        `recorded_overrides`).

    Returns:
      sorted [(key, given, recorded)]: a float-phase parameter the run
      records otherwise, or one of a later phase it planned (or its
      ``_quant`` phase ran) otherwise. ``quant`` and ``compress`` given to
      a run that planned no such phase add it: never a conflict.
    """
    recorded = recorded_overrides(record, compression)
    out = []
    for key, value in sorted(explicit.items()):
        if key in may_change or key == "quant" or key not in recorded:
            continue
        if value != recorded[key]:
            out.append((key, value, recorded[key]))
    return out


def conflict_line(run_dir, conflicts, flag, remedy):
    """The one-line error of `explicit_conflicts`' result: each flag, the
    value given and the run's, and ``remedy``."""
    given = ", ".join("%s %s" % (flag(k), _text(v)) for k, v, _ in conflicts)
    made = ", ".join("%s %s" % (flag(k), _text(r)) for k, _, r in conflicts)
    return ("%s contradict%s the run in %s (made with %s): %s" % (
        given, "s" if len(conflicts) == 1 else "", run_dir, made, remedy))


def _text(value):
    """A parameter value as a flag would spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)


def corpus_dir(record, given, flag="--data-dir"):
    """The corpus directory a recorded run continues on (None: the
    embedded corpus), never the embedded corpus for a run made on a
    directory.

    Args:
      record: a `Recorded`.
      given: the explicitly given directory, or None.
      flag: how the command line names it.

    Returns:
      the directory to read, or None for the embedded corpus.

    Raises:
      ValueError: ``given`` contradicts the recorded corpus (a directory
        still there, or the embedded corpus), or the run's corpus
        directory is unknown (an older version's run) or gone and none
        was given; one line naming the flag.
    """
    recorded = record.produced.get("data_dir", _MISSING)
    where = record.run_dir
    if recorded is None:
        if given:
            raise ValueError("%s %s: the run in %s was trained on the "
                             "embedded corpus: leave %s out"
                             % (flag, given, where, flag))
        return None
    if recorded is not _MISSING:
        if given and os.path.isdir(recorded) and (
                os.path.realpath(given) != os.path.realpath(recorded)):
            raise ValueError("%s %s contradicts the run in %s (trained on "
                             "%s %s): leave %s out" % (
                                 flag, given, where, flag, recorded, flag))
        if not given and not os.path.isdir(recorded):
            raise ValueError("%s was trained on %s %s, which is gone: give "
                             "%s with that corpus" % (where, flag, recorded,
                                                      flag))
        return given or recorded
    name = record.produced.get("corpus")
    if given or name is None or name.startswith(EMBEDDED_PREFIX):
        return given or None   # the vocabulary check tells the rest
    raise ValueError("%s was trained on the corpus %r, whose directory its "
                     "version did not record: give %s" % (where, name, flag))
