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
returns) and `EpochRecord` (an epoch of either). Each is a frozen object
with one `Field` per key, whose docstring is the key's only description:
``RunSummary.from_json(d, source)`` checks a dict loaded from JSON and
``.to_json()`` gives it back key for key, in its order, so the files stay
as they were. A key every version wrote is required; a key added later
has a default, so that older runs still read; a missing required key or a
wrong type is a `RecordError` naming the file and the key. Unknown keys
(``extra`` entries, a newer version's) are kept as they are.

`read` gathers one model's record; `explicit_conflicts` and `conflict_line`
say which explicitly given flags contradict it; `corpus_dir` decides the
corpus to read. Nothing here loads TensorFlow or a corpus.
"""
import json
import os

from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.config.rundir import (
    CONFIG_FILE, STATE_FILE, RunDir)
from tf1_awd_sparse.base.errors import Error

__all__ = ["MODELS", "Recorded", "trained_models", "read", "plan_entry",
           "recorded_overrides", "explicit_conflicts", "conflict_line",
           "corpus_dir", "EMBEDDED_PREFIX", "RecordError", "Field",
           "Record", "EpochRecord", "RunState", "RunSummary"]

#: The float models a run trains, each in ``<out>/<model>/``.
MODELS = ("plain", "awd")
#: How the embedded corpus's name starts (`synthetic.hmm_corpus`).
EMBEDDED_PREFIX = "hmm("
_MISSING = object()


_REQUIRED = object()


class RecordError(ValueError, Error):
    """A run's record (state.json, summary.json) that is not one: no JSON
    object, a key every version wrote missing, or a value of the wrong
    type; one line naming the file and the key. A ``ValueError`` and a
    `tf1_awd_sparse.Error`."""


#: The Python types of each JSON type a `Field` holds (an integer is a
#: number; true / false are no integer).
_TYPES = {int: (int,), float: (int, float), bool: (bool,), str: (str,),
          dict: (dict,), list: (list, tuple)}
_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false",
               str: "a string", dict: "an object", list: "a list"}


def _to_json(value):
    """A record's value as a fresh JSON value (records as dicts, tuples as
    lists, containers copied)."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


class Field(object):
    """One key of a record, its only definition: the JSON type of its
    value, whether it may be null, the default of a record (of an older
    version) without it, and its docstring.

    Read as a record's attribute it gives the key's value (a list as a
    tuple; a list of records as a tuple of them), or its default when the
    record lacks the key. Records are frozen: assigning raises
    AttributeError (`Record.replace` makes a changed copy).

    Args:
      kind: int, float (an integer is accepted), bool, str, dict or list;
        or a `Record` subclass: a list of such records.
      doc: what the value is (its unit, when it is set).
      null: whether the value may be null (None).
      default: the value of a record without the key; omitted, the key is
        required (every version wrote it).
    """

    def __init__(self, kind, doc, null=False, default=_REQUIRED):
        self.kind, self.null, self.default = kind, null, default
        self.__doc__ = doc
        self.name = None

    def __set_name__(self, owner, name):
        self.name = name

    @property
    def required(self):
        """Whether a record must hold the key (it has no default)."""
        return self.default is _REQUIRED

    def __get__(self, record, owner=None):
        if record is None:
            return self
        return record._values.get(self.name, self.default)

    def __set__(self, record, value):
        raise AttributeError("%s.%s is read-only: make a changed copy with "
                             "replace(%s=...)" % (type(record).__name__,
                                                  self.name, self.name))

    def check(self, value, where):
        """``value`` as a record holds it: a list as a tuple, a list of
        records as a tuple of them (`Record.coerce`), an object copied.

        Raises:
          RecordError: a value of another type, named with ``where`` (the
            file) and the key.
        """
        if value is None and self.null:
            return None
        nested = isinstance(self.kind, type) and issubclass(self.kind, Record)
        kind = list if nested else self.kind
        if not isinstance(value, _TYPES[kind]) or (
                kind is not bool and isinstance(value, bool)):
            text = repr(value)
            raise RecordError("%s: key %r must be %s%s, got %s" % (
                where, self.name, _TYPE_NAMES[kind],
                " or null" if self.null else "",
                text if len(text) <= 40 else text[:37] + "..."))
        if nested:
            return tuple(self.kind.coerce(item, "%s: %s[%d]" % (
                where, self.name, i)) for i, item in enumerate(value))
        if kind in (list, dict):
            return tuple(value) if kind is list else _to_json(value)
        return value

    def describe(self):
        """The field's line of its record's docstring."""
        first = (self.__doc__ or "").strip()
        if self.required:
            return "%s: %s" % (self.name, first)
        return "%s: %s Absent: %r." % (self.name, first, self.default)


