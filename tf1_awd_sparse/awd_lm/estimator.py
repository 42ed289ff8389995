"""The language model on TensorFlow's own distributed runtime (Estimator).

`model_fn` wraps `awd_lm.model.build_lm` (the same graph code as the
single-process loop) for `tf.estimator.Estimator`; `make_input_fn` feeds
fixed-length BPTT windows from a token stream, a disjoint share per worker.
The command line (``python -m tf1_awd_sparse.awd_lm.estimator --help``)
trains with `tf.estimator.train_and_evaluate`, so the same command runs:

- in one process (no ``TF_CONFIG``);
- as a parameter-server cluster: every process gets ``TF_CONFIG`` naming the
  cluster and its own role (``ps``, ``chief``, ``worker``); variables go to
  the ps through ``tf.train.replica_device_setter``, dropout masks stay on
  each worker (see `mask_placement`);
- with ``--distribute mirrored``: ``tf.distribute.MirroredStrategy``
  over ``--num-devices`` devices of this machine (CPU devices made with
  ``device_count`` when there is no GPU).

It needs ``tf.estimator`` (TensorFlow 1.x and 2.x up to 2.15). On 2.16+
it exits with status 2 and one line naming its replacement:
``python -m tf1_awd_sparse.awd_lm.monitored`` (`awd_lm.monitored`) takes
the same flags and runs the same three setups through
``tf.train.MonitoredTrainingSession``, on every version.

A run that trains writes ``config.json`` and ``vocab.txt`` into
``--model-dir`` first (`awd_lm.modeldir`); from then on they are the
directory's configuration: ``--evaluate-only`` needs no ``--hparams``, and
a ``--preset``, ``--model`` or ``--hparams`` value that differs from
config.json is refused in one line (`command_params`).

Differences from the single-process loop (`awd_lm.train`): each window
starts from a zero state (Estimator input pipelines carry no state between
batches), the window length is fixed (``bptt``), and the optimizer is plain
SGD with gradient clipping (NT-ASGD's trigger needs the loop's validation
schedule).

The pieces live in modules by job: `awd_lm.input_fn` (the input
pipeline), `awd_lm.model_fn` (``model_fn`` and the mask-resampling hook),
`awd_lm.cluster` (barriers, MirroredStrategy), `awd_lm.runtime` (corpus
and session configuration, shared with the single-process loop); this
module is the command line and exports the pieces under their old names.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import math
import os
import signal
import sys

if __name__ == "__main__":  # the command line: quiet TensorFlow first
    import tf1_awd_sparse.base._quiet  # noqa: F401  pylint: disable=unused-import

from tf1_awd_sparse.base.compat import tf  # noqa: E402
from tensorflow.python.util import deprecation

from tf1_awd_sparse.base import _cli
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.checkpoints import check_checkpoint
from tf1_awd_sparse.base.checks import (
    check_nonnegative_int, check_positive_int, check_real)
from tf1_awd_sparse.awd_lm import model, modeldir, presets, runtime
# The pieces, under the names this module has always exported.
from tf1_awd_sparse.awd_lm.cluster import (  # noqa: F401
    ClusterBarrierHook, mirrored_strategy)
from tf1_awd_sparse.awd_lm.input_fn import make_input_fn  # noqa: F401
from tf1_awd_sparse.awd_lm.model_fn import model_fn  # noqa: F401
from tf1_awd_sparse.base import names as _names
from tf1_awd_sparse.awd_lm.runtime import session_config  # noqa: F401
from tf1_awd_sparse.base.errors import Error

__all__ = ["DISTRIBUTE_CHOICES", "ALTERNATIVE", "EstimatorUnavailableError",
           "require_estimator", "parse_hparams", "FLAGS", "FLAG_CHECKS",
           "parse_args", "hparam_flag", "prepare", "command_params",
           "write_model_dir", "record_valid_ppl", "execute",
           "start_lifetime",
           "LIFETIME_EXIT_STATUS", "run", "main",
           "command_line", "eval_line"]

DISTRIBUTE_CHOICES = ("none", "mirrored")

#: The command line that replaces this one where tf.estimator is missing.
ALTERNATIVE = "python -m tf1_awd_sparse.awd_lm.monitored"


class EstimatorUnavailableError(RuntimeError, Error):
    """``tf.estimator`` is missing (TensorFlow 2.16+); the message is one
    line naming the command line to use instead."""


def require_estimator():
    """Raises `EstimatorUnavailableError` when this TensorFlow has no
    ``tf.estimator``.

    Raises:
      EstimatorUnavailableError: on TensorFlow 2.16+ (one line naming
        `ALTERNATIVE`, which takes the same flags).
    """
    if not _compat.estimator_available():
        raise EstimatorUnavailableError(
            "tf.estimator was removed in TensorFlow 2.16 (this is %s): run "
            "%s with the same flags (MonitoredTrainingSession: one process, "
            "a TF_CONFIG cluster or --distribute mirrored)"
            % (tf.__version__, ALTERNATIVE))


#: The command lines' TF1 setup (`_compat.graph_mode_program`).
graph_mode_program = _compat.graph_mode_program


def parse_hparams(text):
    """``'key=value,key=value'`` into a dict of presets.DEFAULTS keys, each
    value converted to its parameter's type and checked
    (`presets.parse_value`).

    Raises:
      ValueError: malformed item, unknown key or invalid value (names it,
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
    ("--train-steps", dict(type=int, default=1000,
                           help="global step at which training stops")),
    ("--eval-steps", dict(type=int, default=None, help="validation batches "
                          "per evaluation (default: all)")),
    ("--use-vd", dict(action="store_true", help="DropConnect masks in "
                      "variables, resampled after every step (per worker / "
                      "replica)")),
    ("--distribute", dict(choices=DISTRIBUTE_CHOICES, default="none",
                          help="'mirrored': MirroredStrategy over "
                          "--num-devices devices of this machine")),
    ("--num-devices", dict(type=int, default=2, help="devices for "
                           "--distribute mirrored (GPUs if any, else CPU "
                           "devices)")),
    ("--threads", dict(type=int, default=0, help="intra/inter-op threads per "
                       "process (0: TF's choice)")),
    ("--barrier-timeout", dict(type=float, default=120.0, help="seconds a "
                               "cluster task waits for the others at start "
                               "and end")),
    ("--evaluate-only", dict(action="store_true", help="evaluate the latest "
                             "checkpoint of --model-dir on the validation "
                             "split in this process (no TF_CONFIG)")),
    ("--max-lifetime", dict(type=float, default=0, help="end this process "
                            "after so many seconds (0: never) with one line "
                            "saying so and exit status 3; bounds a ps, which "
                            "never exits by itself")),
    ("--save-steps", dict(type=int, default=100,
                          help="checkpoint every N global steps")),
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
      prog, description: the program name and ``--help`` text (default:
        this command line's; `awd_lm.monitored` passes its own).

    Raises:
      SystemExit: (code 2, one line on stderr naming the flag) a bad flag.
    """
    p = _cli.ArgumentParser(
        prog=prog or "python -m tf1_awd_sparse.awd_lm.estimator",
        description=description or __doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, kwargs in FLAGS + tuple(extra_flags):
        p.add_argument(flag, **kwargs)
    return p.check_flags(p.parse_args(argv), FLAG_CHECKS)


def hparam_flag(key):
    """How the distributed command lines name a parameter in errors
    (``'--hparams <key>'``)."""
    return "--hparams " + key


_hparam = hparam_flag


def prepare(args, training_hooks=None):
    """What a run of the command line needs, built and checked before
    anything is trained or written.

    Args:
      args: from `parse_args`.
      training_hooks: optional function ``loss -> list of hooks`` added to
        every training step (see `model_fn`).

    Returns:
      dict with 'estimator', 'eval_input', 'train_spec' (None for
      ``--evaluate-only``), 'eval_steps' and 'model_dir' (what
      `write_model_dir` writes before the chief trains, else None).

    The parameters come from ``--model-dir``'s config.json when it has
    one, else from the flags (`command_params`).

    Raises:
      EstimatorUnavailableError: TensorFlow 2.16+ (no ``tf.estimator``).
      ValueError: what `command_params` refuses (flags that disagree with
        config.json among them), bad ``--hparams`` (named; an unknown key
        with the closest ones), ``hidden_size`` given with ``num_layers`` 1
        (`presets.check_used`), an unreadable corpus or a split too short
        for one window (`data.DataError`, naming the file and the
        ``--hparams`` to change), a cluster with ``--distribute mirrored`` or
        ``--evaluate-only``, or no checkpoint to evaluate.
    """
    require_estimator()
    params, corpus = command_params(args)
    params["training_hooks"] = training_hooks
    probe = tf.estimator.RunConfig()
    task_type, task_id = probe.task_type, probe.task_id
    mirrored = args.distribute == "mirrored"
    if (mirrored or args.evaluate_only) and probe.cluster_spec:
        raise ValueError("--distribute mirrored and --evaluate-only run in "
                         "one process; unset TF_CONFIG (got a cluster: %s)"
                         % (probe.cluster_spec.as_dict(),))
    n_tasks = probe.num_worker_replicas if probe.cluster_spec else 1
    # A different graph seed per task: workers must not draw the same masks
    # (an evaluator has no id in the cluster).
    config = tf.estimator.RunConfig(
        model_dir=args.model_dir,
        tf_random_seed=params["seed"] + (probe.global_id_in_cluster or 0),
        save_checkpoints_steps=args.save_steps, save_summary_steps=50,
        log_step_count_steps=50,
        session_config=session_config(
            args.threads, task_type if probe.cluster_spec else None,
            task_id, args.num_devices if mirrored else None),
        train_distribute=(mirrored_strategy(args.num_devices) if mirrored
                          else None))
    estimator = tf.estimator.Estimator(model_fn, params=params, config=config)
    eval_input = make_input_fn(corpus.valid, params["eval_batch_size"],
                               params["bptt"], repeat=False)
    setup = {"estimator": estimator, "eval_input": eval_input,
             "eval_steps": args.eval_steps, "train_spec": None,
             "model_dir": None}
    if args.evaluate_only:
        if not tf.train.latest_checkpoint(args.model_dir):
            raise ValueError("--model-dir: no checkpoint in %r"
                             % (args.model_dir,))
        return setup
    hooks = []
    if probe.cluster_spec and task_type != "ps":
        hooks.append(ClusterBarrierHook(
            n_tasks, args.train_steps, config.is_chief,
            timeout_secs=args.barrier_timeout))
    # Chief and workers take disjoint shares of the windows (ids 0..n-1).
    shard = (probe.global_id_in_cluster
             if probe.cluster_spec and task_type != "ps" else 0)
    train_input = make_input_fn(corpus.train, params["batch_size"],
                                params["bptt"], n_tasks, shard)
    setup["train_spec"] = tf.estimator.TrainSpec(
        train_input, max_steps=args.train_steps, hooks=hooks)
    if config.is_chief:
        setup["model_dir"] = (args, params, corpus)
    return setup


def _config_path(model_dir):
    return os.path.join(model_dir, modeldir.CONFIG_FILE)


def _given(args, overrides):
    """{key: value} of what the command line set explicitly: --preset,
    --model and the --hparams items (their flags' names as keys)."""
    given = {"--" + k: getattr(args, k) for k in ("preset", "model")
             if getattr(args, k) is not None}
    given.update((_hparam(k), v) for k, v in overrides.items())
    return given


def command_params(args, flag=None):
    """The model's parameters and corpus of a distributed command line
    (`prepare` here and in `awd_lm.monitored`), from one source:

    - ``--model-dir`` holds a ``config.json`` (`awd_lm.modeldir`, written
      when a run starts): its ``params`` are the configuration; whatever
      ``--preset``, ``--model`` or ``--hparams`` also give must agree with
      it (a value that differs is refused), and the corpus must have its
      vocabulary (``vocab.txt``);
    - otherwise ``--preset`` (default demo), ``--model`` (default awd)
      and ``--hparams`` (`presets.params_for`).

    Args:
      args: from `parse_args` (model_dir, preset, model, hparams,
        data_dir, evaluate_only, use_vd).
      flag: function ``key -> how errors name it`` (default `hparam_flag`).

    Returns:
      ``(params, corpus)``: params with 'vocab_size' and 'use_vd'.

    Raises:
      ValueError: one line each: a malformed, unknown (with the closest
        key) or invalid ``--hparams`` item; a bad config.json
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
    if config is None:
        params = presets.params_for(args.preset or "demo",
                                    args.model or "awd", overrides)
        presets.check_used(params, overrides, flag)
    else:
        params = dict(config["params"])
        for name, value in sorted(_given(args, overrides).items()):
            key = name.split()[-1].lstrip("-")
            if params.get(key) != value:
                raise ValueError(
                    "%s %r disagrees with %s, which holds %r: the model "
                    "directory's config is its configuration; leave the "
                    "flag out or use a new --model-dir"
                    % (name, value, path, params.get(key)))
    data_dir = args.data_dir
    if not data_dir and config is not None:
        # The corpus the directory trained on, as its config.json says.
        data_dir = (config.get("produced_by") or {}).get("data_dir")
    corpus, _, _ = runtime.load_corpus(data_dir, params)
    if config is not None and list(corpus.vocab) != config["words"]:
        raise ValueError(
            "%s: the corpus's vocabulary (%d words) is not the one "
            "%s was trained on (%s, %d words); give its corpus"
            % ("--data-dir" if args.data_dir else
               "the corpus of %s's config.json" % args.model_dir,
               len(corpus.vocab), args.model_dir, modeldir.VOCAB_FILE,
               len(config["words"])))
    runtime.check_corpus(corpus, params, data_dir, flag,
                         fixed_windows=True, splits=(
                             ("valid",) if args.evaluate_only
                             else ("train", "valid")))
    if params.get("pruning") == "magnitude" and args.distribute == "mirrored":
        raise ValueError(
            "%s 'magnitude' does not run under --distribute mirrored (its "
            "mask update is no replica's); train it in one process or a "
            "cluster" % flag("pruning"))
    params.update(vocab_size=len(corpus.vocab), use_vd=args.use_vd)
    return params, corpus


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
    kept = {k: v for k, v in params.items() if k in modeldir.PARAM_KEYS}
    latest = tf.train.latest_checkpoint(args.model_dir)
    step = max(args.train_steps, int(check_checkpoint(
        latest, "--model-dir").get_tensor("global_step")) if latest else 0)
    # How and on what the run trains, so that the directory describes it
    # (and --evaluate-only finds the corpus without a repeated --data-dir).
    how = {"optimizer": "clipped SGD (lr %g, clip %g); no NT-ASGD"
                        % (params.get("lr", 0), params.get("clip", 0)),
           "bptt": "fixed windows of %d steps, each from a zero state"
                   % params.get("bptt", 0)}
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


def execute(setup):
    """Trains and evaluates with ``train_and_evaluate`` (or only evaluates,
    for ``--evaluate-only``).

    Returns:
      dict of evaluation metrics (xent, perplexity, loss, global_step), or
      None for cluster tasks (their evaluation belongs to an evaluator).
    """
    estimator = setup["estimator"]
    if setup["train_spec"] is None:
        return estimator.evaluate(setup["eval_input"],
                                  steps=setup["eval_steps"])
    if setup["model_dir"] is not None:
        write_model_dir(*setup["model_dir"])
    result = tf.estimator.train_and_evaluate(
        estimator, setup["train_spec"],
        tf.estimator.EvalSpec(setup["eval_input"], steps=setup["eval_steps"],
                              throttle_secs=0))
    metrics = result[0] if result else None
    if setup["model_dir"] is not None:
        record_valid_ppl(setup["model_dir"][0].model_dir, metrics)
    return metrics


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
        import threading
        timer = threading.Timer(args.max_lifetime, _lifetime_over,
                                (args.max_lifetime,))
        timer.daemon = True
        timer.start()
        signal.alarm(int(math.ceil(args.max_lifetime)) + LIFETIME_GRACE)


def run(argv=None):
    """Runs the command line: trains (and evaluates) with
    ``train_and_evaluate``, or with ``--evaluate-only`` evaluates the latest
    checkpoint of ``--model-dir`` in this process.

    Returns:
      dict of evaluation metrics (xent, perplexity, loss, global_step), or
      None for cluster tasks (their evaluation belongs to an evaluator).

    Raises:
      EstimatorUnavailableError: TensorFlow 2.16+ (no ``tf.estimator``).
      ValueError: bad arguments (named, see `prepare`).
      SystemExit: (code 2) a bad flag value.
    """
    require_estimator()
    args = parse_args(argv)
    start_lifetime(args)
    return execute(prepare(args))


def main(argv=None, extra_flags=(), make_hooks=None):
    """The command line; prints the final evaluation as one JSON line.

    Args:
      argv: the arguments (default: ``sys.argv[1:]``).
      extra_flags, make_hooks: for programs that extend this command line:
        more ``(flag, argparse keywords)`` pairs, and a function ``(args,
        loss) -> list of SessionRunHooks`` run in every training step.

    Returns:
      0; bad input ends the process with status 2 and one line on stderr,
      and so does a TensorFlow without ``tf.estimator`` (2.16+: the line
      names `ALTERNATIVE`). The JSON line: see `eval_line`.
    """
    try:
        require_estimator()
    except EstimatorUnavailableError as e:
        _cli.fail(e)
    return command_line(parse_args(argv, extra_flags), prepare, execute,
                        make_hooks)


def command_line(args, prepare_fn, execute_fn, make_hooks=None):
    """The flow of the distributed command lines (this one's and
    `awd_lm.monitored`'s ``main``): TF1 graph mode, ``--max-lifetime``,
    TensorFlow's INFO log (step, loss, checkpoints) without 1.x's
    deprecation notes, then ``prepare_fn(args, hooks)`` and
    ``execute_fn(setup)``, and the final evaluation as `eval_line`.

    Args:
      args: from `parse_args`.
      prepare_fn, execute_fn: the command line's `prepare` and `execute`.
      make_hooks: None or ``(args, loss) -> list of SessionRunHooks``.

    Returns:
      0; a ValueError of ``prepare_fn`` (bad input, found before anything
      is written) ends the process with status 2 and its one line.
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
    metrics = execute_fn(setup)
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


if __name__ == "__main__":
    sys.exit(main())


def __getattr__(name):
    # Names that moved or went (base/names.py's table).
    return _names.moved_attribute(__name__, name)
