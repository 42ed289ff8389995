"""The one description of every parameter of the language model.

`PARAMETERS` holds one `Parameter` per key of a ``config.json``: its
default, its check, its section of `params.Params`, the phase of a run that
sees it, its type as text, its help line, whether a preset holds it, how the
command line sets it and the rules under which a model uses it. Every other
table of parameters is made from it: `presets.DEFAULTS`, `presets.CHECKS`,
the phase lists `presets.QUANT_KEYS` / `presets.COMPRESS_KEYS`,
`params.SECTIONS`' fields, `params.USER_KEYS` / `params.STAGE_KEYS`,
``awd-lm train``'s flags and their ``HELP``. Adding a parameter is adding
one entry here (and, where a preset differs, its value in `PRESETS`, at
the end of this module: the presets' own values and the models').

This module imports no TensorFlow.
"""
import collections
import functools

from tf1_awd_sparse.base.checks import (
    check_bool, check_choice, check_nonnegative_int, check_num_bits,
    check_positive_int, check_real)

__all__ = ["Parameter", "PARAMETERS", "BY_NAME", "Rule", "RULES", "LOOPS",
           "PHASES", "FLAG_KINDS", "SPARSITY_CHOICES", "COMPRESS_TECHNIQUES",
           "RATE", "keys", "techniques", "PRESETS", "MODEL_OVERRIDES"]

#: What a program runs: ``train`` (`awd-lm train` / ``compress``),
#: ``distributed`` (``awd-lm estimator`` / ``monitored``: clipped SGD on
#: fixed windows) and ``evaluate`` (their --evaluate-only).
LOOPS = ("train", "distributed", "evaluate")
_T, _D, _E = LOOPS

#: The phases of a run that see a parameter: ``float`` every phase (the
#: float model's ``config.json`` records it), ``quant`` the
#: quantization-aware phase only and ``compress`` the compression pipeline
#: only (neither in the float phase's config, so that adding --quant or
#: --compress to a finished float run resumes it).
PHASES = ("float", "quant", "compress")

#: How the command line sets a parameter: ``value`` a generated flag
#: ``--key TYPE`` (the text converted and checked, `presets.parse_value`),
#: ``switch`` a bare flag that sets True, ``choice`` a flag among the
#: parameter's non-None choices, None no flag (the program or the pipeline
#: sets it).
FLAG_KINDS = ("value", "switch", "choice", None)


class Parameter(collections.namedtuple("Parameter", (
        "name", "default", "check", "section", "phase", "type", "help",
        "preset", "flag", "used", "required", "extends", "choices",
        "carried"))):
    """One parameter of the language model.

    Fields:
      name: the flat key (``config.json``, ``--hparams``; ``--name-with-
        dashes`` on the command line).
      default: its value when not given.
      check: function ``(value, name) -> value`` raising ValueError naming
        the parameter (the one statement of its valid range).
      section: the `params.Params` section holding it.
      phase: one of `PHASES`.
      type: the type its text is converted to (a flag, ``--hparams``).
      help: the flag's help line (None: the key).
      preset: whether `presets.DEFAULTS` and a preset hold it (False: the
        program or the pipeline sets it: model, preset, vocab_size,
        distill_from, use_vd).
      flag: one of `FLAG_KINDS`.
      used: the `Rule`\\ s under which a model uses it (`presets.
        check_unused` refuses an explicit value no model would use).
      required: whether `presets.check_model_params` needs it given.
      extends: whether a larger value on --resume extends the run (the
        stopping rule's budget) instead of contradicting it.
      choices: the values a choice takes (its check's; None: not a
        choice).
      carried: whether each stage of the compressed model (ramp,
        survivors, QAT) carries this compression key, which shapes its
        graph (`compression.stages.compressed_structure`).
    """
    __slots__ = ()


def _parameter(name, default, check, section, phase="float", type=None,
               help=None, preset=True, flag="value", used=(), required=False,
               extends=False, choices=None, carried=False):
    """A `Parameter`; ``type`` defaults to the default's, ``check`` to one
    of ``choices``."""
    if check is None:
        check = functools.partial(_one_of, choices)
    return Parameter(name, default, check, section, phase,
                     type or _type_of(default), help, preset, flag, used,
                     required, extends, choices, carried)