class Record(object):
    """A frozen record a run writes as a JSON object; a subclass declares
    one `Field` per key it reads.

    Build one with `from_json` (a dict loaded from a file), `read` (the
    file) or keywords (``EpochRecord(epoch=1, ...)``, the keys in the
    order given); `to_json` gives the dict back, key for key and in its
    order. Keys no field declares (``extra``: a summary's ``extra``
    entries, a newer version's keys) are kept as they are.
    """
    __slots__ = ("_values",)
    #: How messages name a record of the class.
    WHAT = "record"
    #: {key: `Field`} of the class, in declaration order (set for each
    #: subclass).
    FIELDS = {}

    def __init_subclass__(cls, **kwargs):
        super(Record, cls).__init_subclass__(**kwargs)
        fields = {}
        for klass in reversed(cls.__mro__):
            fields.update((name, value) for name, value in vars(klass).items()
                          if isinstance(value, Field))
        cls.FIELDS = fields
        if cls.__doc__:   # None under python -OO
            cls.__doc__ += "\n    Fields (`Field`; the record's keys):\n\n" \
                + "\n".join("      " + f.describe()
                            for f in fields.values()) + "\n"

    def __init__(self, **values):
        self._values = self._checked(values, type(self).__name__)

    @classmethod
    def _checked(cls, obj, where):
        """``obj``'s values as the record holds them (`Field.check`).

        Raises:
          RecordError: no dict, a required key missing, a value of the
            wrong type; named with ``where`` and the key.
        """
        if not isinstance(obj, dict):
            raise RecordError("%s: expected %s (a JSON object), got %s" % (
                where, cls.WHAT, type(obj).__name__))
        for name, field in cls.FIELDS.items():
            if field.required and name not in obj:
                doc = (field.__doc__ or "").strip().rstrip(".")
                raise RecordError("%s: missing key %r of %s (%s)" % (
                    where, name, cls.WHAT, doc[:1].lower() + doc[1:]))
        return {key: cls.FIELDS[key].check(value, where)
                if key in cls.FIELDS else value
                for key, value in obj.items()}

    @classmethod
    def from_json(cls, obj, source=None):
        """The record of ``obj``, a dict as JSON loads it.

        Args:
          obj: dict.
          source: where it came from (the file), naming it in errors
            (default: `WHAT`).

        Raises:
          RecordError: ``obj`` is no dict, lacks a required key, or holds a
            value of the wrong type; named with ``source`` and the key.
        """
        record = cls.__new__(cls)
        record._values = cls._checked(obj, source or cls.WHAT)
        return record

    @classmethod
    def read(cls, path):
        """The record of the JSON file ``path``.

        Raises:
          RecordError: the file cannot be read or is not JSON, or is no
            such record (`from_json`); named.
        """
        try:
            with open(path) as handle:
                obj = json.load(handle)
        except (IOError, OSError, ValueError) as e:
            raise RecordError("%s: unreadable (%s)" % (path, e))
        return cls.from_json(obj, path)

    @classmethod
    def coerce(cls, value, source=None):
        """``value`` itself when it is a record of the class, else
        `from_json` of it."""
        return value if isinstance(value, cls) else cls.from_json(value,
                                                                  source)

    def to_json(self):
        """The record as a dict of JSON values (a fresh copy): the keys it
        holds, in their order, so that a file read and written again
        keeps its content."""
        return {k: _to_json(v) for k, v in self._values.items()}

    def replace(self, **changes):
        """A copy with ``changes`` (checked): a key it holds keeps its
        place, a new one comes last (as a dict's update).

        Raises:
          RecordError: a value of the wrong type (named).
        """
        values = dict(self._values)
        values.update(changes)
        record = type(self).__new__(type(self))
        record._values = self._checked(values, "%s.replace" % (
            type(self).__name__))
        return record

    def holds(self, key):
        """Whether the record holds ``key`` itself (not its default)."""
        return key in self._values

    @property
    def extra(self):
        """{key: value} of the keys no field declares."""
        return {k: v for k, v in self._values.items()
                if k not in self.FIELDS}

    def __eq__(self, other):
        return type(other) is type(self) and other._values == self._values

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % item for item in self._values.items()))


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
      params: the float phase's complete parameters (config.json, else
        state.json).
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
          RecordError: (a ValueError) summary.json is unreadable or no
            run's summary (named with the key).
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
    """(params, produced_by, words, `RunState` or None) of a run
    directory, or None when it holds no run (neither config.json nor
    state.json)."""
    config_path = os.path.join(run_dir, CONFIG_FILE)
    state_path = os.path.join(run_dir, STATE_FILE)
    state = RunState.read(state_path) if os.path.isfile(state_path) \
        else None
    if os.path.isfile(config_path):
        config = modeldir.read_config(config_path)
        return (config["params"], config.get("produced_by", {}),
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
      modeldir.ConfigError / RecordError: an unreadable config.json or
        state.json (named; a state.json with the key).
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
