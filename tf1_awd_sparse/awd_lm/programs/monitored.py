"""The language model's distributed command line without ``tf.estimator``.

``python -m tf1_awd_sparse.awd_lm.monitored`` takes the flags of
``python -m tf1_awd_sparse.awd_lm.estimator`` and trains the same model
(`model_fn.train_step`), on the same input pipeline (`input_fn`), with the
same barriers and MirroredStrategy (`cluster`), through
``tf.train.MonitoredTrainingSession``. It runs on every supported version,
and is the one that runs on TensorFlow 2.16+, which has no ``tf.estimator``:

- in one process (no ``TF_CONFIG``): trains to ``--train-steps``, writing
  checkpoints and summaries to ``--model-dir``, then evaluates the final
  checkpoint on the validation split;
- as a parameter-server cluster: every process gets ``TF_CONFIG`` as for
  Estimator (jobs ``ps``, ``chief``, ``worker``; its own task). Each task
  starts its ``tf.train.Server``; a ps serves until it is killed (or
  ``--max-lifetime``); chief and workers train asynchronously with the
  variables on the ps (``tf.train.replica_device_setter``) and the dropout
  masks on their own device, each on a disjoint share of the windows and
  with its own graph seed; only the chief writes checkpoints. Cluster tasks
  do not evaluate (evaluate the final checkpoint with ``--evaluate-only``);
- with ``--distribute mirrored``: ``tf.distribute.MirroredStrategy`` over
  ``--num-devices`` devices of this machine; each replica takes a whole
  batch and the replicas' gradients are averaged (as under Estimator).

Every training task prints ``train: {...}`` (its own steps, the final
global step and its last loss) as one JSON line; one-process runs and
``--evaluate-only`` then print ``eval: {...}`` (xent, perplexity, loss,
global_step), as the Estimator command line does. Bad input exits with
status 2 and one line naming it.
"""
from __future__ import absolute_import, division, print_function

import collections
import json
import os
import sys
import time

if __name__ == "__main__":  # the command line: quiet TensorFlow first
    import tf1_awd_sparse.base._quiet  # noqa: F401  pylint: disable=unused-import

from tf1_awd_sparse.base import _cli
from tf1_awd_sparse.base.scalar_checks import check_positive_int
from tf1_awd_sparse.base.compat import nest, tf
from tf1_awd_sparse.awd_lm.distributed import cli
from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.graph import checkpoints
from tf1_awd_sparse.awd_lm.distributed.cluster import ClusterBarrierHook, mirrored_strategy
from tf1_awd_sparse.awd_lm.distributed.input_fn import make_input_fn
from tf1_awd_sparse.awd_lm.distributed.model_fn import eval_xent, train_step

__all__ = ["PROG", "LOG_FLAGS", "LOG_STEPS", "Task", "task_from_tf_config",
           "parse_args", "prepare", "execute", "evaluate_checkpoint", "run",
           "main"]

PROG = "awd-lm monitored"

#: One task of a cluster as ``TF_CONFIG`` describes it: ``cluster`` a
#: ``tf.train.ClusterSpec``; ``task_type`` 'ps', 'chief' or 'worker';
#: ``task_id`` its index in its job; ``num_tasks`` the training tasks
#: (chief + workers); ``global_id`` chief 0, worker i -> i + 1 (None for a
#: ps): its graph-seed offset and input shard.
Task = collections.namedtuple(
    "Task", "cluster task_type task_id num_tasks global_id is_chief")

_JOBS = ("ps", "chief", "worker")


