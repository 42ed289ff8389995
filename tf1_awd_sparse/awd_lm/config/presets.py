"""Hyper-parameter sets of the language-model example.

`params_for(preset, model, overrides)` merges DEFAULTS, the preset, the
model's own settings and explicit overrides, in that order.
`check_params` validates a parameter dict and `parse_value` converts and
validates one parameter given as text (a command-line flag or a
``--hparams`` item); both use the one table of checks, `CHECKS`.
"""
import difflib
import functools
import re

from tf1_awd_sparse.base.checks import (
    check_bool, check_choice, check_nonnegative_int, check_num_bits,
    check_positive_int, check_real)

__all__ = ["DEFAULTS", "PRESETS", "MODEL_OVERRIDES", "QUANT_KEYS",
           "COMPRESS_KEYS", "split_quant", "params_for", "COMPRESS_TECHNIQUES",
           "CHECKS", "check_params", "REQUIRED_PARAMS", "check_model_params",
           "check_used", "check_unused", "LOOPS", "unknown_key", "text_type",
           "parse_bool", "parse_value", "label", "SPARSITY_CHOICES"]
DEFAULTS = {
    # model
    "emb_size": 400, "hidden_size": 1150, "num_layers": 3,
    # regularization (used by model 'awd' only)
    "dropout": 0.4, "dropouth": 0.25, "dropouti": 0.4, "dropoute": 0.1,
    "wdrop": 0.5, "alpha": 2.0, "beta": 1.0, "wdecay": 1.2e-6,
    # optimization
    "batch_size": 20, "eval_batch_size": 10, "bptt": 70,
    "variable_bptt": True, "lr": 30.0, "clip": 0.25, "optimizer": "ntasgd",
    "nonmono": 5,
    # stopping rule, identical for every model of a run
    "max_epochs": 500, "patience": 10,
    "seed": 1111,
    # sparse embedding and cells (sparse_layers); weight None: 1 / tokens;
    # the weight ramps up linearly over sparsity_ramp_steps global steps
    "sparsity": None, "sparsity_weight": None, "sparsity_ramp_steps": 0,
    # learning rate of log_sigma2 / log_alpha as a multiple of lr
    "aux_lr_scale": 1.0,
    # pruning masks on the embedding and the cells' kernels: None,
    # 'magnitude' (tf1_awd_sparse.transforms.magnitude_pruning's gradual
    # schedule, contrib's on TF 1.x, to target_sparsity between the two
    # steps) or 'fixed' (masks as restored)
    "pruning": None, "target_sparsity": 0.9, "pruning_begin_step": 0,
    "pruning_end_step": 100, "pruning_frequency": 10,
    # the first epoch whose validation may be the best (and count against
    # patience): later than 1 while a schedule or ramp still runs
    "select_from_epoch": 1, "select_min_sparsity": 0.0,
    # compression after the float model (--compress): each technique
    # fine-tunes from the float best checkpoint for finetune_epochs epochs
    # at finetune_lr (None: lr / 4), under the same stopping rule; the best
    # sparse model is pruned, fine-tuned quantization-aware and exported
    "compress": "", "finetune_epochs": 12, "finetune_lr": None,
    "compress_sparsity_weight": None,
    # VD / L0: the factor the KL / L0 weight is multiplied by after each
    # ramp epoch whose sparsity lags the schedule (1: off); the exact cut
    # at the ramp's end per weight matrix ('matrix') or across all of them
    # ('global', one threshold)
    "compress_controller": 2.0, "cut_scope": "matrix",
    # uneven budgets: the table's (embedding and tied decoder) own target
    # fraction of zeros; the kernels share the rest of the model's zeros,
    # target_sparsity * all weights (None: every matrix at the target)
    "table_sparsity": None,
    # group lasso on the pruned weights' blocks in the magnitude ramp:
    # the loss adds group_lasso * sum_b sqrt(|b|) ||w_b||_2 (0: off)
    "group_lasso": 0.0,
    # knowledge distillation from the float model in the technique phases
    # (ramp and survivors; `awd_lm.distill`): the loss adds distill_weight
    # * T^2 * the cross-entropy of the student's softmax at temperature T
    # (distill_temperature) against the teacher's (0: off); the teacher is
    # the float model ('float') or the reference, the float model
    # fine-tuned for the same budget ('reference': trained first)
    "distill_weight": 0.0, "distill_temperature": 1.0,
    "distill_teacher": "float",
    # the optimizer of the fine-tunings whose masks are fixed (the
    # survivors after the cut, the reference): 'sgd' or 'ntasgd' (NT-ASGD,
    # the float model's trigger window); a ramp always runs plain SGD
    "finetune_optimizer": "ntasgd",
    # the fraction of finetune_epochs the ramp takes (the schedule or the
    # KL / L0 weight's rise, up to the exact cut); the survivors the rest;
    # ship_ppl_target: the recommended file's /ref target (compress_ship)
    # small_dense: a dense model of its smallest file's bytes beside it
    "ramp_fraction": 0.4, "ship_ppl_target": 1.05, "small_dense": False,
    # the factor on every dropout rate (dropout, dropouth, dropouti,
    # dropoute, wdrop) in the compressed model's fine-tunings (ramp,
    # survivors, QAT; not the reference's): fewer weights, less to
    # regularize
    "finetune_dropout_scale": 0.5,
    # pruning and the exact cut in 1 x k blocks along each matrix's input
    # dimension (1: entry by entry; 4: TFLite's float sparse kernel, 16:
    # its int8 one; docs/sparse_tflite.md); where k does not divide a
    # matrix's input dimension, 1 x 4 blocks if 4 does, else entry by entry
    "pruning_block": 1,
    # the table plus a dense rank-r part on its first rows (0: all; tables)
    "table_rank": 0,
    "table_rank_rows": 0,
    # NT-ASGD averaging on from a run's first step (set by the pipeline for
    # the reference, which starts from the float model's averaged weights)
    "average_from_start": False,
    # a run's own controller factor (set by the pipeline for a VD / L0
    # ramp from compress_controller; None: no controller)
    "sparsity_controller": None,
    # quantization-aware fine-tuning (--quant): quant_epochs epochs from
    # the float model's best checkpoint at quant_lr (None: lr / 4), fake
    # quantization from its global step quant_delay on
    "quant": False, "quant_epochs": 3, "quant_delay": 20, "quant_lr": None,
    "weight_bits": 8, "activation_bits": 8,
    # embedded corpus (used when no --data-dir is given)
    "hmm_seed": 1234, "hmm_states": 32, "hmm_vocab": 2000,
    "hmm_train": 200000, "hmm_valid": 20000, "hmm_test": 20000,
}

