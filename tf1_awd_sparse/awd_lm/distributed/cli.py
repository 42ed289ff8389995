"""The command line that the two distributed programs share
(``python -m tf1_awd_sparse.awd_lm.estimator`` and ``...monitored``): its
flags and their checks, the model's parameters and corpus from
``--model-dir``, ``--preset`` and ``--hparams`` (`command_params`), the
model directory a run writes (`write_model_dir`), ``--max-lifetime``, and
the flow from flags to the final JSON line (`command_line`).

Neither program imports the other: each imports this module.
"""
from __future__ import absolute_import, division, print_function

import argparse
import collections
import json
import math
import os
import signal
import sys
import threading

from tensorflow.python.util import deprecation

from tf1_awd_sparse.base import _cli
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.checkpoint_files import check_checkpoint_files
from tf1_awd_sparse.base.checkpoints import check_checkpoint
from tf1_awd_sparse.base.scalar_checks import (
    check_nonnegative_int, check_positive_int, check_real)
from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.config.params import STAGE_KEYS, Params
from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.graph import checkpoints, model

__all__ = ["DISTRIBUTE_CHOICES", "graph_mode_program", "parse_hparams",
           "FLAGS", "FLAG_CHECKS", "FLAG_DEFAULTS", "parse_args",
           "hparam_flag", "hparam_setting",
           "command_params", "checkpoint_step", "write_model_dir",
           "record_valid_ppl",
           "start_lifetime", "LIFETIME_EXIT_STATUS", "LIFETIME_GRACE",
           "command_line", "eval_line"]

DISTRIBUTE_CHOICES = ("none", "mirrored")

#: The command lines' TF1 setup (`_compat.graph_mode_program`).
graph_mode_program = _compat.graph_mode_program


def parse_hparams(text):
    """``'key=value,key=value'`` into a dict of presets.DEFAULTS keys, each
    value converted to its parameter's type and checked
    (`presets.parse_value`).

    Raises:
      ValueError: malformed item, unknown key, a stage key
        (`params.STAGE_KEYS`, set by the pipeline) or invalid value (names it,
        e.g. ``--hparams variable_bptt must be true or false, got 'of'``).
    """
    out = {}
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError("--hparams: expected key=value, got %r"
                             % (item,))
        if key not in presets.DEFAULTS:
            raise ValueError(presets.unknown_key(key, "--hparams"))
        if key in STAGE_KEYS:
            raise ValueError("--hparams: %r is no parameter to give: the "
                             "pipeline sets it for a stage of a run" % key)
        out[key] = presets.parse_value(key, value, "--hparams " + key)
    return out


# The command-line flags: (flag, argparse keywords).
FLAGS = (
    ("--model-dir", dict(required=True, help="checkpoints and summaries "
                         "(shared by every task of a cluster)")),
    ("--model", dict(choices=model.MODELS, default=None, help="default: "
                     "awd, or the one in --model-dir's config.json")),
    ("--preset", dict(choices=sorted(presets.PRESETS), default=None,
                      help="default: demo, or the one in --model-dir's "
                      "config.json")),
    ("--hparams", dict(default="", help="overrides, e.g. "
                       "'emb_size=16,hidden_size=32'; on a --model-dir "
                       "with a config.json they must agree with it")),
    ("--data-dir", dict(help="PTB-layout corpus; default: the embedded HMM "
                        "corpus")),
    ("--train-steps", dict(type=int, default=None, help="global step at "
                           "which training stops (default 1000)")),
    ("--eval-steps", dict(type=int, default=None, help="validation batches "
                          "per evaluation (default: all)")),
    ("--use-vd", dict(action="store_true", help="DropConnect masks in "
                      "variables, resampled after every step (per worker / "
                      "replica)")),
    ("--distribute", dict(choices=DISTRIBUTE_CHOICES, default="none",
                          help="'mirrored': MirroredStrategy over "
                          "--num-devices devices of this machine")),
    ("--num-devices", dict(type=int, default=None, help="devices for "
                           "--distribute mirrored (GPUs if any, else CPU "
                           "devices; default 2)")),
    ("--threads", dict(type=int, default=0, help="intra/inter-op threads per "
                       "process (0: TF's choice)")),
    ("--barrier-timeout", dict(type=float, default=None, help="seconds a "
                               "cluster task waits for the others at start "
                               "and end (default 120)")),
    ("--evaluate-only", dict(action="store_true", help="evaluate the latest "
                             "checkpoint of --model-dir on the validation "
                             "split in this process (no TF_CONFIG)")),
    ("--max-lifetime", dict(type=float, default=0, help="end this process "
                            "after so many seconds (0: never) with one line "
                            "saying so and exit status 3; bounds a ps, which "
                            "never exits by itself")),
    ("--save-steps", dict(type=int, default=None, help="checkpoint every "
                          "N global steps (default 100)")),
)