def task_from_tf_config(text):
    """This process's task from a ``TF_CONFIG`` JSON string (the layout
    Estimator reads: ``{"cluster": {job: [host:port, ...]}, "task":
    {"type": job, "index": i}}``).

    Args:
      text: the JSON string, or None / empty for no cluster.

    Returns:
      a `Task`, or None when ``text`` is empty or names no cluster.

    Raises:
      ValueError: (naming ``TF_CONFIG``) not JSON, a job other than ps,
        chief and worker, not exactly one chief, no ps, or a task that is
        not in the cluster.
    """
    if not text:
        return None
    try:
        config = json.loads(text)
    except ValueError as e:
        raise ValueError("TF_CONFIG: not JSON (%s)" % e)
    if not isinstance(config, dict):
        raise ValueError("TF_CONFIG: expected a JSON object, got %r"
                         % (config,))
    cluster = config.get("cluster") or {}
    if not cluster:
        return None
    if not isinstance(cluster, dict) or not all(
            isinstance(v, list) for v in cluster.values()):
        raise ValueError("TF_CONFIG: 'cluster' must map each job to a list "
                         "of host:port, got %r" % (cluster,))
    unknown = sorted(set(cluster) - set(_JOBS))
    if unknown:
        raise ValueError("TF_CONFIG: jobs must be ps, chief and worker, got "
                         "%s" % ", ".join(unknown))
    if len(cluster.get("chief", [])) != 1 or not cluster.get("ps"):
        raise ValueError("TF_CONFIG: a cluster needs one chief and at least "
                         "one ps, got %r" % (cluster,))
    task = config.get("task") or {}
    task_type, task_id = task.get("type"), task.get("index", 0)
    if (task_type not in cluster or isinstance(task_id, bool)
            or not isinstance(task_id, int)
            or not 0 <= task_id < len(cluster[task_type])):
        raise ValueError("TF_CONFIG: task %r is not in the cluster %r"
                         % (task, cluster))
    global_id = {"ps": None, "chief": 0}.get(task_type, task_id + 1)
    return Task(tf.train.ClusterSpec(cluster), task_type, task_id,
                1 + len(cluster.get("worker", [])), global_id,
                task_type == "chief")


def parse_args(argv=None, extra_flags=()):
    """Command-line arguments: those of `distributed.cli` (see
    ``--help``), checked.

    Args:
      argv: the arguments (default: ``sys.argv[1:]``).
      extra_flags: more ``(flag, argparse keywords)`` pairs, for programs
        that extend this command line (e.g. a test probe's own flag).

    Returns:
      the ``argparse.Namespace``.

    Raises:
      SystemExit: (code 2, one line on stderr naming the flag) a bad flag.
    """
    args = cli.parse_args(argv, LOG_FLAGS + tuple(extra_flags), prog=PROG,
                          description=__doc__)
    if args.log_steps is None:
        args.log_steps = LOG_STEPS
    if args.log_steps < 0:
        _cli.fail("--log-steps must be >= 0, got %d" % args.log_steps)
    return args


# The monitored command line's own flag: how often training says how it
# goes (TensorFlow's own step log is hidden by the quiet logging).
# (None: not given; --evaluate-only refuses it, `cli.parse_args`.)
LOG_FLAGS = (("--log-steps", dict(
    type=int, default=None, help="print this task's training loss and "
    "perplexity every N of its steps on stderr (0: never; default 100)")),)
#: --log-steps when not given.
LOG_STEPS = 100


class _RunOnceHook(tf.compat.v1.train.SessionRunHook):
    """Runs ``op`` whenever a session is created (an input iterator's
    initializer: a recovered session starts its input again)."""

    def __init__(self, op):
        self._op = op

    def after_create_session(self, session, coord):
        session.run(self._op)


class _LastLossHook(tf.compat.v1.train.SessionRunHook):
    """Counts this task's steps and keeps its last loss, and the global
    step when its session ends."""

    def __init__(self, loss, log_steps=0, file=None):
        self._loss = loss
        self.log_steps, self.file = log_steps, file
        self.steps, self.loss, self.global_step = 0, None, None

    def begin(self):
        self._global_step = tf.train.get_global_step()

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self.steps += 1
        self.loss = float(run_values.results)
        if self.log_steps and self.steps % self.log_steps == 0:
            out = self.file if self.file is not None else sys.stderr
            out.write("train: step %d loss %.4f ppl %.2f\n" % (
                self.steps, self.loss, checkpoints.perplexity(self.loss)))
            out.flush()

    def end(self, session):
        self.global_step = int(session.run(self._global_step))


