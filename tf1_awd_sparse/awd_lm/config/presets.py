"""Hyper-parameter sets of the language-model example.

`params_for(preset, model, overrides)` merges DEFAULTS, the preset, the
model's own settings and explicit overrides, in that order.
`check_params` validates a parameter dict and `parse_value` converts and
validates one parameter given as text (a command-line flag or a
``--hparams`` item); both use the one table of checks, `CHECKS`.
DEFAULTS, CHECKS and the phase lists are made from the registry of
parameters (`registry.PARAMETERS`); the presets (`registry.PRESETS`,
`registry.MODEL_OVERRIDES`) state only how they differ from it.
"""
import difflib
import functools
import re

from tf1_awd_sparse.awd_lm.config import registry
from tf1_awd_sparse.awd_lm.config.registry import (  # noqa: F401 (public)
    COMPRESS_TECHNIQUES, LOOPS, MODEL_OVERRIDES, PRESETS, SPARSITY_CHOICES)

__all__ = ["DEFAULTS", "PRESETS", "MODEL_OVERRIDES", "QUANT_KEYS",
           "COMPRESS_KEYS", "split_quant", "params_for", "COMPRESS_TECHNIQUES",
           "CHECKS", "check_params", "REQUIRED_PARAMS", "check_model_params",
           "check_used", "check_unused", "LOOPS", "unknown_key", "text_type",
           "parse_bool", "parse_value", "label", "SPARSITY_CHOICES"]
#: The value of every parameter a preset holds, when the preset does not
#: set it (`registry.PARAMETERS`' defaults, in their order).
DEFAULTS = dict(
    (p.name, p.default) for p in registry.PARAMETERS if p.preset)

#: Parameters of the quantization-aware phase only; the float phase of a
#: run never sees them, so adding --quant to a finished float run resumes it.
QUANT_KEYS = registry.keys(phase="quant")
#: Parameters of the compression pipeline only (likewise never seen by the
#: float phase).
COMPRESS_KEYS = registry.keys(phase="compress")


def split_quant(params):
    """(float phase `Params`, quantization-aware phase `Params` or None).

    The float phase is the model without any quantization or compression
    parameter; the quantization-aware one (with ``quant``; no compression
    key) the same model with quantized cells for quant_epochs epochs at
    quant_lr (default: lr / 4), the same stopping rule otherwise.

    Args:
      params: a `params.Params` (a key not given reads its default).
    Returns:
      (Params, Params or None): the keys given, less the phase's others.
    Raises:
      ValueError: the quantization-aware phase's values out of range
        (`Params.replace`).
    """
    float_params = params.without(*(QUANT_KEYS + COMPRESS_KEYS))
    quantization = params.quantization
    if not quantization.quant:
        return float_params, None
    lr = (params.optimization.lr / 4.0 if quantization.quant_lr is None
          else quantization.quant_lr)
    # The compression settings are not the model's: the same quantized
    # model whatever a pipeline around it does (resume compares params).
    quant = params.without(*COMPRESS_KEYS).replace(
        max_epochs=quantization.quant_epochs, lr=lr, quant_lr=lr)
    return float_params, quant


def params_for(preset, model, overrides=None):
    """The full parameter dict for one model of a run.

    Args:
      preset: a key of PRESETS.
      model: 'awd' or 'plain'.
      overrides: dict of explicit values (None values are ignored).
    Returns:
      dict of flat keys (a caller's to change; the functions that take
      parameters check it, `params.takes_params`).
    Raises:
      ValueError: unknown preset, model or override key, or an invalid
        override (named, see `CHECKS`).
    """
    if preset not in PRESETS:
        raise ValueError("preset: expected one of %s, got %r"
                         % (sorted(PRESETS), preset))
    if model not in MODEL_OVERRIDES:
        raise ValueError("model: expected one of %s, got %r"
                         % (sorted(MODEL_OVERRIDES), model))
    params = dict(DEFAULTS)
    params.update(PRESETS[preset])
    params.update(MODEL_OVERRIDES[model])
    for key, value in (overrides or {}).items():
        if key not in DEFAULTS:
            raise ValueError(unknown_key(key, "override %r" % (key,)))
        if value is not None:
            params[key] = CHECKS[key](value, "override %r" % (key,))
    params["model"] = model
    params["preset"] = preset
    return params