def _type_of(value):
    if value is None:
        raise TypeError("a parameter whose default is None states its type")
    return value.__class__


def _one_of(choices, value, name):
    return check_choice(value, choices, name)


#: The cell's sparsity techniques (``transforms.kernel.SPARSITY_CHOICES``
#: owns the list; tests/awd_lm/programs/main/test_command_errors.py checks
#: they are the same), spelled here so that reading a config imports no
#: TensorFlow.
SPARSITY_CHOICES = (None, "variational_dropout", "l0")

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


def _strict_bool(value, name):
    """A Python bool (not numpy's, not 0 / 1): a graph-building switch."""
    if not isinstance(value, bool):
        raise ValueError("%s must be a bool, got %r" % (name, value))
    return value


def _preset_name(value, name):
    return check_choice(value, tuple(sorted(PRESETS)), name)


def _model_name(value, name):
    return check_choice(value, tuple(sorted(MODEL_OVERRIDES)), name)


#: A rate in [0, 1): the dropout rates (`keys` of the regularization
#: section checked by it are the ones the pipeline scales).
RATE = functools.partial(check_real, low=0.0, high=1.0, high_open=True)
_NONNEGATIVE = functools.partial(check_real, low=0.0)
_POSITIVE = functools.partial(check_real, low=0.0, low_open=True)
_POSITIVE_OR_NONE = functools.partial(check_real, low=0.0, low_open=True,
                                      allow_none=True)
_FRACTION = functools.partial(check_real, low=0.0, high=1.0, high_open=True)
_AT_LEAST_ONE = functools.partial(check_real, low=1.0)

#: A condition under which a model uses a parameter: ``loops`` the loops
#: (`LOOPS`) it holds in, ``used(value)`` whether a model with the values
#: ``value(key)`` uses it, ``needs`` what it needs, as the program spells
#: it (``{key}`` the key's flag, ``{key=value}`` that setting; None: the
#: message is the rule's own, `presets.check_unused`).
Rule = collections.namedtuple("Rule", ("loops", "used", "needs"))


def techniques(value):
    """The set of techniques of a ``compress`` value (``value(key)``)."""
    return set(filter(None, (value("compress") or "").split(",")))


_LAYERS = Rule(LOOPS, lambda v: v("num_layers") >= 2, None)
_EPOCHS = Rule(
    (_D, _E), lambda v: False, "awd-lm train: this program trains with "
    "clipped SGD on fixed windows of bptt steps up to --train-steps (no "
    "NT-ASGD, epochs, quantization-aware phase or compression pipeline)")
_TRAINS = Rule((_E,), lambda v: False,
               "training: --evaluate-only trains nothing")
_EMBEDDED = Rule(LOOPS, lambda v: not v("data_dir"),
                 "the embedded corpus: the run reads --data-dir")
_AWD = Rule((_T, _D), lambda v: v("model") == "awd",
            "{model=awd}: the plain model has no regularization")
_SPARSE = Rule((_T, _D), lambda v: bool(v("sparsity")), "{sparsity}")
_SCHEDULE = Rule((_T, _D), lambda v: v("pruning") == "magnitude",
                 "{pruning=magnitude}")
_TARGET = Rule((_D,), lambda v: v("pruning") == "magnitude",
               "{pruning=magnitude}")
_QUANTIZED = Rule((_D, _E), lambda v: bool(v("quant")), "{quant=true}")
_NTASGD = Rule((_T,), lambda v: v("optimizer") == "ntasgd" or (
    bool(v("compress")) and v("finetune_optimizer") == "ntasgd"),
    "--optimizer ntasgd (or --compress with --finetune-optimizer ntasgd)")
_QAT = Rule((_T,), lambda v: bool(v("quant") or v("compress")),
            "--quant or --compress")
_MAGNITUDE = Rule((_T,), lambda v: "magnitude" in techniques(v),
                  "--compress magnitude")