#: The defaults of the flags that some others make do nothing (None in
#: `FLAGS`, so that `parse_args` sees whether they were given).
FLAG_DEFAULTS = {"train_steps": 1000, "num_devices": 2,
                 "barrier_timeout": 120.0, "save_steps": 100}

#: (flag's dest, what it needs, whether the others leave it something to
#: do): a flag given that does nothing is refused (`parse_args`).
_NEEDS = (
    ("num_devices", "--distribute mirrored",
     lambda a: a.distribute == "mirrored"),
    ("distribute", "a training run: --evaluate-only evaluates in this "
     "process, on one device", lambda a: a.distribute == "none"
     or not a.evaluate_only),
    ("barrier_timeout", "a TF_CONFIG cluster's training (--evaluate-only "
     "and --distribute mirrored run in one process)",
     lambda a: not a.evaluate_only and a.distribute == "none"),
    ("train_steps", "a training run: --evaluate-only trains nothing",
     lambda a: not a.evaluate_only),
    ("save_steps", "a training run: --evaluate-only trains nothing",
     lambda a: not a.evaluate_only),
    ("use_vd", "a training run: --evaluate-only reads no dropout masks",
     lambda a: not a.use_vd or not a.evaluate_only),
    ("log_steps", "a training run: --evaluate-only trains nothing",
     lambda a: not a.evaluate_only),
)



# The checks of the numeric flags (argparse converts, these check ranges).
FLAG_CHECKS = {
    "train_steps": check_positive_int, "eval_steps": check_positive_int,
    "num_devices": check_positive_int, "threads": check_nonnegative_int,
    "save_steps": check_positive_int,
    "barrier_timeout": lambda v, name: check_real(v, name, low=0.0,
                                                  low_open=True),
    "max_lifetime": lambda v, name: check_real(v, name, low=0.0),
}