def _wait_for_chief(target, graph, ready_op, timeout, config):
    """Polls until the chief has initialized the variables on the ps, so
    that a worker's session is ready at once (its session manager would
    otherwise retry only every 30 s)."""
    deadline = time.time() + timeout
    with tf.Session(target, graph=graph, config=config) as session:
        while len(session.run(ready_op)) and time.time() < deadline:
            time.sleep(0.2)


def _build_training(params, corpus, args, task, strategy, make_hooks):
    """The training graph of one task (`prepare`'s 'graph' and friends)."""
    graph = tf.Graph()
    n_tasks = task.num_tasks if task else 1
    shard = task.global_id if task else 0
    input_fn = make_input_fn(corpus.train, params.optimization.batch_size,
                             params.optimization.bptt, n_tasks, shard)
    with graph.as_default():
        # A different graph seed per task: workers must not draw the same
        # masks (as the Estimator command line's tf_random_seed).
        tf.set_random_seed(params.optimization.seed + (shard or 0))
        hooks = []
        if strategy is not None:
            with strategy.scope():
                tf.train.get_or_create_global_step()
                iterator = strategy.make_input_fn_iterator(
                    lambda input_context: input_fn())
                features, labels = iterator.get_next()
                losses, train_ops = strategy.extended.call_for_each_replica(
                    lambda f, l: train_step(f, l, params),
                    args=(features, labels))
                loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, losses)
                train_op = strategy.group(train_ops)
            # 2.x's iterator has `initializer` (and deprecates initialize());
            # 1.13's only initialize(), a list of ops.
            init_input = getattr(iterator, "initializer", None)
            if init_input is None:
                init_input = tf.group(*nest.flatten(iterator.initialize()))
        else:
            device_fn = None
            if task is not None:
                device_fn = tf.train.replica_device_setter(
                    worker_device="/job:%s/task:%d" % (task.task_type,
                                                       task.task_id),
                    cluster=task.cluster)
            with tf.device(device_fn):
                tf.train.get_or_create_global_step()
                iterator = tf.data.make_initializable_iterator(input_fn())
                features, labels = iterator.get_next()
                loss, train_op = train_step(features, labels, params)
            init_input = iterator.initializer
        if task is not None:
            hooks.append(ClusterBarrierHook(
                n_tasks, args.train_steps, task.is_chief,
                timeout_secs=args.barrier_timeout))
        hooks.append(tf.train.StopAtStepHook(last_step=args.train_steps))
        hooks.append(_RunOnceHook(init_input))
        progress = _LastLossHook(loss, getattr(args, "log_steps", 0))
        hooks.append(progress)
        if make_hooks is not None:
            hooks.extend(make_hooks(loss))
        # What a worker polls for before its session (`_wait_for_chief`):
        # the chief's variables (its masks are its own local ones).
        ready = (tf.report_uninitialized_variables(tf.global_variables())
                 if task is not None and not task.is_chief else None)
    return dict(graph=graph, train_op=train_op, hooks=hooks,
                progress=progress, ready=ready)