#: The check of every parameter: a function (value, name) -> value that
#: raises ValueError naming the parameter.  The one place a parameter's
#: valid range is written is its registry entry; the library
#: (`check_params`) and both command lines (`parse_value`) use it.
CHECKS = dict(
    (p.name, p.check) for p in registry.PARAMETERS)


def check_params(params, name="params[%r]"):
    """Validates every parameter of ``params`` that `CHECKS` knows.

    Args:
      params: dict of parameters (any subset of `CHECKS`' keys; other keys
        are left alone).
      name: how a parameter is named in the error, with ``%r`` for its key.

    Returns:
      a copy of ``params`` with the checked values (ints as int, reals as
      float).

    Raises:
      ValueError: the first invalid value, naming it (e.g.
        ``params['bptt'] must be a positive int, got 0``).
    """
    checked = dict(params)
    for key, value in params.items():
        if key in CHECKS:
            checked[key] = CHECKS[key](value, name % (key,))
    return checked


def check_unused(configs, given, flag, loop="train", setting=None,
                 facts=None):
    """Refuses an explicit value no model of a run would use, which a
    summary would otherwise record as if it had been used: a flag of a
    phase that does not run (``target_sparsity`` without ``compress``), of
    a technique or optimizer not chosen or that the loop never runs
    (``optimizer`` in the distributed one), of training (evaluate), the
    plain model's regularization, ``hidden_size`` with ``num_layers`` 1.

    Args:
      configs: the `Params` of every model the run trains; a key is used
        if one of them uses it.
      given: the keys given explicitly (flags, ``--hparams``).
      flag: function ``key -> how the command line names it``.
      loop: one of `LOOPS`, what the program runs.
      setting: function ``(key, value) -> how the command line sets it``
        (default ``flag(key) + ' ' + value``: ``--pruning magnitude``).
      facts: more values the rules read, e.g. ``{"data_dir": ...}``.

    Raises:
      ValueError: one line naming the flag and what it needs.
    """
    facts = dict(facts or {})
    setting = setting or (lambda key, value: "%s %s" % (flag(key), value))
    values = [functools.partial(lambda p, k: facts[k] if k in facts else
                                _value(p, k), p) for p in configs]
    for rule in registry.RULES:
        loops, used, needs = rule
        for key in (p.name for p in registry.PARAMETERS if rule in p.used):
            if (loop not in loops or key not in given
                    or any(used(v) for v in values)):
                continue
            if key == "hidden_size":
                first = configs[0].model
                raise ValueError(
                    "%s %d has no effect with %s 1: the one LSTM layer has "
                    "%s (%d) units, tied to the decoder; leave %s out or "
                    "use %s >= 2" % (
                        flag("hidden_size"), first.hidden_size,
                        flag("num_layers"), flag("emb_size"),
                        first.emb_size, flag("hidden_size"),
                        flag("num_layers")))
            needs = re.sub(r"\{(\w+)(?:=([^}]*))?\}", lambda m: setting(
                *m.groups()) if m.group(2) else flag(m.group(1)), needs)
            raise ValueError("%s has no effect here: it needs %s; leave it "
                             "out" % (flag(key), needs))


def _value(params, key):
    """A `Params`' value of a flat key (its registry section's attribute;
    a key not given reads its default), None for a fact that is no
    parameter and was not given (``data_dir``): the rules read keys by
    name."""
    parameter = registry.BY_NAME.get(key)
    if parameter is None:
        return None
    return getattr(getattr(params, parameter.section), key)


def check_used(params, given, flag, **kwargs):
    """`check_unused` of one model's `Params` (and its ``kwargs``),
    raising its ValueError."""
    check_unused([params], given, flag, **kwargs)