PRESETS = {
    # The paper's PTB settings (Merity et al. 2017, table 1 / appendix).
    "awd-ptb": {},
    # Minutes on 2 cores: a small model on a small sample of a smaller
    # source (16 states, 1000 words, 20k training tokens), so that the
    # plain LSTM overfits within a few epochs and regularization shows.
    "demo": {
        "emb_size": 128, "hidden_size": 256, "num_layers": 2,
        "batch_size": 10, "eval_batch_size": 20, "bptt": 35, "lr": 20.0,
        "wdrop": 0.6, "dropouth": 0.35, "dropoute": 0.2,
        "nonmono": 2, "max_epochs": 40, "patience": 4,
        "hmm_states": 16, "hmm_vocab": 1000, "hmm_train": 20000,
        "hmm_valid": 8000, "hmm_test": 8000,
    },
}

# The plain baseline: no regularization of any kind, plain SGD.
MODEL_OVERRIDES = {"awd": {}, "plain": {"optimizer": "sgd"}}


#: Parameters of the quantization-aware phase only; the float phase of a
#: run never sees them, so adding --quant to a finished float run resumes it.
QUANT_KEYS = ("quant", "quant_epochs", "quant_delay", "quant_lr",
              "weight_bits", "activation_bits")
#: Parameters of the compression pipeline only (likewise never seen by the
#: float phase).
COMPRESS_KEYS = ("compress", "finetune_epochs", "finetune_lr",
                 "target_sparsity", "compress_sparsity_weight",
                 "compress_controller", "cut_scope", "distill_weight",
                 "distill_temperature", "distill_teacher",
                 "finetune_optimizer", "finetune_dropout_scale",
                 "pruning_block", "table_sparsity", "group_lasso",
                 "ship_ppl_target", "ramp_fraction", "small_dense",
                 "table_rank", "table_rank_rows")


