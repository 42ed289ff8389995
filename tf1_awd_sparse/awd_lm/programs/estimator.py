"""The language model on TensorFlow's own distributed runtime (Estimator).

`distributed.model_fn.model_fn` wraps `awd_lm.graph.model.build_lm` (the
same graph code as the single-process loop) for `tf.estimator.Estimator`;
`distributed.input_fn.make_input_fn` feeds fixed-length BPTT windows from a
token stream, a disjoint share per worker. The command line (``awd-lm
estimator --help``) trains with `tf.estimator.train_and_evaluate`, so the
same command runs:

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
``python -m tf1_awd_sparse.awd_lm.monitored`` (``awd-lm monitored``,
`awd_lm.programs.monitored`) takes the same flags and runs the same three
setups through ``tf.train.MonitoredTrainingSession``, on every version.

A run that trains writes ``config.json`` and ``vocab.txt`` into
``--model-dir`` first (`awd_lm.config.modeldir`); from then on they are the
directory's configuration: ``--evaluate-only`` needs no ``--hparams``, and
a ``--preset``, ``--model`` or ``--hparams`` value that differs from
config.json is refused in one line (`distributed.cli.command_params`).

Differences from the single-process loop (`awd_lm.training.train`): each
window starts from a zero state (Estimator input pipelines carry no state
between batches), the window length is fixed (``bptt``), and the optimizer
is plain SGD with gradient clipping (NT-ASGD's trigger needs the loop's
validation schedule).

The pieces live in modules by job: `awd_lm.distributed.input_fn` (the
input pipeline), `awd_lm.distributed.model_fn` (``model_fn`` and the
mask-resampling hook), `awd_lm.distributed.cluster` (barriers,
MirroredStrategy), `awd_lm.corpus.runtime` (corpus and session
configuration, shared with the single-process loop); this module is the
command line (``awd-lm estimator``; ``python -m
tf1_awd_sparse.awd_lm.estimator`` is its old path). The pieces' 0.3.0
names here (``estimator.model_fn``, ``estimator.FLAGS``, ...) still work
with a DeprecationWarning until 0.6.0 (`base.legacy.MOVED_NAMES`).
"""
from __future__ import absolute_import, division, print_function

import sys

if __name__ == "__main__":  # the command line: quiet TensorFlow first
    import tf1_awd_sparse.base._quiet  # noqa: F401  pylint: disable=unused-import

from tf1_awd_sparse.base.compat import tf  # noqa: E402

from tf1_awd_sparse.base import _cli
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.distributed import cli, cluster
from tf1_awd_sparse.awd_lm.distributed import input_fn as _input_fn
# Under another name: this module's ``model_fn`` is a moved name (below).
from tf1_awd_sparse.awd_lm.distributed.model_fn import (
    model_fn as _model_fn)
from tf1_awd_sparse.base import legacy as _legacy
from tf1_awd_sparse.base.errors import Error

__all__ = ["ALTERNATIVE", "EstimatorUnavailableError", "require_estimator",
           "parse_args", "prepare", "execute", "run", "main"]

# 0.3.0's names of this module that other modules define (the shared
# command line's, the distributed floor's): they still import from here,
# with a warning naming their module, until legacy.NEXT_REMOVED_IN.
__getattr__ = _legacy.moved_names(__name__)

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


def parse_args(argv=None, extra_flags=()):
    """This program's command-line arguments (see ``--help``), checked
    (`command_line.parse_args` with this program's name and help).

    Args:
      argv: the arguments (default: ``sys.argv[1:]``).
      extra_flags: more ``(flag, argparse keywords)`` pairs, for programs
        that extend this command line (e.g. a test probe's own flag).

    Raises:
      SystemExit: (code 2, one line on stderr naming the flag) a bad flag.
    """
    return cli.parse_args(
        argv, extra_flags, prog="awd-lm estimator",
        description=__doc__)


