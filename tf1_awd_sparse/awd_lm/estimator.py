"""The language model on TensorFlow's own distributed runtime (Estimator).

`model_fn` wraps `awd_lm.model.build_lm` (the same graph code as the
single-process loop) for `tf.estimator.Estimator`; `make_input_fn` feeds
fixed-length BPTT windows from a token stream, a disjoint share per worker.
The command line (``python -m awd_lm.estimator --help``) trains with
`tf.estimator.train_and_evaluate`, so the same command runs:

- in one process (no ``TF_CONFIG``);
- as a parameter-server cluster: every process gets ``TF_CONFIG`` naming the
  cluster and its own role (``ps``, ``chief``, ``worker``); variables go to
  the ps through ``tf.train.replica_device_setter``, dropout masks stay on
  each worker (see `mask_placement`);
- with ``--distribute mirrored``: `tf.contrib.distribute.MirroredStrategy`
  over ``--num-devices`` devices of this machine (CPU devices made with
  ``device_count`` when there is no GPU).

Differences from the single-process loop (`awd_lm.train`): each window
starts from a zero state (Estimator input pipelines carry no state between
batches), the window length is fixed (``bptt``), and the optimizer is plain
SGD with gradient clipping (NT-ASGD's trigger needs the loop's validation
schedule).
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import math
import signal
import sys
import time

import numpy as np
import tensorflow as tf
from tensorflow.python.util import deprecation

from tf1_awd_sparse import mask_placement
from tf1_awd_sparse.awd_lm import data, model, presets, synthetic

# Update ops of every replica's masks, read by MaskUpdateHook at begin():
# under MirroredStrategy Estimator keeps the first replica's hooks only.
MASK_UPDATE_OPS = "awd_lm_mask_update_ops"
DISTRIBUTE_CHOICES = ("none", "mirrored")


# ---------------------------------------------------------------------------
# Input.
# ---------------------------------------------------------------------------
def bptt_batches(ids, batch_size, bptt):
    """Inputs and targets of consecutive fixed-length BPTT windows.

    Args:
      ids: 1-D int array, a token stream.
      batch_size: parallel streams per batch.
      bptt: window length (time steps).

    Returns:
      (inputs, targets): int32 arrays ``[n_windows, batch_size, bptt]``;
      targets are the inputs shifted by one token. A final window shorter
      than ``bptt`` is dropped.

    Raises:
      ValueError: ``bptt`` < 1, or a stream too short for one window.
    """
    if bptt < 1:
        raise ValueError("bptt: expected an int >= 1, got %r" % (bptt,))
    streams = data.batchify(ids, batch_size)
    n_windows = (streams.shape[1] - 1) // bptt
    if n_windows < 1:
        raise ValueError("ids: %d tokens make streams of %d, too short for "
                         "one window of bptt %d" % (len(ids), streams.shape[1],
                                                    bptt))
    starts = np.arange(n_windows) * bptt
    offsets = starts[:, None] + np.arange(bptt)[None, :]
    inputs = streams[:, offsets].transpose(1, 0, 2)
    targets = streams[:, offsets + 1].transpose(1, 0, 2)
    return inputs, targets


def make_input_fn(ids, batch_size, bptt, num_shards=1, shard_index=0,
                  repeat=True):
    """An Estimator ``input_fn`` over the BPTT windows of ``ids``.

    Args:
      ids: 1-D int array, the token stream.
      batch_size, bptt: as for `bptt_batches`.
      num_shards, shard_index: this worker takes windows ``shard_index``,
        ``shard_index + num_shards``, ... (a disjoint share per worker).
      repeat: cycle forever (training) or one pass (evaluation).

    Returns:
      A function returning a ``tf.data.Dataset`` of
      ``({'inputs': [batch, bptt]}, targets [batch, bptt])``, int32.

    Raises:
      ValueError: bad shard arguments, or fewer windows than shards.
    """
    if not 0 <= shard_index < num_shards:
        raise ValueError("shard_index: expected 0 <= shard_index < "
                         "num_shards=%d, got %r" % (num_shards, shard_index))
    inputs, targets = bptt_batches(ids, batch_size, bptt)
    if len(inputs) < num_shards:
        raise ValueError("ids: %d windows cannot be shared by %d workers"
                         % (len(inputs), num_shards))

    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices(
            ({"inputs": inputs}, targets)).shard(num_shards, shard_index)
        return dataset.repeat() if repeat else dataset

    return input_fn


# ---------------------------------------------------------------------------
# Model.
# ---------------------------------------------------------------------------
def model_fn(features, labels, mode, params):
    """Estimator ``model_fn`` of the language model.

    Args:
      features: dict with 'inputs', int32 ``[batch, time]`` word ids.
      labels: int32 ``[batch, time]``, the next word of each input.
      mode: a ``tf.estimator.ModeKeys``.
      params: the model's parameter dict (`awd_lm.presets.params_for`), with
        'lr' and 'clip'; 'use_vd' makes the DropConnect masks variables
        resampled after every step (`MaskUpdateHook`); 'run_log' (optional)
        a JSON path for `RunLogHook`.

    Returns:
      ``tf.estimator.EstimatorSpec``: PREDICT gives 'logits'; EVAL the mean
      cross-entropy as loss with 'perplexity' as metric; TRAIN the
      regularized loss and a clipped SGD step.
    """
    if mode == tf.estimator.ModeKeys.PREDICT:
        # build_lm needs targets; predictions do not depend on them.
        labels = tf.zeros_like(features["inputs"])
    out = model.build_lm({"inputs": features["inputs"], "targets": labels},
                         mode, params)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode,
                                          predictions={"logits": out.logits})
    if mode == tf.estimator.ModeKeys.EVAL:
        mean_xent = tf.metrics.mean(out.xent)
        return tf.estimator.EstimatorSpec(
            mode, loss=out.xent,
            eval_metric_ops={"xent": mean_xent,
                             "perplexity": (tf.exp(mean_xent[0]),
                                            mean_xent[1])})
    for cell in out.cells:
        for op in cell.get_vd_update_op():
            tf.add_to_collection(MASK_UPDATE_OPS, op)
    sgd = dict(params, optimizer="sgd")
    train_op, _ = model.build_train_op(
        out.loss, params["lr"], sgd, tf.train.get_or_create_global_step())
    tf.summary.scalar("xent", out.xent)
    hooks = [MaskUpdateHook()]
    if params.get("run_log"):
        # After MaskUpdateHook: it sees each task's masks once resampled.
        hooks.append(RunLogHook(params["run_log"], out.loss))
    return tf.estimator.EstimatorSpec(mode, loss=out.loss, train_op=train_op,
                                      training_hooks=hooks)


class MaskUpdateHook(tf.train.SessionRunHook):
    """Resamples the dropout-mask variables after every training step.

    Runs the ops of the `MASK_UPDATE_OPS` collection (every replica's) in a
    separate ``session.run`` after each step, so a step always reads one
    mask, drawn before it started. Masks are local to the worker/replica
    (`mask_placement`), so this never touches another worker's mask.

    Args:
      every_n_steps: resample after every n-th step.
    """

    def __init__(self, every_n_steps=1):
        if every_n_steps < 1:
            raise ValueError("every_n_steps: expected an int >= 1, got %r"
                             % (every_n_steps,))
        self._every = every_n_steps
        self._ops = []
        self._steps = 0

    def begin(self):
        self._ops = tf.get_collection(MASK_UPDATE_OPS)

    def after_run(self, run_context, run_values):
        self._steps += 1
        if self._ops and self._steps % self._every == 0:
            run_context.session.run(self._ops)


# ---------------------------------------------------------------------------
# Cluster helpers.
# ---------------------------------------------------------------------------
def _counter(name):
    """An int64 scalar on the ps, in no collection: never saved, never
    initialized by a Scaffold (the chief initializes it)."""
    return tf.Variable(tf.zeros([], tf.int64), name=name, trainable=False,
                       collections=[])


class ClusterBarrierHook(tf.train.SessionRunHook):
    """Start and end barriers for asynchronous parameter-server training.

    Without them the chief may finish before a worker has joined (Estimator
    delays each worker 5 s or more), and a worker may still step after the
    chief wrote its final checkpoint. Every training task waits, after its
    session is up, until all have joined; and when the global step reaches
    ``max_steps`` it waits until all have finished stepping, so the chief's
    final checkpoint holds every task's steps. Counters live on the ps and
    are never saved. Each task stops right after the first of its steps
    that leaves the global step at ``max_steps`` or more, so the final step
    is at most ``max_steps + num_tasks - 1``. A barrier gives up after
    ``timeout_secs`` (a task that died must not hang the others). A chief
    restarted against the same ps finds the old counts and does not wait.

    Args:
      num_tasks: training tasks of the cluster (chief + workers).
      max_steps: the global step at which training stops.
      is_chief: whether this task initializes the counters.
      timeout_secs: how long a barrier waits.
    """

    def __init__(self, num_tasks, max_steps, is_chief, timeout_secs=120.0):
        self._num_tasks = int(num_tasks)
        self._max_steps = int(max_steps)
        self._is_chief = is_chief
        self._timeout = float(timeout_secs)
        self._ended = False

    def begin(self):
        with tf.device("/job:ps/task:0"), \
                tf.variable_scope("cluster_barrier"):
            self._joined = _counter("joined")
            self._finished = _counter("finished")
        self._init = tf.variables_initializer([self._joined, self._finished])
        self._ready = tf.is_variable_initialized(self._finished)
        self._join = self._joined.assign_add(1)
        self._finish = self._finished.assign_add(1)
        self._global_step = tf.train.get_global_step()

    def _wait(self, session, counter_value):
        deadline = time.time() + self._timeout
        while session.run(counter_value) < self._num_tasks:
            if time.time() > deadline:
                tf.logging.warning("cluster barrier: gave up after %.0f s",
                                   self._timeout)
                return
            time.sleep(0.05)

    def after_create_session(self, session, coord):
        deadline = time.time() + self._timeout
        if self._is_chief and not session.run(self._ready):
            session.run(self._init)
        while not session.run(self._ready) and time.time() < deadline:
            time.sleep(0.05)
        session.run(self._join)
        self._wait(session, self._joined)

    def after_run(self, run_context, run_values):
        # A fresh read each step: the value fetched with the step may be
        # stale by other tasks' steps, which would let this task overshoot.
        if self._ended:
            return
        session = run_context.session
        if session.run(self._global_step) >= self._max_steps:
            self._ended = True
            session.run(self._finish)
            self._wait(session, self._finished)
            run_context.request_stop()


class RunLogHook(tf.train.SessionRunHook):
    """Writes what one task did to a JSON file at the end of training:
    its own step count, the training losses of its steps, ``[time, own
    step]`` after ``warmup`` steps ('first') and after the last ('last'),
    for throughput, the device and a digest of each mask variable, and how
    often a mask changed between this task's own steps (it never should:
    only this task's update op writes its masks).

    Args:
      path: output JSON file.
      loss: the training loss tensor.
      warmup: steps excluded from the timing window.
    """

    def __init__(self, path, loss, warmup=3):
        self._path = path
        self._loss = loss
        self._warmup = warmup
        self._log = {"steps": 0, "losses": [], "foreign_mask_changes": 0}
        self._last_masks = None

    def begin(self):
        self._masks = mask_placement.mask_variables()
        self._mask_values = [_replica_values(v) for v in self._masks]

    def before_run(self, run_context):
        if self._mask_values and self._last_masks is not None:
            now = run_context.session.run(self._mask_values)
            if not _same(now, self._last_masks):
                self._log["foreign_mask_changes"] += 1
        return tf.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        # Listed after MaskUpdateHook, which has already resampled this
        # task's masks: remember them.
        if self._mask_values:
            self._last_masks = run_context.session.run(self._mask_values)
        self._log["steps"] += 1
        self._log["losses"].append(float(run_values.results))
        mark = [time.time(), self._log["steps"]]
        if self._log["steps"] == self._warmup:
            self._log["first"] = mark
        self._log["last"] = mark

    def end(self, session):
        masks = session.run(self._mask_values) if self._mask_values else []
        self._log["masks"] = [
            {"name": v.name, "devices": _devices(v),
             "digest": [float(np.sum(m * np.arange(1, m.size + 1).reshape(
                 m.shape))) for m in values],
             "kept_fraction": [float(m.mean()) for m in values]}
            for v, values in zip(self._masks, masks)]
        with open(self._path, "w") as f:
            json.dump(self._log, f)


def _replica_values(variable):
    """Read tensors of every replica's copy of ``variable`` (one when not
    replicated)."""
    devices = getattr(variable, "devices", None)
    if devices and len(devices) > 1:
        return [variable.get(device=d).read_value() for d in devices]
    return [tf.convert_to_tensor(variable)]


def _devices(variable):
    devices = getattr(variable, "devices", None)
    if devices and len(devices) > 1:
        return [variable.get(device=d).device for d in devices]
    return [variable.device]


def _same(a, b):
    return all(np.array_equal(x, y) for xs, ys in zip(a, b)
               for x, y in zip(xs, ys))


# ---------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------
def parse_hparams(text):
    """``'key=value,key=value'`` into a dict of presets.DEFAULTS keys, each
    value converted to the type of its default.

    Raises:
      ValueError: malformed item or unknown key (names it).
    """
    out = {}
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in presets.DEFAULTS:
            raise ValueError("--hparams: expected key=value with key one of "
                             "%s, got %r" % (", ".join(sorted(
                                 presets.DEFAULTS)), item))
        kind = type(presets.DEFAULTS[key])
        if kind is bool:
            out[key] = value.strip().lower() in ("1", "true", "yes")
        else:
            out[key] = kind(value)
    return out


# The command-line flags: (flag, argparse keywords).
FLAGS = (
    ("--model-dir", dict(required=True, help="checkpoints and summaries "
                         "(shared by every task of a cluster)")),
    ("--model", dict(choices=model.MODELS, default="awd")),
    ("--preset", dict(choices=sorted(presets.PRESETS), default="demo")),
    ("--hparams", dict(default="", help="overrides, e.g. "
                       "'emb_size=16,hidden_size=32'")),
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
    ("--run-log", dict(help="write this task's JSON run log here (steps, "
                       "losses, timing, masks)")),
    ("--evaluate-only", dict(action="store_true", help="evaluate the latest "
                             "checkpoint of --model-dir on the validation "
                             "split in this process (no TF_CONFIG)")),
    ("--max-lifetime", dict(type=float, default=0, help="end this process "
                            "after so many seconds (0: never); bounds a ps, "
                            "which never exits by itself")),
    ("--save-steps", dict(type=int, default=100,
                          help="checkpoint every N global steps")),
)


def parse_args(argv=None):
    """Command-line arguments (see ``--help``)."""
    p = argparse.ArgumentParser(
        prog="python -m awd_lm.estimator", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, kwargs in FLAGS:
        p.add_argument(flag, **kwargs)
    return p.parse_args(argv)


def load_stream(args, params):
    """(train ids, valid ids, vocabulary size) of --data-dir or the
    embedded corpus."""
    if args.data_dir:
        corpus = data.read_ptb(args.data_dir)
    else:
        corpus, _ = synthetic.hmm_corpus(
            seed=params["hmm_seed"], n_train=params["hmm_train"],
            n_valid=params["hmm_valid"], n_test=params["hmm_test"],
            n_states=params["hmm_states"], vocab_size=params["hmm_vocab"])
    return corpus.train, corpus.valid, len(corpus.vocab)


def session_config(threads, task_type=None, task_id=0, num_cpus=None):
    """ConfigProto for one task: thread counts, the CPU devices wanted and,
    in a cluster, device filters so a task talks only to the ps (and never
    waits for other workers)."""
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads,
                            allow_soft_placement=True)
    if num_cpus:
        config.device_count["CPU"] = num_cpus
    if task_type in ("chief", "master", "worker"):
        config.device_filters.extend(
            ["/job:ps", "/job:%s/task:%d" % (task_type, task_id)])
    return config


def mirrored_strategy(num_devices):
    """MirroredStrategy over the GPUs, or over CPU devices when there is
    no GPU."""
    from tensorflow.python.client import device_lib
    gpus = [d.name for d in device_lib.list_local_devices()
            if d.device_type == "GPU"]
    if gpus:
        return tf.contrib.distribute.MirroredStrategy(
            devices=gpus[:num_devices])
    return tf.contrib.distribute.MirroredStrategy(
        devices=["/cpu:%d" % i for i in range(num_devices)])


def run(argv=None):
    """Runs the command line: trains (and evaluates) with
    ``train_and_evaluate``, or with ``--evaluate-only`` evaluates the latest
    checkpoint of ``--model-dir`` in this process.

    Returns:
      dict of evaluation metrics (xent, perplexity, loss, global_step), or
      None for cluster tasks (their evaluation belongs to an evaluator).

    Raises:
      ValueError: bad arguments (named), a cluster with ``--distribute
        mirrored`` or ``--evaluate-only``, or no checkpoint to evaluate.
    """
    args = parse_args(argv)
    if args.max_lifetime > 0:
        # SIGALRM's default action ends the process, wherever it is blocked.
        signal.alarm(int(math.ceil(args.max_lifetime)))
    params = presets.params_for(args.preset, args.model,
                                parse_hparams(args.hparams))
    train_ids, valid_ids, vocab = load_stream(args, params)
    params.update(vocab_size=vocab, use_vd=args.use_vd, run_log=args.run_log)
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
    eval_input = make_input_fn(valid_ids, params["eval_batch_size"],
                               params["bptt"], repeat=False)
    if args.evaluate_only:
        if not tf.train.latest_checkpoint(args.model_dir):
            raise ValueError("--model-dir: no checkpoint in %r"
                             % (args.model_dir,))
        return estimator.evaluate(eval_input, steps=args.eval_steps)
    hooks = []
    if probe.cluster_spec and task_type != "ps":
        hooks.append(ClusterBarrierHook(
            n_tasks, args.train_steps, config.is_chief,
            timeout_secs=args.barrier_timeout))
    # Chief and workers take disjoint shares of the windows (ids 0..n-1).
    shard = (probe.global_id_in_cluster
             if probe.cluster_spec and task_type != "ps" else 0)
    train_input = make_input_fn(train_ids, params["batch_size"],
                                params["bptt"], n_tasks, shard)
    result = tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(train_input, max_steps=args.train_steps,
                               hooks=hooks),
        tf.estimator.EvalSpec(eval_input, steps=args.eval_steps,
                              throttle_secs=0))
    return result[0] if result else None


def main(argv=None):
    """The command line; prints the final evaluation as one JSON line."""
    # Estimator's progress (step, loss) without TF 1.13's deprecation notes.
    deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
    tf.logging.set_verbosity(tf.logging.INFO)
    metrics = run(argv)
    if metrics:
        print("eval: " + json.dumps({k: float(v) for k, v in
                                     sorted(metrics.items())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
