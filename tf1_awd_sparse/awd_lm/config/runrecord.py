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

The files a training run writes are read through typed records (issue
56): `RunState` (state.json), `RunSummary` (summary.json, what `train.run`
returns) and `EpochRecord` (an epoch of either), frozen
`base.jsonrecord.Record` objects with one `Field` per key, whose docstring
is the key's only description: ``RunSummary.from_json(d, source)`` checks
a dict loaded from JSON and ``.to_json()`` gives it back key for key, in
its order, so the files stay as they were. A key every version wrote is
required; a key added later has a default, so that older runs still read;
a missing required key or a wrong type is a `jsonrecord.RecordError`
naming the file and the key.

`read` gathers one model's record; `explicit_conflicts` and `conflict_line`
say which explicitly given flags contradict it; `corpus_dir` decides the
corpus to read. Nothing here loads TensorFlow or a corpus.
"""
import json
import os

from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.config.rundir import (
    CONFIG_FILE, STATE_FILE, RunDir)
from tf1_awd_sparse.base.jsonrecord import Field, Record, RecordError

__all__ = ["MODELS", "Recorded", "trained_models", "read", "plan_entry",
           "recorded_overrides", "explicit_conflicts", "conflict_line",
           "corpus_dir", "EMBEDDED_PREFIX", "EpochRecord", "RunState",
           "RunSummary"]

#: The float models a run trains, each in ``<out>/<model>/``.
MODELS = ("plain", "awd")
#: How the embedded corpus's name starts (`synthetic.hmm_corpus`).
EMBEDDED_PREFIX = "hmm("
_MISSING = object()


class EpochRecord(Record):
    """One epoch of a training run, as the loop recorded it (state.json's
    and summary.json's ``epochs``; the ``'epoch'`` event, `training.
    records`, without its ``event`` key)."""
    __slots__ = ()
    WHAT = "an epoch's record"
    epoch = Field(int, "The epoch (1-based).")
    train_loss = Field(float, "The mean training loss (nats per token).")
    valid_loss = Field(float, "The validation loss (nats per token) of the "
                       "weights validated.")
    train_ppl = Field(float, "exp(train_loss).")
    valid_ppl = Field(float, "exp(valid_loss).")
    tokens_per_s = Field(float, "Training tokens per second.")
    seconds = Field(float, "The epoch's wall time (training, validation, "
                    "checkpoints).")
    averaged = Field(bool, "Whether NT-ASGD's averaged weights were the "
                     "ones validated.")
    lr = Field(float, "The learning rate.")
    model = Field(str, "The model's label (`presets.label`).", null=True,
                  default=None)
    best = Field(bool, "Whether the validation loss was a new best (the "
                 "best checkpoint was written).", default=False)
    averaging_started = Field(bool, "Whether NT-ASGD switched to averaging "
                              "after this epoch.", default=False)
    sparsity = Field(float, "The global fraction of zero weights validated "
                     "(sparse and pruned models).", null=True, default=None)
    distill_kl = Field(float, "The mean KL(teacher || student) of a "
                       "distilled run.", null=True, default=None)
    scheduled_sparsity = Field(float, "The sparsity controller's target "
                               "for this epoch.", null=True, default=None)
    sparsity_weight_scale = Field(float, "The controller's new scale of "
                                  "the sparsity loss.", null=True,
                                  default=None)


class _RunFields(Record):
    """The keys a run's state.json and its summary.json share (one
    definition each)."""
    __slots__ = ()
    params = Field(dict, "The run's parameters, flat (`Params.to_flat`; "
                   "an older version's keys as it wrote them).")
    epochs = Field(EpochRecord, "The finished epochs' records.")
    averaging_epoch = Field(int, "The epoch after which NT-ASGD averages "
                            "(null: never, or not yet).", null=True)
    train_seconds = Field(float, "The epochs' wall time, summed.")
    sparsity_report = Field(dict, "The best checkpoint's sparsity: "
                            "``global`` and per-layer ``layers`` (sparse "
                            "models, once scored).", null=True,
                            default=None)
    quant_ranges = Field(dict, "The learned quantization ranges at the "
                         "best checkpoint (once scored).", null=True,
                         default=None)


class RunState(_RunFields):
    """A training run's Python-side state, state.json: with the saved
    checkpoints all an epoch depends on, so that a resumed run redoes an
    interrupted epoch exactly (`training.runstate`)."""
    __slots__ = ()
    WHAT = "a run's state.json"
    epoch = Field(int, "The epochs finished.")
    best_valid = Field(float, "The best validation loss so far (null "
                       "before the first best epoch).", null=True)
    best_epoch = Field(int, "The best epoch (0 before one).")
    since_best = Field(int, "Selectable epochs since the best (patience "
                       "counts them).")
    val_history = Field(list, "The validation losses NT-ASGD's trigger "
                        "has seen.")
    done = Field(bool, "Whether the run finished (its best checkpoint "
                 "was scored).")
    best_reached = Field(bool, "Whether the best epoch reached "
                         "select_min_sparsity.", default=True)
    stop_reason = Field(str, "Why training stopped (set when done).",
                        null=True, default=None)
    test_loss = Field(float, "The best checkpoint's test loss (set when "
                      "done).", null=True, default=None)
    best_valid_check = Field(float, "The best checkpoint's validation "
                             "loss, evaluated again (set when done).",
                             null=True, default=None)

    @classmethod
    def _checked(cls, obj, where):
        values = super(RunState, cls)._checked(obj, where)
        if values["done"] and values.get("test_loss") is None:
            raise RecordError("%s: missing key 'test_loss' of %s (a "
                              "finished run's test loss)" % (where,
                                                             cls.WHAT))
        return values


class RunSummary(_RunFields):
    """A finished training run's summary, summary.json: what `train.run`
    returns, and each model's row of ``--out``'s summary.json."""
    __slots__ = ()
    WHAT = "a run's summary"
    model = Field(str, "The model's label (`presets.label`; ``awd+q`` "
                  "for a quantization-aware run in --out's summary).")
    corpus = Field(str, "The corpus's name.")
    epochs_run = Field(int, "The epochs trained.")
    best_epoch = Field(int, "The best validation epoch (its checkpoint "
                       "is scored).")
    best_valid_ppl = Field(float, "The best epoch's validation "
                           "perplexity.")
    test_ppl = Field(float, "The test perplexity at the best checkpoint.")
    stop_reason = Field(str, "Why training stopped.", null=True)
    unk_counts = Field(dict, "{split: words not in the training "
                       "vocabulary}.")
    quant = Field(bool, "Whether the model was quantization-aware.",
                  default=False)
    init_from = Field(str, "The checkpoint the run started from (null: "
                      "none).", null=True, default=None)
    floor_ppl = Field(float, "The embedded corpus's source perplexity "
                      "(an ``extra`` entry of the programs).", null=True,
                      default=None)


class Recorded(object):
    """One model of a run as its directory records it.

    Attributes:
      model: ``'awd'`` or ``'plain'``; run_dir: ``<out>/<model>``.
      params: the float phase's complete parameters as recorded, flat
        (config.json's, else state.json's ``params``).
      preset: the preset it was made with (None: a model made in Python).
      produced: config.json's ``produced_by`` ({} without one).
      plan: the later phases' recorded parameters (``produced_by.plan``,
        `plan_entry`; {} for a run of a version before it).
      words: the vocabulary (vocab.txt), or None.
      finished: whether the float phase finished (state.json's
        `RunState.done`; False without a state.json).
      epoch: the epochs it has run (`RunState.epoch`; 0 without one).
      quant_params: the quantization-aware phase's parameters
        (``<model>_quant``), or None when the run has none.
      quant_finished: whether that phase finished.
    """

    def __init__(self, model, run_dir, params, produced, words, state,
                 quant=None):
        self.model, self.run_dir, self.params = model, run_dir, params
        self.preset = params.get("preset")
        self.produced, self.words = produced, words
        self.plan = dict(produced.get("plan") or {})
        self.finished = bool(state and state.done)
        self.epoch = state.epoch if state else 0
        self.quant_params = quant[0] if quant else None
        self.quant_finished = bool(quant and quant[3] and quant[3].done)

    def summary(self, quant=False):
        """The finished float (``quant``: quantization-aware) phase's
        summary: its summary.json (a `RunSummary`), as `train.run`
        returned it.

        Raises:
          ValueError: the phase has not finished.
          jsonrecord.RecordError: (a ValueError) summary.json is
            unreadable or no run's summary (named with the key).
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
        return RunSummary.read(path)


def _phase(run_dir):
    """(flat params, produced_by, words, `RunState` or None) of a run
    directory, or None when it holds no run (neither config.json nor
    state.json)."""
    config_path = os.path.join(run_dir, CONFIG_FILE)
    state_path = os.path.join(run_dir, STATE_FILE)
    state = RunState.read(state_path) if os.path.isfile(state_path) \
        else None
    if os.path.isfile(config_path):
        config = modeldir.read_config(config_path)
        return (config["params"].to_flat(), config.get("produced_by", {}),
                config["words"], state)
    if state is not None:
        return state.params, {}, None, state
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
      modeldir.ConfigError / jsonrecord.RecordError: an unreadable
        config.json or state.json (named; a state.json with the key).
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
      params: the model's `Params`.

    Returns:
      dict (empty for a run of the float phase alone).
    """
    value = dict(presets.DEFAULTS, **params.to_flat())
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