def unknown_key(key, name):
    """The one-line message of a key that is not a parameter: the bad key
    first, then the closest parameter names (difflib), e.g. ``--hparams:
    'hiden_size' is not a parameter; did you mean 'hidden_size'?``."""
    close = difflib.get_close_matches(str(key), sorted(DEFAULTS), n=3)
    hint = ("did you mean %s?" % " or ".join(repr(k) for k in close)
            if close else "the parameters are presets.DEFAULTS' keys, e.g. "
            "'bptt', 'lr'")
    return "%s: %r is not a parameter; %s" % (name, key, hint)


def text_type(key):
    """The type a parameter is written in as text (for its flag)."""
    return registry.BY_NAME[key].type


def parse_bool(text, name):
    """A bool written as text: 1/true/yes/on or 0/false/no/off (any case).

    Raises:
      ValueError: anything else, naming ``name``.
    """
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("%s must be true or false, got %r" % (name, text))


def parse_value(key, text, name):
    """One parameter given as text, converted to its type and checked.

    Args:
      key: a key of DEFAULTS.
      text: the value as written, e.g. ``'35'``, ``'on'``, ``'0.25'``.
      name: how the error names it, e.g. ``'--bptt'``.

    Returns:
      the value (bool, int, float or str).

    Raises:
      ValueError: unknown key, text not of the parameter's type, or a value
        outside its range; the message names ``name``.
    """
    if key not in DEFAULTS:
        raise ValueError(unknown_key(key, name))
    kind = text_type(key)
    if kind is bool:
        value = parse_bool(text, name)
    else:
        try:
            value = kind(text.strip())
        except ValueError:
            raise ValueError("%s must be %s, got %r" % (
                name, {int: "an int", float: "a number"}.get(kind, kind),
                text))
    return CHECKS[key](value, name)


def label(params):
    """A model's name in logs and tables: 'awd'; 'awd+q' quantized;
    'awd+vd' / 'awd+l0' sparse; 'awd+mag' magnitude-pruned; 'awd+pruned'
    with fixed masks (a compression stage: 'awd+pruned+q' is the
    pipeline's quantization-aware stage, 'awd+q' the float model's).

    Args:
      params: a `params.Params`."""
    suffix = ""
    sparsity, pruning = params.sparse.sparsity, params.prune.pruning
    if sparsity:
        suffix += {"variational_dropout": "+vd"}.get(sparsity,
                                                     "+" + sparsity)
    if pruning == "magnitude":
        suffix += "+mag"
    elif pruning == "fixed":
        suffix += "+pruned"
    if params.quantization.quant:
        suffix += "+q"
    return params.run.model + suffix


#: The parameters a model needs given (`check_model_params`).
REQUIRED_PARAMS = registry.keys(required=True)


def check_model_params(params):
    """Validates the model's parameters beyond each value's own check
    (`params.Params` checked those): the keys it needs given and the
    rules between keys.

    Args:
      params: a `params.Params` (see `graph.model.build_lm`).
    Returns:
      ``params``.
    Raises:
      ValueError: the first missing parameter or broken rule, named (e.g.
        ``params: missing 'vocab_size'``); ``distill_weight > 0`` without
        ``distill_from``.
    """
    given = params.to_flat()
    for key in REQUIRED_PARAMS:
        if key not in given:
            raise ValueError("params: missing %r" % key)
    sparsity, pruning = params.sparse.sparsity, params.prune.pruning
    if sparsity and params.sparse.sparsity_weight is None:
        raise ValueError("params['sparsity_weight']: required with sparsity "
                         "%r (e.g. 1 / training tokens), got None"
                         % sparsity)
    distill_weight = params.distill.distill_weight
    distill_from = params.stage.distill_from
    if float(distill_weight or 0.0) > 0 and not distill_from:
        raise ValueError("params['distill_from']: distill_weight %r needs "
                         "the teacher's checkpoint prefix (the float model's "
                         "best checkpoint), got %r" % (
                             distill_weight, distill_from))
    if sparsity and pruning:
        raise ValueError("params['pruning']: a sparse (%r) model has no "
                         "pruning mask; strip it first, got pruning=%r"
                         % (sparsity, pruning))
    return params
