"""The language model's configuration as one checked, immutable object.

A run's parameters enter from outside in few places: the command lines
(`Params.for_preset`: `presets.params_for`'s dict, in `training.plan` and
`distributed.cli`), a ``config.json`` (`modeldir.read_config`) and the
public Python functions that take parameters (`build_lm(features, mode,
params)`, `train.run(corpus, params, run_dir)`, an Estimator's
`model_fn.train_step`, ...), each marked `takes_params`.
Each entry turns them into a `Params` once, with `as_params`: every value
is checked by its entry of the registry of parameters
(`registry.PARAMETERS`, the one place a parameter's default, valid range
and section are stated), a misspelt key is refused naming the closest
parameter, and a missing one takes its default. Everything below an
entry takes that `Params` (never a dict) and reads attributes of the
checked object, grouped in sections (each one's fields are the registry's
keys of that section)::

    params.model.hidden_size          # ModelConfig
    params.regularization.dropouth    # RegularizationConfig
    params.optimization.lr            # OptimizationConfig
    params.prune.target_sparsity      # PruneConfig

A section's fields are named as the flat keys of ``config.json`` and of the
command line (``--hidden-size``), so that one flat JSON round trip keeps
every existing ``config.json`` and flag working: ``Params.from_flat(d)``
reads one, `Params.to_flat` writes it back, key for key: the keys that were
given, no more (a float phase's config holds no quantization or
compression key, so that adding ``--quant`` to a finished run resumes it),
while an attribute of a key not given reads its default.

The `StageConfig` section holds what the pipeline sets for a stage of a run
(a reference's averaging from its first step, a ramp's controller, a
distilled run's teacher, the inference graph's held masks); they are not
command-line flags (`USER_KEYS` are).

A `Params` is no mapping (0.4.0's was one): it does not iterate, has no
``keys`` / ``get`` / ``in``, and equals only another `Params`;
``params.to_flat()`` is the flat dict. ``params['lr']``, as code written
against the parameter dicts of 0.3.x reads them, still returns the value
with a ``DeprecationWarning`` naming the attribute to read
(`base.legacy.warn_params_item`).
"""
import collections
import collections.abc
import functools
import inspect

from tf1_awd_sparse.awd_lm.config import presets, registry
from tf1_awd_sparse.base import legacy
from tf1_awd_sparse.base.errors import Error

__all__ = ["Params", "as_params", "takes_params", "ParameterError",
           "ParameterTypeError",
           "SECTIONS", "USER_KEYS", "STAGE_KEYS",
           "RunConfig", "ModelConfig", "RegularizationConfig",
           "OptimizationConfig", "StoppingConfig", "SparseConfig",
           "PruneConfig", "CompressionConfig", "DistillConfig",
           "QuantizationConfig", "CorpusConfig", "StageConfig"]


class ParameterError(ValueError, Error):
    """A key that is no parameter (named with the closest) or an invalid
    value (named with its range), from `as_params` / `Params.from_flat` /
    `Params.replace`: a ``ValueError`` and a `tf1_awd_sparse.Error`."""


class ParameterTypeError(TypeError, Error):
    """`as_params` (a `takes_params` function) given neither a mapping nor
    a `Params`: a ``TypeError`` and a `tf1_awd_sparse.Error`."""


def _section(name, fields, doc):
    """An immutable section class: a namedtuple of ``fields`` (flat keys)
    with ``doc`` as its docstring."""
    base = collections.namedtuple(name, fields)
    return type(name, (base,), {"__slots__": (), "__doc__": doc})


RunConfig = _section("RunConfig", registry.keys(section="run"), """\
Which model of which preset: ``model`` 'awd' (regularized) or 'plain';
``preset`` a key of `presets.PRESETS` (None for a model made in Python).""")

ModelConfig = _section(
    "ModelConfig", registry.keys(section="model"),
    """\
The network's shape: ``vocab_size`` words (None until a corpus gives it),
an ``emb_size``-wide table tied to the decoder, ``num_layers`` LSTM layers
of ``hidden_size`` units but the last (``emb_size`` units).""")