def prepare(args, training_hooks=None, tf_config=None):
    """What a run needs, built and checked before anything is trained or
    written (the counterpart of `awd_lm.estimator.prepare`).

    Args:
      args: from `parse_args`.
      training_hooks: optional function ``loss -> list of SessionRunHooks``
        run in every training step (under MirroredStrategy ``loss`` is the
        mean over the replicas).
      tf_config: the ``TF_CONFIG`` JSON string (default: the environment's).

    Returns:
      dict with 'args', 'params', 'corpus', 'task' (a `Task` or None),
      'config' (the ``tf.ConfigProto``), and for training (not
      ``--evaluate-only``, not a ps) 'graph', 'train_op', 'hooks',
      'progress' and 'ready'.

    Raises:
      ValueError: what `awd_lm.estimator.prepare` refuses (flags that
        disagree with ``--model-dir``'s config.json, bad ``--hparams``, ``hidden_size`` with ``num_layers`` 1, an unreadable
        corpus or a split too short for one window, a cluster with
        ``--distribute mirrored`` or ``--evaluate-only``, no checkpoint to
        evaluate), and a bad ``TF_CONFIG`` (`task_from_tf_config`).
    """
    if tf_config is None:
        tf_config = os.environ.get("TF_CONFIG", "")
    task = task_from_tf_config(tf_config)
    # One source of parameters (config.json or the flags) and the same
    # whole-window input checks as the Estimator's.
    params, corpus = cli.command_params(args)
    mirrored = args.distribute == "mirrored"
    if (mirrored or args.evaluate_only) and task is not None:
        raise ValueError("--distribute mirrored and --evaluate-only run in "
                         "one process; unset TF_CONFIG (got a cluster: %s)"
                         % (task.cluster.as_dict(),))
    config = runtime.session_config(
        args.threads, task.task_type if task else None,
        task.task_id if task else 0, args.num_devices if mirrored else None)
    setup = dict(args=args, params=params, corpus=corpus, task=task,
                 config=config)
    if args.evaluate_only:
        if not tf.train.latest_checkpoint(args.model_dir):
            raise ValueError("--model-dir: no checkpoint in %r"
                             % (args.model_dir,))
        return setup
    if task is not None and task.task_type == "ps":
        return setup
    strategy = mirrored_strategy(args.num_devices) if mirrored else None
    setup.update(_build_training(params, corpus, args, task, strategy,
                                 training_hooks))
    return setup


def evaluate_checkpoint(model_dir, params, ids, eval_steps=None,
                        config=None):
    """Mean cross-entropy of the latest checkpoint of ``model_dir`` over
    the BPTT windows of ``ids`` (the Estimator's evaluation: every window
    from a zero state, each batch's mean weighted equally).

    Args:
      model_dir: a directory with checkpoints of this model.
      params: the model's `Params` (with 'vocab_size': `cli.command_params`'
        or `LanguageModel.params`).
      ids: 1-D int array, the token stream (the validation split).
      eval_steps: batches to evaluate (None: all).
      config: ``tf.ConfigProto`` of the session.

    Returns:
      dict with 'xent' and 'loss' (the mean cross-entropy, nats/token),
      'perplexity' (its exp) and 'global_step' (the checkpoint's).

    Raises:
      ValueError: ``eval_steps`` neither None nor a positive int, no
        checkpoint in ``model_dir``, or ``ids`` too short for one batch.
      checkpoints.CheckpointError: (a ValueError) its checkpoint cannot be
        read or does not fit the model (`cli.checkpoint_step`,
        `checkpoints.restore`): one line with the cause.
    """
    eval_steps = check_positive_int(eval_steps, "eval_steps",
                                    allow_none=True)
    path = tf.train.latest_checkpoint(model_dir)
    if not path:
        raise ValueError("model_dir: no checkpoint in %r" % (model_dir,))
    cli.checkpoint_step(model_dir)   # its files whole
    input_fn = make_input_fn(ids, params.optimization.eval_batch_size,
                             params.optimization.bptt, repeat=False)
    with tf.Graph().as_default():
        features, labels = tf.data.make_one_shot_iterator(
            input_fn()).get_next()
        xent = eval_xent(features, labels, params)
        global_step = tf.train.get_or_create_global_step()
        saver = tf.train.Saver()
        with tf.Session(config=config) as session:
            # A damaged or mismatched checkpoint: one CheckpointError line.
            checkpoints.restore(saver, session, path)
            session.run(tf.local_variables_initializer())
            total, batches = 0.0, 0
            while eval_steps is None or batches < eval_steps:
                try:
                    total += float(session.run(xent))
                except tf.errors.OutOfRangeError:
                    break
                batches += 1
            step = int(session.run(global_step))
    mean = total / batches
    return {"xent": mean, "loss": mean, "perplexity": checkpoints.perplexity(mean),
            "global_step": step}