def split_quant(params):
    """(float phase params, quantization-aware phase params or None).

    The float phase is the model without any quantization or compression
    parameter; the quantization-aware one (with ``quant``; no compression
    key) the same model with quantized cells for quant_epochs epochs at
    quant_lr (default: lr / 4), the same stopping rule otherwise.

    Args:
      params: dict from `params_for` or a `params.Params` (checked; a key
        not given reads its default).
    Returns:
      (dict, dict or None): flat dicts, the keys given.
    Raises:
      ValueError: quant_epochs < 1 or quant_lr <= 0 with quant.
    """
    flat = dict(params)
    # A key not given reads its default, as `params.Params` does.
    value = dict(DEFAULTS, **flat).__getitem__
    float_params = {k: v for k, v in flat.items()
                    if k not in QUANT_KEYS + COMPRESS_KEYS}
    if not value("quant"):
        return float_params, None
    epochs = CHECKS["quant_epochs"](value("quant_epochs"), "quant_epochs")
    lr = (value("lr") / 4.0 if value("quant_lr") is None
          else value("quant_lr"))
    lr = CHECKS["quant_lr"](lr, "quant_lr")
    # The compression settings are not the model's: the same quantized
    # model whatever a pipeline around it does (resume compares params).
    quant = {k: v for k, v in flat.items() if k not in COMPRESS_KEYS}
    quant.update(max_epochs=epochs, lr=lr, quant_lr=lr)
    return float_params, quant