def parse_args(argv=None, extra_flags=(), prog=None, description=None):
    """Command-line arguments (see ``--help``), checked.

    Args:
      argv: the arguments (default: ``sys.argv[1:]``).
      extra_flags: more ``(flag, argparse keywords)`` pairs, for programs
        that extend this command line (e.g. a test probe's own flag).
      prog, description: the program name and ``--help`` text (each
        program passes its own).

    Raises:
      SystemExit: (code 2, one line on stderr naming the flag) a bad flag.
    """
    p = _cli.ArgumentParser(
        prog=prog, description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, kwargs in FLAGS + tuple(extra_flags):
        p.add_argument(flag, **kwargs)
    args = p.check_flags(p.parse_args(argv), FLAG_CHECKS)
    for dest, needs, used in _NEEDS:
        if getattr(args, dest, None) is not None and not used(args):
            _cli.fail("%s has no effect here: it needs %s; leave it out"
                      % ("--" + dest.replace("_", "-"), needs))
    for dest, default in FLAG_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    return args


def hparam_flag(key):
    """How the distributed command lines name a parameter in errors
    (``'--hparams <key>'``)."""
    return "--hparams " + key


_hparam = hparam_flag


def hparam_setting(key, value):
    """How the distributed command lines set a parameter, in errors:
    ``--model awd`` and ``--preset demo`` (their flags), else
    ``--hparams key=value``."""
    if key in ("model", "preset"):
        return "--%s %s" % (key, value)
    return "%s=%s" % (hparam_flag(key), value)


def _config_path(model_dir):
    return os.path.join(model_dir, modeldir.CONFIG_FILE)


def _given(args, overrides):
    """{key: value} of what the command line set explicitly: --preset,
    --model and the --hparams items (their flags' names as keys)."""
    given = {"--" + k: getattr(args, k) for k in ("preset", "model")
             if getattr(args, k) is not None}
    given.update((_hparam(k), v) for k, v in overrides.items())
    return given


def _check_flags_against(args, overrides, params, path):
    """Raises ValueError for a flag that disagrees with the model
    directory's config.json (``path``, whose ``params`` these are)."""
    # A flag names its flat key (config.json's), so compare flat.
    recorded = params.to_flat()
    for name, value in sorted(_given(args, overrides).items()):
        key = name.split()[-1].lstrip("-")
        if recorded.get(key) != value:
            raise ValueError(
                "%s %r disagrees with %s, which holds %r: the model "
                "directory's config is its configuration; leave the "
                "flag out or use a new --model-dir"
                % (name, value, path, recorded.get(key)))


def command_params(args, flag=None):
    """The model's parameters and corpus of a distributed command line
    (the estimator's and monitored's ``prepare``), from one source:

    - ``--model-dir`` holds a ``config.json`` (`awd_lm.config.modeldir`,
      written when a run starts): its ``params`` are the configuration;
      whatever ``--preset``, ``--model`` or ``--hparams`` also give must
      agree with it (a value that differs is refused), and the corpus must
      have its vocabulary (``vocab.txt``);
    - otherwise ``--preset`` (default demo), ``--model`` (default awd)
      and ``--hparams`` (`presets.params_for`).

    Args:
      args: from `parse_args` (model_dir, preset, model, hparams,
        data_dir, evaluate_only, use_vd).
      flag: function ``key -> how errors name it`` (default `hparam_flag`).

    Returns:
      ``(params, corpus)``: a checked `Params` with 'vocab_size' and
      'use_vd' given.

    Raises:
      ValueError: one line each: a malformed, unknown (with the closest
        key) or invalid ``--hparams`` item; without a config.json, a key
        this loop would not use (`presets.check_unused`, loop
        'distributed' or, with --evaluate-only, 'evaluate', naming what
        it needs); --use-vd with the plain model; a bad config.json
        (`modeldir.ConfigError`: unknown keys named with the closest);
        a flag that disagrees with config.json (naming both values); a
        corpus whose vocabulary is not the directory's; an unreadable
        corpus or a split too short for one window.
    """
    flag = flag or _hparam
    overrides = parse_hparams(args.hparams)
    path = _config_path(args.model_dir)
    config = (modeldir.read_config(path) if os.path.exists(path)
              else None)
    data_dir = args.data_dir
    if not data_dir and config is not None:
        # The corpus the directory trained on, as its config.json says.
        data_dir = (config.get("produced_by") or {}).get("data_dir")
    if config is None:
        # The flags' parameters enter here (config.json's are checked by
        # `modeldir.read_config`).
        params = Params.for_preset(args.preset or "demo",
                                   args.model or "awd", overrides)
        # The flags are the configuration: a key this loop would not use
        # is refused, never recorded as used. (With a config.json, the
        # flags given are checked against it, as train --resume's are.)
        presets.check_used(params, overrides, flag, loop="evaluate" if
                           args.evaluate_only else "distributed",
                           setting=hparam_setting,
                           facts={"data_dir": data_dir})
    else:
        params = config["params"]
    if args.use_vd and params.run.model != "awd":
        raise ValueError("--use-vd has no effect here: it needs --model awd "
                         "(the plain model has no DropConnect); leave it "
                         "out")
    if config is not None:
        _check_flags_against(args, overrides, params, path)
    corpus, _, _ = runtime.load_corpus(data_dir, params)
    if config is not None and list(corpus.vocab) != config["words"]:
        raise ValueError(
            "%s: the corpus's vocabulary (%d words) is not the one "
            "%s was trained on (%s, %d words); give its corpus"
            % ("--data-dir" if args.data_dir else
               "the corpus of %s's config.json" % args.model_dir,
               len(corpus.vocab), args.model_dir, modeldir.VOCAB_FILE,
               len(config["words"])))
    batch_sizes = params.batch_sizes()
    runtime.check_corpus(corpus, collections.OrderedDict(
        (split, batch_sizes[split]) for split in (
            ("valid",) if args.evaluate_only else ("train", "valid"))),
        params.optimization.bptt, data_dir, flag, fixed_windows=True)
    if params.prune.pruning == "magnitude" and args.distribute == "mirrored":
        raise ValueError(
            "%s 'magnitude' does not run under --distribute mirrored (its "
            "mask update is no replica's); train it in one process or a "
            "cluster" % flag("pruning"))
    return params.replace(vocab_size=len(corpus.vocab),
                          use_vd=args.use_vd), corpus


def checkpoint_step(model_dir):
    """The global step of ``model_dir``'s latest checkpoint (0: none), its
    files checked whole first (`base.checkpoint_files`: no index or data
    shard missing, empty or shorter than the index records).

    Raises:
      checkpoints.CheckpointError: a checkpoint that cannot be read, one
        line naming it and the file.
    """
    latest = tf.train.latest_checkpoint(model_dir)
    if not latest:
        return 0
    try:
        check_checkpoint_files(latest)
        return int(check_checkpoint(latest, "--model-dir").get_tensor(
            "global_step"))
    except ValueError as e:
        raise checkpoints.CheckpointError(str(e).splitlines()[0])


def write_model_dir(args, params, corpus):
    """Writes ``--model-dir``'s config.json and vocab.txt
    (`modeldir.write_config`) before a run trains: the parameters
    (`modeldir.PARAM_KEYS` of ``params``: not the run's own 'use_vd' or
    hooks) and the checkpoint the run ends with, ``model.ckpt-<N>`` for
    ``--train-steps`` N or the latest checkpoint's step if larger (a
    finished run is not stepped again); the directory is then read by
    `command_params` (``--evaluate-only`` needs no other flag).

    Returns:
      the config.json's path.
    """
    if not os.path.isdir(args.model_dir):
        os.makedirs(args.model_dir)
    kept = params.without(*(k for k in params.to_flat()
                            if k not in modeldir.PARAM_KEYS))
    step = max(args.train_steps, checkpoint_step(args.model_dir))
    # How and on what the run trains, so that the directory describes it
    # (and --evaluate-only finds the corpus without a repeated --data-dir).
    how = {"optimizer": "clipped SGD (lr %g, clip %g); no NT-ASGD"
                        % (params.optimization.lr, params.optimization.clip),
           "bptt": "fixed windows of %d steps, each from a zero state"
                   % params.optimization.bptt}
    # data_dir None: the embedded corpus, which params' hmm_* describe.
    data_dir = os.path.abspath(args.data_dir) if args.data_dir else None
    return modeldir.write_config(
        args.model_dir, kept, list(corpus.vocab),
        modeldir.produced_by(kept, source="distributed command line",
                             training=how, corpus=corpus.name,
                             data_dir=data_dir),
        checkpoint="model.ckpt-%d" % step)


def record_valid_ppl(model_dir, metrics):
    """Fills ``produced_by.valid_ppl`` of ``model_dir``'s config.json with
    an evaluation's perplexity (``metrics['perplexity']``), once training
    has evaluated; no config.json or no perplexity: nothing is written."""
    path = _config_path(model_dir)
    if not metrics or "perplexity" not in metrics or not os.path.exists(path):
        return
    with open(path) as handle:
        config = json.load(handle)
    config.setdefault("produced_by", {})["valid_ppl"] = float(
        metrics["perplexity"])
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(config, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


# The exit status of a process ended by --max-lifetime (1 is a diverged
# run, 2 bad input): the time limit, not a failure of the work.
LIFETIME_EXIT_STATUS = 3

# Seconds after the limit at which SIGALRM ends the process anyway, should
# the watchdog thread not get to run (a call holding the GIL).
LIFETIME_GRACE = 10


def _lifetime_over(seconds):
    """The watchdog's end: one line and `LIFETIME_EXIT_STATUS`."""
    sys.stderr.write("--max-lifetime: the lifetime limit of %g s was "
                     "reached; ending this process (exit status %d)\n"
                     % (seconds, LIFETIME_EXIT_STATUS))
    sys.stderr.flush()
    os._exit(LIFETIME_EXIT_STATUS)  # pylint: disable=protected-access


def start_lifetime(args):
    """Ends this process after ``args.max_lifetime`` seconds (0: never)
    with one line on stderr and exit status `LIFETIME_EXIT_STATUS`, from a
    daemon thread, so it ends wherever the main thread is blocked (a ps in
    ``server.join()``, which no Python signal handler interrupts). SIGALRM's
    default action, `LIFETIME_GRACE` s later, is the safety net."""
    if args.max_lifetime > 0:
        timer = threading.Timer(args.max_lifetime, _lifetime_over,
                                (args.max_lifetime,))
        timer.daemon = True
        timer.start()
        signal.alarm(int(math.ceil(args.max_lifetime)) + LIFETIME_GRACE)


def command_line(args, prepare_fn, execute_fn, make_hooks=None):
    """The flow of the distributed command lines (the estimator's and
    monitored's ``main``): TF1 graph mode, ``--max-lifetime``,
    TensorFlow's INFO log (step, loss, checkpoints) without 1.x's
    deprecation notes, then ``prepare_fn(args, hooks)`` and
    ``execute_fn(setup)``, and the final evaluation as `eval_line`.

    Args:
      args: from `parse_args`.
      prepare_fn, execute_fn: the command line's `prepare` and `execute`.
      make_hooks: None or ``(args, loss) -> list of SessionRunHooks``.

    Returns:
      0; a ValueError of ``prepare_fn`` (bad input, found before anything
      is written), and a `checkpoints.CheckpointError` of ``execute_fn``
      (a damaged checkpoint in --model-dir), end the process with status
      2 and its one line.
    """
    graph_mode_program()
    start_lifetime(args)
    deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
    tf.logging.set_verbosity(tf.logging.INFO)
    hooks = None
    if make_hooks is not None:
        hooks = lambda loss: make_hooks(args, loss)  # noqa: E731
    try:
        setup = prepare_fn(args, hooks)
    except ValueError as e:
        _cli.fail(e)
    try:
        metrics = execute_fn(setup)
    except checkpoints.CheckpointError as e:   # --model-dir's, damaged
        _cli.fail(e)
    if metrics:
        print(eval_line(metrics))
    return 0


def eval_line(metrics):
    """``eval: `` and the metrics as one line of strict JSON (RFC 8259),
    keys sorted: each value a float, a NaN or infinite value (e.g. the
    perplexity of a diverged model) ``null`` (Python's json would write
    NaN / Infinity, which JSON parsers other than Python's refuse)."""
    values = {}
    for key, value in metrics.items():
        value = float(value)
        values[key] = value if math.isfinite(value) else None
    return "eval: " + json.dumps(values, allow_nan=False, sort_keys=True)