def _run_config(args, params, probe, mirrored):
    """The Estimator's `RunConfig` for this task (``probe``: the
    `RunConfig` read from ``TF_CONFIG``)."""
    # A different graph seed per task: workers must not draw the same masks
    # (an evaluator has no id in the cluster).
    return tf.estimator.RunConfig(
        model_dir=args.model_dir,
        tf_random_seed=params.optimization.seed + (
            probe.global_id_in_cluster or 0),
        save_checkpoints_steps=args.save_steps, save_summary_steps=50,
        log_step_count_steps=50,
        session_config=runtime.session_config(
            args.threads, probe.task_type if probe.cluster_spec else None,
            probe.task_id, args.num_devices if mirrored else None),
        train_distribute=(cluster.mirrored_strategy(args.num_devices)
                          if mirrored else None))


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
      `write_model_dir` writes before the chief trains, else None). The
      parameters: ``--model-dir``'s config.json, else the flags.

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
    params, corpus = cli.command_params(args)
    probe = tf.estimator.RunConfig()
    task_type = probe.task_type
    mirrored = args.distribute == "mirrored"
    if (mirrored or args.evaluate_only) and probe.cluster_spec:
        raise ValueError("--distribute mirrored and --evaluate-only run in "
                         "one process; unset TF_CONFIG (got a cluster: %s)"
                         % (probe.cluster_spec.as_dict(),))
    n_tasks = probe.num_worker_replicas if probe.cluster_spec else 1
    config = _run_config(args, params, probe, mirrored)
    # The Estimator takes a plain dict; model_fn takes the hooks out of it
    # and checks the rest.
    estimator = tf.estimator.Estimator(
        _model_fn,
        params=dict(params.to_flat(), training_hooks=training_hooks),
        config=config)
    eval_input = _input_fn.make_input_fn(
        corpus.valid, params.optimization.eval_batch_size,
        params.optimization.bptt, repeat=False)
    setup = {"estimator": estimator, "eval_input": eval_input,
             "eval_steps": args.eval_steps, "train_spec": None,
             "model_dir": None}
    if args.evaluate_only:
        if not tf.train.latest_checkpoint(args.model_dir):
            raise ValueError("--model-dir: no checkpoint in %r"
                             % (args.model_dir,))
        cli.checkpoint_step(args.model_dir)   # a damaged one: one line
        return setup
    hooks = []
    if probe.cluster_spec and task_type != "ps":
        hooks.append(cluster.ClusterBarrierHook(
            n_tasks, args.train_steps, config.is_chief,
            timeout_secs=args.barrier_timeout))
    # Chief and workers take disjoint shares of the windows (ids 0..n-1).
    shard = (probe.global_id_in_cluster
             if probe.cluster_spec and task_type != "ps" else 0)
    train_input = _input_fn.make_input_fn(
        corpus.train, params.optimization.batch_size,
        params.optimization.bptt, n_tasks, shard)
    setup["train_spec"] = tf.estimator.TrainSpec(
        train_input, max_steps=args.train_steps, hooks=hooks)
    if config.is_chief:
        setup["model_dir"] = (args, params, corpus)
    return setup


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
        cli.write_model_dir(*setup["model_dir"])
    result = tf.estimator.train_and_evaluate(
        estimator, setup["train_spec"],
        tf.estimator.EvalSpec(setup["eval_input"], steps=setup["eval_steps"],
                              throttle_secs=0))
    metrics = result[0] if result else None
    if setup["model_dir"] is not None:
        cli.record_valid_ppl(setup["model_dir"][0].model_dir, metrics)
    return metrics


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
    cli.start_lifetime(args)
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
    # Parsed first, so that --help answers on every version.
    args = parse_args(argv, extra_flags)
    try:
        require_estimator()
    except EstimatorUnavailableError as e:
        _cli.fail(e)
    return cli.command_line(args, prepare, execute, make_hooks)


if __name__ == "__main__":  # as ``awd-lm estimator`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("estimator")