def params_for(preset, model, overrides=None):
    """The full parameter dict for one model of a run.

    Args:
      preset: a key of PRESETS.
      model: 'awd' or 'plain'.
      overrides: dict of explicit values (None values are ignored).
    Returns:
      dict.
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


def _choice(choices):
    return lambda value, name: check_choice(value, choices, name)


#: The cell's sparsity techniques (``transforms.kernel.SPARSITY_CHOICES``
#: owns the list; test_lm_command_errors.py checks they are the same),
#: spelled here so that reading a config imports no TensorFlow.
SPARSITY_CHOICES = (None, "variational_dropout", "l0")


def _sparsity(value, name):
    return check_choice(value, SPARSITY_CHOICES, name)


#: Compression techniques (--compress): sparse variational dropout, L0
#: gates, gradual magnitude pruning (transforms.magnitude_pruning).
COMPRESS_TECHNIQUES = ("variational_dropout", "l0", "magnitude")


def _compress_techniques(value, name):
    """A comma-separated list of COMPRESS_TECHNIQUES (may be empty)."""
    if not isinstance(value, str):
        raise ValueError("%s must be a comma-separated list of %s, got %r"
                         % (name, ", ".join(COMPRESS_TECHNIQUES), value))
    items = [v.strip() for v in value.split(",") if v.strip()]
    for item in items:
        check_choice(item, COMPRESS_TECHNIQUES, name)
    if len(set(items)) != len(items):
        raise ValueError("%s lists a technique twice: %r" % (name, value))
    return ",".join(items)


def _checkpoint_prefix(value, name):
    """None or a non-empty string (a checkpoint prefix)."""
    if value is not None and not (isinstance(value, str) and value):
        raise ValueError("%s must be a checkpoint prefix (a non-empty "
                         "string) or None, got %r" % (name, value))
    return value


def _at_least_two(value, name):
    value = check_positive_int(value, name)
    if value < 2:
        raise ValueError("%s must be an int >= 2, got %r" % (name, value))
    return value


_AT_LEAST_TWO = _at_least_two
_RATE = functools.partial(check_real, low=0.0, high=1.0, high_open=True)
_NONNEGATIVE = functools.partial(check_real, low=0.0)
_POSITIVE = functools.partial(check_real, low=0.0, low_open=True)
_POSITIVE_OR_NONE = functools.partial(check_real, low=0.0, low_open=True,
                                      allow_none=True)

#: The check of every parameter: a function (value, name) -> value that
#: raises ValueError naming the parameter.  The one place a parameter's
#: valid range is written: the library (`check_params`) and both command
#: lines (`parse_value`) use it.
CHECKS = {
    "model": _choice(tuple(sorted(MODEL_OVERRIDES))),
    "preset": _choice(tuple(sorted(PRESETS))),
    "vocab_size": check_positive_int,
    "emb_size": check_positive_int, "hidden_size": check_positive_int,
    "num_layers": check_positive_int,
    "dropout": _RATE, "dropouth": _RATE, "dropouti": _RATE,
    "dropoute": _RATE, "wdrop": _RATE,
    "alpha": _NONNEGATIVE, "beta": _NONNEGATIVE, "wdecay": _NONNEGATIVE,
    "batch_size": check_positive_int, "eval_batch_size": check_positive_int,
    "bptt": check_positive_int, "variable_bptt": check_bool,
    # clip 0 means no clipping.
    "lr": _POSITIVE, "clip": _NONNEGATIVE,
    "optimizer": _choice(("ntasgd", "sgd")), "nonmono": check_positive_int,
    "max_epochs": check_positive_int, "patience": check_positive_int,
    "seed": check_nonnegative_int,
    "sparsity": _sparsity, "sparsity_weight": _POSITIVE_OR_NONE,
    "sparsity_ramp_steps": check_nonnegative_int,
    "aux_lr_scale": _POSITIVE,
    "pruning": _choice((None, "magnitude", "fixed")),
    "target_sparsity": functools.partial(check_real, low=0.0, high=1.0,
                                         high_open=True),
    "pruning_begin_step": check_nonnegative_int,
    "pruning_end_step": check_positive_int,
    "pruning_frequency": check_positive_int,
    "select_from_epoch": check_positive_int,
    "select_min_sparsity": functools.partial(check_real, low=0.0, high=1.0,
                                             high_open=True),
    "compress": _compress_techniques,
    "finetune_epochs": check_positive_int, "finetune_lr": _POSITIVE_OR_NONE,
    "compress_sparsity_weight": _POSITIVE_OR_NONE,
    "compress_controller": functools.partial(check_real, low=1.0),
    "cut_scope": _choice(("matrix", "global")),
    "table_sparsity": functools.partial(check_real, low=0.0, high=1.0,
                                        high_open=True, allow_none=True),
    "group_lasso": _NONNEGATIVE, "ship_ppl_target": _POSITIVE,
    "ramp_fraction": functools.partial(check_real, low=0.0, high=1.0,
                                       low_open=True, high_open=True),
    "distill_weight": _NONNEGATIVE, "distill_temperature": _POSITIVE,
    "distill_teacher": _choice(("float", "reference")),
    "finetune_optimizer": _choice(("sgd", "ntasgd")),
    "finetune_dropout_scale": functools.partial(check_real, low=0.0,
                                                high=1.0),
    "average_from_start": check_bool, "small_dense": check_bool,
    "pruning_block": check_positive_int,
    "table_rank": check_nonnegative_int,
    "table_rank_rows": check_nonnegative_int,
    # A run's teacher checkpoint prefix (set by the pipeline, not a preset
    # value nor a flag): None or a non-empty string.
    "distill_from": _checkpoint_prefix,
    "sparsity_controller": functools.partial(check_real, low=1.0,
                                             allow_none=True),
    "quant": check_bool, "quant_epochs": check_positive_int,
    "quant_delay": check_nonnegative_int, "quant_lr": _POSITIVE_OR_NONE,
    "weight_bits": check_num_bits, "activation_bits": check_num_bits,
    # synthetic.make_hmm: an end state and a word state, <eos> and a word.
    "hmm_seed": check_nonnegative_int, "hmm_states": _AT_LEAST_TWO,
    "hmm_vocab": _AT_LEAST_TWO, "hmm_train": check_positive_int,
    "hmm_valid": check_positive_int, "hmm_test": check_positive_int,
}

# How a parameter whose default is None is written as text.
_TEXT_TYPES = {"sparsity": str, "sparsity_weight": float, "quant_lr": float,
               "pruning": str, "finetune_lr": float,
               "compress_sparsity_weight": float, "table_sparsity": float,
               "sparsity_controller": float}


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


def _techniques(value):
    """The set of techniques of a ``compress`` value."""
    return set(filter(None, (value("compress") or "").split(",")))


#: What a program runs: ``train`` (`awd-lm train` / ``compress``),
#: ``distributed`` (``awd-lm estimator`` / ``monitored``: clipped SGD on
#: fixed windows) and ``evaluate`` (their --evaluate-only).
LOOPS = ("train", "distributed", "evaluate")
_T, _D, _E = LOOPS
_REGULARIZATION = ("dropout", "dropouth", "dropouti", "dropoute", "wdrop",
                   "alpha", "beta", "wdecay")
_PRUNING_TARGET = ("target_sparsity", "pruning_block", "table_sparsity",
                   "group_lasso")
#: (keys, the loops the row holds in, whether a model uses them, what they
#: need: ``{key}`` the key's flag, ``{key=value}`` that setting, as the
#: program spells them): an explicit key no model of a run uses is
#: refused (`check_unused`).
_USED_BY = (
    (("hidden_size",), LOOPS, lambda v: v("num_layers") >= 2, None),
    (("variable_bptt", "optimizer", "nonmono", "max_epochs", "patience",
      "select_from_epoch", "select_min_sparsity", "quant_epochs",
      "quant_lr") + tuple(k for k in COMPRESS_KEYS
                          if k not in _PRUNING_TARGET),
     (_D, _E), lambda v: False, "awd-lm train: this program trains with "
     "clipped SGD on fixed windows of bptt steps up to --train-steps (no "
     "NT-ASGD, epochs, quantization-aware phase or compression pipeline)"),
    (_REGULARIZATION + _PRUNING_TARGET + (
        "batch_size", "lr", "clip", "seed", "sparsity_weight",
        "sparsity_ramp_steps", "aux_lr_scale", "pruning_begin_step",
        "pruning_end_step", "pruning_frequency", "quant_delay"),
     (_E,), lambda v: False, "training: --evaluate-only trains nothing"),
    (tuple(k for k in DEFAULTS if k.startswith("hmm_")), LOOPS,
     lambda v: not v("data_dir"), "the embedded corpus: the run reads "
     "--data-dir"),
    (_REGULARIZATION, (_T, _D), lambda v: v("model") == "awd",
     "{model=awd}: the plain model has no regularization"),
    (("sparsity_weight", "sparsity_ramp_steps", "aux_lr_scale"), (_T, _D),
     lambda v: bool(v("sparsity")), "{sparsity}"),
    (("pruning_begin_step", "pruning_end_step", "pruning_frequency"),
     (_T, _D), lambda v: v("pruning") == "magnitude", "{pruning=magnitude}"),
    (_PRUNING_TARGET, (_D,), lambda v: v("pruning") == "magnitude",
     "{pruning=magnitude}"),
    (("quant_delay", "weight_bits", "activation_bits"), (_D, _E),
     lambda v: bool(v("quant")), "{quant=true}"),
    (("nonmono",), (_T,), lambda v: v("optimizer") == "ntasgd" or (
        bool(v("compress")) and v("finetune_optimizer") == "ntasgd"),
     "--optimizer ntasgd (or --compress with --finetune-optimizer "
     "ntasgd)"),
    (tuple(k for k in QUANT_KEYS if k != "quant"), (_T,),
     lambda v: bool(v("quant") or v("compress")), "--quant or --compress"),
    (("group_lasso", "table_rank"), (_T,),
     lambda v: "magnitude" in _techniques(v), "--compress magnitude"),
    (("table_rank_rows",), (_T,), lambda v: v("table_rank") > 0,
     "--table-rank r > 0"),
    (("compress_controller", "compress_sparsity_weight"), (_T,),
     lambda v: bool(_techniques(v) & {"variational_dropout", "l0"}),
     "--compress variational_dropout or l0"),
    (("distill_temperature", "distill_teacher"), (_T,),
     lambda v: bool(v("compress")) and v("distill_weight") > 0,
     "--compress with --distill-weight > 0"),
    (tuple(k for k in COMPRESS_KEYS if k not in (
        "compress", "group_lasso", "compress_controller",
        "compress_sparsity_weight", "distill_temperature",
        "distill_teacher")), (_T,),
     lambda v: bool(v("compress")), "--compress TECHNIQUES (the float "
     "run's --pruning magnitude keeps its default)"),
)


def check_unused(configs, given, flag, loop="train", setting=None,
                 facts=None):
    """Refuses an explicit value no model of a run would use, which a
    summary would otherwise record as if it had been used: a flag of a
    phase that does not run (``target_sparsity`` without ``compress``), of
    a technique or optimizer not chosen or that the loop never runs
    (``optimizer`` in the distributed one), of training (evaluate), the
    plain model's regularization, ``hidden_size`` with ``num_layers`` 1.

    Args:
      configs: the parameters (`params_for` dicts or `Params`) of every
        model the run trains; a key is used if one of them uses it.
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
    values = [functools.partial(lambda d, k: facts[k] if k in facts else (
        d[k] if k in d else DEFAULTS.get(k)), dict(p)) for p in configs]
    for keys, loops, used, needs in _USED_BY:
        for key in keys:
            if (loop not in loops or key not in given
                    or any(used(v) for v in values)):
                continue
            if key == "hidden_size":
                first = dict(configs[0])
                raise ValueError(
                    "%s %d has no effect with %s 1: the one LSTM layer has "
                    "%s (%d) units, tied to the decoder; leave %s out or "
                    "use %s >= 2" % (
                        flag("hidden_size"), first["hidden_size"],
                        flag("num_layers"), flag("emb_size"),
                        first["emb_size"], flag("hidden_size"),
                        flag("num_layers")))
            needs = re.sub(r"\{(\w+)(?:=([^}]*))?\}", lambda m: setting(
                *m.groups()) if m.group(2) else flag(m.group(1)), needs)
            raise ValueError("%s has no effect here: it needs %s; leave it "
                             "out" % (flag(key), needs))