RegularizationConfig = _section(
    "RegularizationConfig", registry.keys(section="regularization"), """\
AWD-LSTM's regularization (model 'awd' only): the output, between-layer,
input and embedding dropout rates, the recurrent DropConnect rate, the
AR (``alpha``) and TAR (``beta``) weights and the L2 weight decay.""")

OptimizationConfig = _section(
    "OptimizationConfig", registry.keys(section="optimization"), """\
How the model trains: batches, the (variable) truncation length, the
learning rate and gradient clipping (0: none), 'ntasgd' or 'sgd' with
NT-ASGD's trigger window ``nonmono``, the seed, and the learning rate of
log sigma^2 / log alpha as a multiple of ``lr``.""")

StoppingConfig = _section(
    "StoppingConfig", registry.keys(section="stopping"), """\
The stopping rule: at most ``max_epochs`` epochs, ``patience`` epochs
without a better validation perplexity; the best epoch is chosen from
``select_from_epoch`` on (later than 1 while a schedule still runs).""")

SparseConfig = _section(
    "SparseConfig", registry.keys(section="sparse"),
    """\
Sparse layers: the technique (None, 'variational_dropout' or 'l0'), the
KL / L0 weight (None: 1 / training tokens) and the global steps over
which it ramps up linearly.""")

PruneConfig = _section(
    "PruneConfig", registry.keys(section="prune"), """\
Pruning masks: None, 'magnitude' (the gradual schedule to
``target_sparsity`` between the two steps, every ``pruning_frequency``
steps) or 'fixed' (masks as restored), in 1 x ``pruning_block`` blocks;
``table_sparsity`` (None: the target) the table's own target, the kernels
taking the rest of the model's zeros (`compression_ops.matrix_targets`);
``group_lasso`` the weight of the group lasso on the pruned weights'
blocks while 'magnitude' prunes (`compression_ops.group_lasso_loss`);
``table_rank`` r > 0: the table is the pruned one plus a dense rank-r
product (`tables.embedding_table`) on the vocabulary's first
``table_rank_rows`` words (0: every word).""")

CompressionConfig = _section(
    "CompressionConfig", registry.keys(section="compression"), """\
The compression pipeline after the float model: the techniques
(comma-separated; ``ship_ppl_target`` the perplexity target of the file
it recommends, `compression.ship.recommend`), each stage's fine-tuning
epochs, learning rate (None:
lr / 4) and optimizer, the VD / L0 weight and its controller factor, the
exact cut's scope ('matrix' or 'global'), the factor on every dropout
rate in the compressed model's fine-tunings, the ramp's fraction of
the epochs and whether a small-dense model of the compressed file's
bytes trains beside it.""")

DistillConfig = _section(
    "DistillConfig", registry.keys(section="distill"), """\
Knowledge distillation in the compression stages: the loss adds
``distill_weight`` * T^2 * the cross-entropy against the teacher's softmax
at temperature T; the teacher is the 'float' model or the 'reference'.""")

QuantizationConfig = _section(
    "QuantizationConfig", registry.keys(section="quantization"),
    """\
Quantization-aware fine-tuning of the trained model: on or off, its
epochs, the step fake quantization starts, its learning rate (None:
lr / 4) and the bits of weights and activations.""")

CorpusConfig = _section(
    "CorpusConfig", registry.keys(section="corpus"), """\
The embedded corpus (used without ``--data-dir``): the hidden Markov
model's seed, states and vocabulary, and each split's tokens.""")

StageConfig = _section(
    "StageConfig", registry.keys(section="stage"), """\
What the pipeline sets for one stage of a run (no command-line flag):
NT-ASGD averaging from the first step (the reference), a VD / L0 ramp's
controller factor, the least sparsity a best epoch must reach, a
distilled stage's teacher checkpoint prefix, and held (variational)
masks in the cells (False in inference graphs).""")

#: Section attribute name -> section class, in order.
SECTIONS = collections.OrderedDict([
    ("run", RunConfig), ("model", ModelConfig),
    ("regularization", RegularizationConfig),
    ("optimization", OptimizationConfig), ("stopping", StoppingConfig),
    ("sparse", SparseConfig), ("prune", PruneConfig),
    ("compression", CompressionConfig), ("distill", DistillConfig),
    ("quantization", QuantizationConfig), ("corpus", CorpusConfig),
    ("stage", StageConfig)])