_RANK = Rule((_T,), lambda v: v("table_rank") > 0, "--table-rank r > 0")
_VD_L0 = Rule((_T,), lambda v: bool(
    techniques(v) & {"variational_dropout", "l0"}),
    "--compress variational_dropout or l0")
_DISTILL = Rule((_T,), lambda v: bool(v("compress")) and
                v("distill_weight") > 0,
                "--compress with --distill-weight > 0")
_COMPRESS = Rule((_T,), lambda v: bool(v("compress")),
                 "--compress TECHNIQUES (the float run's --pruning "
                 "magnitude keeps its default)")
#: Every rule, in the order `presets.check_unused` tries them.
RULES = (_LAYERS, _EPOCHS, _TRAINS, _EMBEDDED, _AWD, _SPARSE, _SCHEDULE,
         _TARGET, _QUANTIZED, _NTASGD, _QAT, _MAGNITUDE, _RANK, _VD_L0,
         _DISTILL, _COMPRESS)

# The regularization of model 'awd', and the pruning target the
# distributed loop reads with --pruning magnitude (the train loop's
# belongs to --compress).
_REGULARIZED = (_TRAINS, _AWD)
_PRUNING_TARGET = (_TRAINS, _TARGET)
_p = _parameter

#: Every parameter, in the order of a ``config.json``'s ``params``.
PARAMETERS = (
    # model
    _p("emb_size", 400, check_positive_int, "model", required=True,
       help="embedding size (= last LSTM layer, decoder tied)"),
    _p("hidden_size", 1150, check_positive_int, "model", required=True,
       help="units of the other LSTM layers", used=(_LAYERS,)),
    _p("num_layers", 3, check_positive_int, "model", required=True,
       help="LSTM layers"),
    # regularization (used by model 'awd' only)
    _p("dropout", 0.4, RATE, "regularization", used=_REGULARIZED,
       help="locked dropout on the last layer's output (rate)"),
    _p("dropouth", 0.25, RATE, "regularization", used=_REGULARIZED,
       help="locked dropout between LSTM layers (rate)"),
    _p("dropouti", 0.4, RATE, "regularization", used=_REGULARIZED,
       help="locked dropout on the embedding output (rate)"),
    _p("dropoute", 0.1, RATE, "regularization", used=_REGULARIZED,
       help="embedding dropout: whole words (rate)"),
    _p("wdrop", 0.5, RATE, "regularization", used=_REGULARIZED,
       help="DropConnect on the recurrent weights (rate)"),
    _p("alpha", 2.0, _NONNEGATIVE, "regularization", used=_REGULARIZED,
       help="AR weight"),
    _p("beta", 1.0, _NONNEGATIVE, "regularization", used=_REGULARIZED,
       help="TAR weight"),
    _p("wdecay", 1.2e-6, _NONNEGATIVE, "regularization", used=_REGULARIZED,
       help="L2 weight decay"),
    # optimization
    _p("batch_size", 20, check_positive_int, "optimization", used=(_TRAINS,),
       help="training batch size"),
    _p("eval_batch_size", 10, check_positive_int, "optimization",
       help="validation/test batch size"),
    _p("bptt", 70, check_positive_int, "optimization",
       help="truncated BPTT window length"),
    _p("variable_bptt", True, check_bool, "optimization", used=(_EPOCHS,),
       help="vary the window length as in the paper (true/false)"),
    _p("lr", 30.0, _POSITIVE, "optimization", used=(_TRAINS,),
       help="SGD learning rate"),
    # clip 0 means no clipping.
    _p("clip", 0.25, _NONNEGATIVE, "optimization", used=(_TRAINS,),
       help="gradient global-norm clip"),
    _p("optimizer", "ntasgd", None, "optimization", used=(_EPOCHS,),
       choices=("ntasgd", "sgd"),
       help="ntasgd or sgd (model plain defaults to sgd)"),
    _p("nonmono", 5, check_positive_int, "optimization",
       used=(_EPOCHS, _NTASGD), help="NT-ASGD trigger window"),
    # stopping rule, identical for every model of a run
    _p("max_epochs", 500, check_positive_int, "stopping", used=(_EPOCHS,),
       extends=True, help="stop after this many epochs"),
    _p("patience", 10, check_positive_int, "stopping", used=(_EPOCHS,),
       help="stop when validation has not improved for this many epochs"),
    _p("seed", 1111, check_nonnegative_int, "optimization", used=(_TRAINS,),
       help="random seed (graph, BPTT lengths)"),
    # sparse embedding and cells (sparse_layers); weight None: 1 / tokens;
    # the weight ramps up linearly over sparsity_ramp_steps global steps
    _p("sparsity", None, None, "sparse", type=str, flag="choice",
       choices=SPARSITY_CHOICES, help="sparse embedding and LSTM weights "
       "(sparse_layers); prints the sparsity report"),
    _p("sparsity_weight", None, _POSITIVE_OR_NONE, "sparse", type=float,
       used=(_TRAINS, _SPARSE), help="weight of the KL / L0 loss (default "
       "1 / training tokens)"),
    _p("sparsity_ramp_steps", 0, check_nonnegative_int, "sparse",
       used=(_TRAINS, _SPARSE),
       help="steps over which the KL / L0 weight ramps up from 0"),
    # learning rate of log_sigma2 / log_alpha as a multiple of lr
    _p("aux_lr_scale", 1.0, _POSITIVE, "optimization",
       used=(_TRAINS, _SPARSE), help="learning rate of log_sigma2 / "
       "log_alpha as a multiple of --lr"),
    # pruning masks on the embedding and the cells' kernels: None,
    # 'magnitude' (tf1_awd_sparse.transforms.magnitude_pruning's gradual
    # schedule, contrib's on TF 1.x, to target_sparsity between the two
    # steps) or 'fixed' (masks as restored)
    _p("pruning", None, None, "prune", type=str,
       choices=(None, "magnitude", "fixed"),
       help="pruning masks on the embedding and kernels: magnitude "
       "(gradual schedule, as tf.contrib.model_pruning) or fixed"),
    _p("target_sparsity", 0.9, _FRACTION, "prune", phase="compress",
       used=_PRUNING_TARGET + (_COMPRESS,), help="--compress: every technique's target "
       "fraction of zeros (reached exactly by the cut at the ramp's end)"),
    _p("pruning_begin_step", 0, check_nonnegative_int, "prune",
       used=(_TRAINS, _SCHEDULE),
       help="--pruning magnitude: first step of the schedule"),
    _p("pruning_end_step", 100, check_positive_int, "prune",
       used=(_TRAINS, _SCHEDULE),
       help="--pruning magnitude: last step of the schedule"),
    _p("pruning_frequency", 10, check_positive_int, "prune",
       used=(_TRAINS, _SCHEDULE),
       help="--pruning magnitude: steps between mask updates"),
    # the first epoch whose validation may be the best (and count against
    # patience): later than 1 while a schedule or ramp still runs
    _p("select_from_epoch", 1, check_positive_int, "stopping",
       used=(_EPOCHS,),
       help="first epoch whose validation may be the best"),
    _p("select_min_sparsity", 0.0, _FRACTION, "stage", flag=None,
       used=(_EPOCHS,)),
    # compression after the float model (--compress): each technique
    # fine-tunes from the float best checkpoint for finetune_epochs epochs
    # at finetune_lr (None: lr / 4), under the same stopping rule; the best
    # sparse model is pruned, fine-tuned quantization-aware and exported
    _p("compress", "", _compress_techniques, "compression", phase="compress",
       used=(_EPOCHS,), help="comma-separated compression techniques to "
       "run after the float model: variational_dropout, l0, magnitude"),
    _p("finetune_epochs", 12, check_positive_int, "compression",
       phase="compress", used=(_EPOCHS, _COMPRESS),
       help="--compress: epochs of each technique's fine-tuning"),
    _p("finetune_lr", None, _POSITIVE_OR_NONE, "compression", type=float,
       phase="compress", used=(_EPOCHS, _COMPRESS),
       help="--compress: fine-tuning learning rate (default lr / 4)"),
    _p("compress_sparsity_weight", None, _POSITIVE_OR_NONE, "compression",
       type=float, phase="compress", used=(_EPOCHS, _VD_L0),
       help="--compress: weight of the KL / L0 loss of the VD / L0 "
       "fine-tuning (default 1 / training tokens)"),
    # VD / L0: the factor the KL / L0 weight is multiplied by after each
    # ramp epoch whose sparsity lags the schedule (1: off); the exact cut
    # at the ramp's end per weight matrix ('matrix') or across all of them
    # ('global', one threshold)
    _p("compress_controller", 2.0, _AT_LEAST_ONE, "compression",
       phase="compress", used=(_EPOCHS, _VD_L0), help="--compress: VD / "
       "L0: factor on the KL / L0 weight after each ramp epoch whose "
       "sparsity lags the schedule (1: off)"),
    _p("cut_scope", "matrix", None, "compression", phase="compress",
       choices=("matrix", "global"), used=(_EPOCHS, _COMPRESS),
       help="--compress: the exact cut to the target at the ramp's end per "
       "weight matrix (matrix) or with one threshold across all (global)"),
    # uneven budgets: the table's (embedding and tied decoder) own target
    # fraction of zeros; the kernels share the rest of the model's zeros,
    # target_sparsity * all weights (None: every matrix at the target)
    _p("table_sparsity", None, functools.partial(
        check_real, low=0.0, high=1.0, high_open=True, allow_none=True),
       "prune", type=float, phase="compress",
       used=_PRUNING_TARGET + (_COMPRESS,),
       help="--compress: uneven budgets: the table's (embedding and tied "
       "decoder) own fraction of zeros; the kernels share the rest of the "
       "model's zeros, --target-sparsity x all weights (default: every "
       "matrix at --target-sparsity; with --cut-scope matrix)"),
    # group lasso on the pruned weights' blocks in the magnitude ramp:
    # the loss adds group_lasso * sum_b sqrt(|b|) ||w_b||_2 (0: off)
    _p("group_lasso", 0.0, _NONNEGATIVE, "prune", phase="compress",
       used=_PRUNING_TARGET + (_MAGNITUDE,), help="--compress magnitude: "
       "weight G of a group lasso on the pruned weights' 1 x k blocks in "
       "the ramp (not the survivors' fine-tuning): loss + G * sum over "
       "blocks of sqrt(entries) * L2 norm (0: off; docs/results.md "
       "measures it)"),
    # knowledge distillation from the float model in the technique phases
    # (ramp and survivors; `awd_lm.graph.distill`): the loss adds
    # distill_weight * T^2 * the cross-entropy of the student's softmax at
    # temperature T (distill_temperature) against the teacher's (0: off);
    # the teacher is the float model ('float') or the reference, the float
    # model fine-tuned for the same budget ('reference': trained first)
    _p("distill_weight", 0.0, _NONNEGATIVE, "distill", phase="compress",
       used=(_EPOCHS, _COMPRESS), help="--compress: weight of the "
       "distillation from the float model in each technique's fine-tuning "
       "(ramp and survivors; 0: off): loss + W * T^2 * CE(teacher softmax, "
       "student softmax at T)"),
    _p("distill_temperature", 1.0, _POSITIVE, "distill", phase="compress",
       used=(_EPOCHS, _DISTILL), help="--compress: the distillation's "
       "softmax temperature T (> 0)"),
    _p("distill_teacher", "float", None, "distill", phase="compress",
       choices=("float", "reference"), used=(_EPOCHS, _DISTILL),
       help="--compress: the distillation's teacher: the float model "
       "(float) or the reference, the float model fine-tuned for the same "
       "budget (reference: trained before the techniques)"),
    # the optimizer of the fine-tunings whose masks are fixed (the
    # survivors after the cut, the reference): 'sgd' or 'ntasgd' (NT-ASGD,
    # the float model's trigger window); a ramp always runs plain SGD
    _p("finetune_optimizer", "ntasgd", None, "compression", phase="compress",
       choices=("sgd", "ntasgd"), used=(_EPOCHS, _COMPRESS),
       help="--compress: optimizer of the survivors' and the reference's "
       "fine-tuning (sgd or ntasgd; a ramp runs sgd)"),
    # the fraction of finetune_epochs the ramp takes (the schedule or the
    # KL / L0 weight's rise, up to the exact cut); the survivors the rest
    _p("ramp_fraction", 0.4, functools.partial(
        check_real, low=0.0, high=1.0, low_open=True, high_open=True),
       "compression", phase="compress", used=(_EPOCHS, _COMPRESS),
       help="--compress: the fraction of --finetune-epochs the ramp takes "
       "(magnitude's schedule, the VD / L0 weight's rise) before the exact "
       "cut; the survivors are fine-tuned for the rest"),
    # the recommended file's /ref target (compression.ship)
    _p("ship_ppl_target", 1.05, _POSITIVE, "compression", phase="compress",
       used=(_EPOCHS, _COMPRESS), help="--compress: the recommended file "
       "(under the table, in summary.json, awd-lm info and export) is the "
       "fastest TFLite file whose test perplexity is at most this x /ref's, "
       "ties the smallest; none within it: the lowest perplexity"),
    # a dense model of the compressed model's smallest file's bytes beside it
    _p("small_dense", False, check_bool, "compression", phase="compress",
       flag="switch", used=(_EPOCHS, _COMPRESS), help="--compress: also "
       "train a small-dense model, the thing to do instead of compressing: "
       "the same architecture narrower (emb_size = hidden_size) so that its "
       "uint8 file has the bytes of the compressed model's smallest file, "
       "from scratch for the float model's epochs, then quantization-aware; "
       "its rows small_dense* in the table"),
    # the factor on every dropout rate (dropout, dropouth, dropouti,
    # dropoute, wdrop) in the compressed model's fine-tunings (ramp,
    # survivors, QAT; not the reference's): fewer weights, less to
    # regularize
    _p("finetune_dropout_scale", 0.5, functools.partial(
        check_real, low=0.0, high=1.0), "compression", phase="compress",
       used=(_EPOCHS, _COMPRESS), help="--compress: factor in [0, 1] on "
       "every dropout rate in the compressed model's fine-tunings (not the "
       "reference's)"),
    # pruning and the exact cut in 1 x k blocks along each matrix's input
    # dimension (1: entry by entry; 4: TFLite's float sparse kernel, 16:
    # its int8 one; docs/sparse_tflite.md); where k does not divide a
    # matrix's input dimension, 1 x 4 blocks if 4 does, else entry by entry
    _p("pruning_block", 1, check_positive_int, "prune", phase="compress",
       used=_PRUNING_TARGET + (_COMPRESS,), help="--compress: prune and "
       "cut in 1 x k blocks along each matrix's input dimension (1: entry "
       "by entry; 4 and 16: the blocks TFLite's float and int8 sparse "
       "kernels take; 16 gives the fastest file, `export --lstm fused`; its "
       "best recipe measured adds --table-rank 16 --table-rank-rows 4000 "
       "--distill-weight 1 --distill-teacher reference "
       "--finetune-dropout-scale 0.25: docs/results.md)"),
    # the table plus a dense rank-r part on its first rows (0: all; tables)
    _p("table_rank", 0, check_nonnegative_int, "prune", phase="compress",
       carried=True,
       used=(_EPOCHS, _MAGNITUDE, _COMPRESS), help="--compress magnitude: "
       "the compressed model's table is its pruned self plus a dense "
       "rank-r product, so that every word, also one whose row is pruned "
       "away, keeps r numbers of its own (0: off; still tied; the fused "
       "file stores the two parts)"),
    _p("table_rank_rows", 0, check_nonnegative_int, "prune",
       phase="compress", carried=True, used=(_EPOCHS, _RANK, _COMPRESS),
       help="--table-rank: the part on the vocabulary's first K words "
       "only, the most frequent (its ids are sorted by training "
       "frequency): the fused file's sparse decoder pays for each row it "
       "reads, so K words cost less time than all (0: every word)"),
    # NT-ASGD averaging on from a run's first step (set by the pipeline for
    # the reference, which starts from the float model's averaged weights)
    _p("average_from_start", False, check_bool, "stage", flag=None),
    # a run's own controller factor (set by the pipeline for a VD / L0
    # ramp from compress_controller; None: no controller)
    _p("sparsity_controller", None, functools.partial(
        check_real, low=1.0, allow_none=True), "stage", type=float,
       flag=None),
    # quantization-aware fine-tuning (--quant): quant_epochs epochs from
    # the float model's best checkpoint at quant_lr (None: lr / 4), fake
    # quantization from its global step quant_delay on
    _p("quant", False, check_bool, "quantization", phase="quant",
       flag="switch", help="after training each model, fine-tune it "
       "quantization-aware (8-bit fake-quant cells) from its best "
       "checkpoint and score both"),
    _p("quant_epochs", 3, check_positive_int, "quantization", phase="quant",
       used=(_EPOCHS, _QAT), extends=True,
       help="--quant: epochs of quantization-aware fine-tuning"),
    _p("quant_delay", 20, check_nonnegative_int, "quantization",
       phase="quant", used=(_TRAINS, _QUANTIZED, _QAT),
       help="--quant: fine-tuning steps computed in float while the ranges "
       "are learned"),
    _p("quant_lr", None, _POSITIVE_OR_NONE, "quantization", type=float,
       phase="quant", used=(_EPOCHS, _QAT),
       help="--quant: fine-tuning learning rate (default --lr / 4)"),
    _p("weight_bits", 8, check_num_bits, "quantization", phase="quant",
       used=(_QUANTIZED, _QAT), help="--quant: bits of the cells' weights"),
    _p("activation_bits", 8, check_num_bits, "quantization", phase="quant",
       used=(_QUANTIZED, _QAT),
       help="--quant: bits of the cells' activations"),
    # embedded corpus (used when no --data-dir is given); synthetic.make_hmm
    # needs an end state and a word state, <eos> and a word
    _p("hmm_seed", 1234, check_nonnegative_int, "corpus", used=(_EMBEDDED,),
       help="embedded corpus: source seed"),
    _p("hmm_states", 32, _at_least_two, "corpus", used=(_EMBEDDED,),
       help="embedded corpus: hidden states"),
    _p("hmm_vocab", 2000, _at_least_two, "corpus", used=(_EMBEDDED,),
       help="embedded corpus: vocabulary size"),
    _p("hmm_train", 200000, check_positive_int, "corpus", used=(_EMBEDDED,),
       help="embedded corpus: training tokens"),
    _p("hmm_valid", 20000, check_positive_int, "corpus", used=(_EMBEDDED,),
       help="embedded corpus: validation tokens"),
    _p("hmm_test", 20000, check_positive_int, "corpus", used=(_EMBEDDED,),
       help="embedded corpus: test tokens"),
    # What the programs set (no preset value, no generated flag): the
    # model ('awd' or 'plain', --model) and preset of a run, the corpus's
    # vocabulary, a distilled stage's teacher checkpoint prefix, and held
    # (variational) masks in the cells (False in inference graphs).
    _p("model", "awd", _model_name, "run", preset=False, flag=None,
       required=True),
    _p("preset", None, _preset_name, "run", type=str, preset=False,
       flag=None),
    _p("vocab_size", None, check_positive_int, "model", type=int,
       preset=False, flag=None, required=True),
    _p("distill_from", None, _checkpoint_prefix, "stage", type=str,
       preset=False, flag=None),
    _p("use_vd", False, _strict_bool, "stage", preset=False, flag=None),
)

#: Key -> its `Parameter`.
BY_NAME = collections.OrderedDict((p.name, p) for p in PARAMETERS)


def keys(**fields):
    """The keys whose `Parameter` has every one of ``fields``' values, in
    the order of `PARAMETERS` (e.g. ``keys(phase='quant')``,
    ``keys(section='regularization', check=RATE)``)."""
    return tuple(p.name for p in PARAMETERS
                 if all(getattr(p, f) == v for f, v in fields.items()))


#: The presets: each one's values where it differs from the defaults.
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