def check_used(params, given, flag, **kwargs):
    """`check_unused` of one model's parameters (and its ``kwargs``),
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
    return _TEXT_TYPES.get(key, type(DEFAULTS[key]))


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
    pipeline's quantization-aware stage, 'awd+q' the float model's)."""
    suffix = ""
    if params.get("sparsity"):
        suffix += {"variational_dropout": "+vd"}.get(params["sparsity"],
                                                     "+" + params["sparsity"])
    if params.get("pruning") == "magnitude":
        suffix += "+mag"
    elif params.get("pruning") == "fixed":
        suffix += "+pruned"
    if params.get("quant"):
        suffix += "+q"
    return params["model"] + suffix


REQUIRED_PARAMS = ("vocab_size", "emb_size", "hidden_size", "num_layers",
                   "model")


def check_model_params(params):
    """Validates the model's parameters.

    Args:
      params: dict (see `graph.model.build_lm`).
    Returns:
      a copy of ``params`` with the checked values (`CHECKS`).
    Raises:
      ValueError: the first missing or invalid parameter, named (e.g.
        ``params['vocab_size'] must be a positive int, got 10.7``);
        ``distill_weight > 0`` without ``distill_from``.
    """
    for key in REQUIRED_PARAMS:
        if key not in params:
            raise ValueError("params: missing %r" % key)
    params = check_params(params)
    if params.get("sparsity") and params.get("sparsity_weight") is None:
        raise ValueError("params['sparsity_weight']: required with sparsity "
                         "%r (e.g. 1 / training tokens), got None"
                         % params["sparsity"])
    if float(params.get("distill_weight") or 0.0) > 0 \
            and not params.get("distill_from"):
        raise ValueError("params['distill_from']: distill_weight %r needs "
                         "the teacher's checkpoint prefix (the float model's "
                         "best checkpoint), got %r" % (
                             params["distill_weight"],
                             params.get("distill_from")))
    if params.get("sparsity") and params.get("pruning"):
        raise ValueError("params['pruning']: a sparse (%r) model has no "
                         "pruning mask; strip it first, got pruning=%r"
                         % (params["sparsity"], params["pruning"]))
    return params