#: Flat key -> its section's attribute name.
_SECTION_OF = dict((key, name) for name, cls in SECTIONS.items()
                   for key in cls._fields)

#: The order of `Params.to_flat` (that of `presets.params_for`'s dict,
#: so that a config.json reads as before): the registry's.
_FLAT_ORDER = tuple(registry.BY_NAME)
#: Keys the pipeline sets for a stage, never a flag.
STAGE_KEYS = StageConfig._fields
#: Keys a user sets: the command line's flags (``--hidden-size``) and
#: ``--hparams`` items.
USER_KEYS = tuple(p.name for p in registry.PARAMETERS
                  if p.preset and p.section != "stage")


def _check(key, value, name):
    """``value`` checked by ``key``'s check (`presets.CHECKS`).

    Raises:
      ParameterError: it is invalid (the check's one line)."""
    try:
        return presets.CHECKS[key](value, name % (key,))
    except ValueError as e:
        raise ParameterError(str(e))


class Params(object):
    """A language model's checked parameters, by section.

    Build one with `Params.from_flat` or `as_params`; change one with
    `replace` (a new checked object; a ``Params`` never changes). It is
    no mapping: `to_flat` is the flat dict (``params['lr']`` is
    deprecated, see the module's docstring).

    Attributes:
      run, model, regularization, optimization, stopping, sparse, prune,
      compression, distill, quantization, corpus, stage: the sections
      (`SECTIONS`), each an immutable namedtuple of its flat keys.
    """
    __slots__ = ("_sections", "_given")

    def __init__(self, sections, given):
        object.__setattr__(self, "_sections", sections)
        object.__setattr__(self, "_given", frozenset(given))

    @classmethod
    def from_flat(cls, flat, name="params[%r]"):
        """Checks a flat parameter mapping (a ``config.json``'s ``params``,
        `presets.params_for`'s dict, a Python call's dict).

        Args:
          flat: mapping of flat keys (any subset; missing keys take their
            defaults).
          name: how the error names a key, with ``%r`` for it.

        Returns:
          Params.

        Raises:
          ParameterError: (a ValueError) a key that is not a parameter
            (naming the closest) or an invalid value (naming the key, see
            `presets.CHECKS`).
        """
        values = dict((p.name, p.default) for p in registry.PARAMETERS)
        for key, value in flat.items():
            if key not in values:
                raise ParameterError(presets.unknown_key(key,
                                                         name % (key,)))
            values[key] = _check(key, value, name)
        given = list(flat)
        sections = dict((section, cls_(**dict(
            (k, values[k]) for k in cls_._fields)))
            for section, cls_ in SECTIONS.items())
        return cls(sections, given)

    def __getattr__(self, name):
        try:
            return self._sections[name]
        except KeyError:
            raise AttributeError(
                "Params has no section %r (sections: %s; a flat key is read "
                "as params.<section>.<key>)" % (name, ", ".join(SECTIONS)))

    def __setattr__(self, name, value):
        raise AttributeError("Params is immutable: use params.replace(%s=...)"
                             % name)

    @classmethod
    def for_preset(cls, preset, model, overrides=None):
        """The parameters of a command line: `presets.params_for`'s dict
        (the preset's, the model's, ``overrides``), checked. Where the
        flags' parameters enter (`training.plan`, `distributed.cli`).

        Raises:
          ValueError: as `presets.params_for` and `from_flat`.
        """
        return cls.from_flat(presets.params_for(preset, model, overrides))

    def replace(self, **changes):
        """A copy with ``changes`` (flat keys), checked.

        Raises:
          ValueError: as `from_flat`.
        """
        flat = self.to_flat()
        flat.update(changes)
        return Params.from_flat(flat)

    def without(self, *keys):
        """A copy in which ``keys`` are not given (their attributes read
        the defaults; `to_flat` leaves them out): a float phase's
        parameters without the quantization and compression keys."""
        return Params.from_flat(dict(
            (k, v) for k, v in self.to_flat().items() if k not in keys))

    def batch_sizes(self):
        """The batch size each split of the corpus is cut by: training
        batches the train split by ``batch_size``, validation and test by
        ``eval_batch_size`` (``optimization``'s).

        Returns:
          OrderedDict ``{split: (key, batch size)}`` over ``train``,
          ``valid``, ``test``: the flat key (how an error names the
          setting) and its int value.
        """
        o = self.optimization
        return collections.OrderedDict([
            ("train", ("batch_size", o.batch_size)),
            ("valid", ("eval_batch_size", o.eval_batch_size)),
            ("test", ("eval_batch_size", o.eval_batch_size))])

    def to_flat(self):
        """The flat dict of ``config.json`` and the command line: the keys
        given, in the order of `presets.params_for`'s dict."""
        return collections.OrderedDict(
            (key, getattr(self._sections[_SECTION_OF[key]], key))
            for key in _FLAT_ORDER if key in self._given)

    def __getitem__(self, key):
        """Deprecated: ``params['lr']``, the read of the parameter dicts
        of 0.3.x, is ``params.optimization.lr`` (one
        ``DeprecationWarning`` naming it, `legacy.warn_params_item`).

        Raises:
          KeyError: ``key`` is no parameter or was not given (as the
            dicts had no such item).
        """
        section = _SECTION_OF.get(key)
        if section is None or key not in self._given:
            raise KeyError(key)
        legacy.warn_params_item(key, section, stacklevel=2)
        return getattr(self._sections[section], key)

    # No mapping: iterating it (``dict(params)``, ``'lr' in params``) is a
    # TypeError, not a fallback on __getitem__ with 0, 1, ...
    __iter__ = None

    def __eq__(self, other):
        # Only another Params: a dict of the keys given and a Params whose
        # other keys read their defaults are not one thing (compare
        # ``params.to_flat()`` with the dict).
        if not isinstance(other, Params):
            return NotImplemented
        return self.to_flat() == other.to_flat()

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None

    def __repr__(self):
        return "Params(%s)" % ", ".join(
            "%s=%r" % kv for kv in sorted(self.to_flat().items()))

    def __reduce__(self):
        return (Params.from_flat, (self.to_flat(),))