def _train(setup, master, task):
    """Trains `prepare`'s graph with MonitoredTrainingSession until a hook
    stops it (``--train-steps``, or the cluster's end barrier)."""
    args = setup["args"]
    with setup["graph"].as_default():
        with tf.train.MonitoredTrainingSession(
                master=master, is_chief=task is None or task.is_chief,
                checkpoint_dir=args.model_dir, hooks=setup["hooks"],
                save_checkpoint_steps=args.save_steps,
                save_summaries_steps=50, log_step_count_steps=50,
                config=setup["config"]) as session:
            while not session.should_stop():
                session.run(setup["train_op"])


def execute(setup):
    """Runs what `prepare` built: a ps serves (until killed); a training
    task trains to ``--train-steps`` with ``MonitoredTrainingSession`` and
    prints its ``train:`` line; one process then evaluates the final
    checkpoint. ``--evaluate-only`` only evaluates.

    Returns:
      dict of evaluation metrics (xent, perplexity, loss, global_step), or
      None for cluster tasks (evaluate with ``--evaluate-only``).
    """
    args, task = setup["args"], setup["task"]
    if args.evaluate_only:
        return evaluate_checkpoint(args.model_dir, setup["params"],
                                   setup["corpus"].valid, args.eval_steps,
                                   setup["config"])
    master = ""
    if task is not None:
        server = tf.train.Server(task.cluster, job_name=task.task_type,
                                 task_index=task.task_id,
                                 config=setup["config"], start=True)
        if task.task_type == "ps":
            server.join()   # never returns; --max-lifetime ends a ps
            return None
        master = server.target
        if not task.is_chief:
            _wait_for_chief(master, setup["graph"], setup["ready"],
                            args.barrier_timeout,
                            setup["config"])
    progress = setup["progress"]
    saved_step = cli.checkpoint_step(args.model_dir)
    if saved_step >= args.train_steps:
        # As Estimator: a finished run is not stepped again (StopAtStepHook
        # would stop it only after one more step).
        tf.logging.info("Skipping training: the checkpoint in %s is at "
                        "step %d, --train-steps is %d", args.model_dir,
                        saved_step, args.train_steps)
        progress.global_step = saved_step
    else:
        if task is None or task.is_chief:
            cli.write_model_dir(args, setup["params"], setup["corpus"])
        _train(setup, master, task)
    print("train: " + json.dumps({
        "steps": progress.steps, "global_step": progress.global_step,
        "loss": progress.loss}))
    sys.stdout.flush()
    if task is not None:
        return None
    metrics = evaluate_checkpoint(args.model_dir, setup["params"],
                                  setup["corpus"].valid, args.eval_steps,
                                  setup["config"])
    # The directory's config.json then says how well the run did.
    cli.record_valid_ppl(args.model_dir, metrics)
    return metrics


def run(argv=None):
    """Runs the command line (`execute`'s work) in this process.

    Returns:
      dict of evaluation metrics (xent, perplexity, loss, global_step), or
      None for cluster tasks.

    Raises:
      ValueError: bad arguments (named, see `prepare`).
      SystemExit: (code 2) a bad flag value.
    """
    args = parse_args(argv)
    cli.start_lifetime(args)
    return execute(prepare(args))


def main(argv=None, extra_flags=(), make_hooks=None):
    """The command line: `awd_lm.estimator.main`'s arguments and flow
    (`distributed.cli.command_line`) with this module's `prepare` and
    `execute`; prints the final evaluation as one JSON line.

    Returns:
      0; bad input ends the process with status 2 and one line on stderr.
    """
    return cli.command_line(parse_args(argv, extra_flags), prepare,
                            execute, make_hooks)


if __name__ == "__main__":  # as ``awd-lm monitored`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("monitored")