def as_params(value, name="params[%r]"):
    """``value`` as a checked `Params`: a `Params` as it is, a mapping
    checked (`Params.from_flat`). Only where parameters enter: the
    `takes_params` functions, `modeldir.read_config`, the command lines'
    `presets.params_for` dicts and an Estimator's params dict; below them
    every function takes the `Params`.

    Args:
      value: a mapping of flat keys or a `Params`.
      name: how an error names a key, with ``%r`` for it (its text before
        ``[`` names the argument in the type error).

    Raises:
      ParameterTypeError: (a TypeError) ``value`` is neither.
      ParameterError: (a ValueError) as `Params.from_flat`.
    """
    if isinstance(value, Params):
        return value
    if not isinstance(value, collections.abc.Mapping):
        raise ParameterTypeError("%s must be a dict of parameters or "
                                 "a Params, got %s" % (
                                     name.split("[")[0],
                                     type(value).__name__))
    return Params.from_flat(value, name)


def takes_params(*names):
    """Marks a public function as an entry of parameters: its arguments
    ``names`` (default ``'params'``), when not None, are given by a caller
    as a dict of flat keys (`presets.params_for`'s) or a `Params`, and
    reach the function's body as a checked `Params` (`as_params`), so that
    it and everything it calls take a `Params` only.

    The decorated function keeps its name, docstring and signature
    (``inspect.signature``); its ``params_entry`` attribute is ``names``.

    Raises (from the decorated function):
      ParameterTypeError, ParameterError: as `as_params`, naming the
        argument.
    """
    names = names or ("params",)

    def decorate(function):
        signature = inspect.signature(function)
        missing = [n for n in names if n not in signature.parameters]
        if missing:
            raise TypeError("takes_params: %s has no argument %s"
                            % (function.__name__, ", ".join(missing)))

        @functools.wraps(function)
        def entry(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for n in names:
                if bound.arguments.get(n) is not None:
                    bound.arguments[n] = as_params(bound.arguments[n],
                                                   n + "[%r]")
            return function(*bound.args, **bound.kwargs)
        entry.params_entry = names
        return entry
    return decorate
