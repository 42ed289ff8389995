"""Training loop of the language model: stateful truncated BPTT, NT-ASGD,
early stopping, checkpoints, exact resume, TensorBoard summaries, JSON.

Exact resume: every epoch runs in a fresh copy of the graph whose random
ops are seeded by (seed, epoch) and starts from the previous epoch's
checkpoint, and the Python-side state (validation history, best loss,
BPTT-length generator) is a function of the saved state and the epoch.  A
run killed at any point and resumed with ``resume=True`` therefore redoes
the interrupted epoch exactly as an uninterrupted run would.

`Trainer` runs one model step by step (`Trainer.epoch` trains, validates
and checkpoints an epoch, `Trainer.finish` scores the best checkpoint);
each step returns a record (`awd_lm.records`) and prints nothing. `run`
drives a Trainer to the stopping rule and hands the records to a callback,
by default the training table (`records.TableLog`).
"""
import collections
import contextlib
import json
import math
import os
import shutil
import time

import numpy as np
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.layers.sparse import losses as sparse_losses
from tf1_awd_sparse.transforms import magnitude_pruning
from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.base.checkpoints import check_checkpoint
from tf1_awd_sparse.base.checks import (check_nonnegative_int,
                                        check_writable_dir)
from tf1_awd_sparse.awd_lm.corpus import data, runtime
from tf1_awd_sparse.awd_lm.graph import distill, model, ntasgd
from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.training import records
from tf1_awd_sparse.awd_lm.graph.checkpoints import (  # noqa: F401 (public)
    DIVERGED_LOSS, CheckpointError, diverged, perplexity, restore)
from tf1_awd_sparse.base.errors import Error

__all__ = ["STATE_FILE", "SUMMARY_FILE", "Graph", "DIVERGED_LOSS",
           "perplexity", "diverged", "TrainingDiverged", "window", "evaluate",
           "train_epoch", "ppl", "fresh_state", "stop_reason",
           "best_checkpoint", "CheckpointError", "RunDirError", "RUN_FILES",
           "check_run_dir", "Trainer", "run"]

STATE_FILE = "state.json"
SUMMARY_FILE = "summary.json"


class Graph(object):
    """The training/evaluation graph of one model, built once (with
    ``params['distill_weight'] > 0`` also its teacher, see `_distil`).

    Each epoch runs in `instance(seed)`: a copy of this graph (through its
    MetaGraphDef) whose random ops are reseeded from `seed`, so an epoch's
    dropout masks depend only on (seed, epoch), never on how many epochs
    ran earlier in the same process.  Feeds and fetches go by name, so they
    work on any instance.
    """

    def __init__(self, params, warm_names=None):
        """Builds placeholders, model, train op and savers.

        Args:
          params: the model's parameter dict (see `awd_lm.presets`).
          warm_names: names of the variables a warm-start checkpoint holds
            (`Trainer`'s ``init_from``); the warm-start Saver restores the
            model's variables among them. None: no warm start.
        """
        graph = tf.Graph()
        with graph.as_default():
            # A graph-level seed gives every random op its own stream
            # (seed2); `instance` then rewrites only the op seed per epoch.
            # Without it every op would draw the same sequence (the layers'
            # dropout masks alike).
            tf.set_random_seed(params["seed"])
            inputs = tf.placeholder(tf.int32, [None, None], "inputs")
            targets = tf.placeholder(tf.int32, [None, None], "targets")
            training = tf.placeholder_with_default(False, [], "training")
            lr = tf.placeholder(tf.float32, [], "learning_rate")
            state = tuple(
                tf.nn.rnn_cell.LSTMStateTuple(
                    tf.placeholder(tf.float32, [None, n], "c%d" % i),
                    tf.placeholder(tf.float32, [None, n], "h%d" % i))
                for i, n in enumerate(model.layer_sizes(params)))
            features = {"inputs": inputs, "targets": targets,
                        "state": state}
            # Steps of this run: quant_delay, the magnitude-pruning
            # schedule and the sparsity-loss ramp count them.
            step = (tf.train.get_or_create_global_step()
                    if model.needs_global_step(params) else None)
            out = model.build_lm(features, training, params)
            loss = self._distil(out, features, params)
            # A warm start restores the model's own variables that the
            # checkpoint holds (never optimizer state, ranges or the step).
            quant_vars = set(mask_placement.quant_variables())
            warm_vars = [v for v in tf.global_variables()
                         if v.op.name.startswith("lm/")
                         and not ntasgd.is_slot_name(v.op.name)
                         and v not in quant_vars
                         and v.op.name in set(warm_names or ())]
            ranges = model.quant_range_variables()
            train_op, self.optimizer = model.build_train_step(loss, lr,
                                                              params, step)
            self.ntasgd = hasattr(self.optimizer, "averaging")
            self.controller = _controller_ops(params)
            init = tf.group(tf.global_variables_initializer(),
                            tf.local_variables_initializer())
            self.saver_defs = [tf.train.Saver(max_to_keep=n).as_saver_def()
                               for n in (2, 1)]
            if warm_names is not None:
                self.saver_defs.append(tf.train.Saver(warm_vars)
                                       .as_saver_def())
            self.range_tags = ["%s/%s" % (tag, end) for tag, _, _ in ranges
                               for end in ("min", "max")]
            self.range_values = tf.stack(
                [v.read_value() for _, lo, hi in ranges for v in (lo, hi)]
            ).name if ranges else None
            self.sparsity = None
            report = model.sparsity_report(params)
            if report is not None:
                self.sparsity = {"global": report["global"].name,
                                 "layers": collections.OrderedDict(
                                     (k, v.name) for k, v in
                                     report["layers"].items())}
            self.meta_graph = tf.train.export_meta_graph()
        self.inputs, self.targets = inputs.name, targets.name
        self.training, self.lr = training.name, lr.name
        self.xent, self.train_op, self.init = out.xent.name, train_op.name, \
            init.name
        self.state = [t.name for s in state for t in s]
        self.final_state = [t.name for s in out.final_state for t in s]
        self.state_sizes = [dimension_value(t.shape[1])
                            for s in state for t in s]
        self.loss, self.logits = loss.name, out.logits.name
        self.averaging = (self.optimizer.averaging.name if self.ntasgd
                          else None)

    def _distil(self, out, features, params):
        """The training loss: ``out.loss`` and, with ``params[
        'distill_weight'] > 0``, the weighted distillation term of a
        teacher built here (`awd_lm.distill`) on the same windows. Sets the
        names of the teacher's state placeholders (``teacher_state``,
        carried by `train_epoch`), final state, logits, the term and the KL
        (empty / None without a teacher) and the def of the Saver that
        restores it from ``params['distill_from']`` every epoch (it is not
        in the model's checkpoints). Evaluation fetches (``xent``,
        ``final_state``) never compute the teacher."""
        self.teacher_state, self.teacher_final_state = [], []
        self.teacher_logits = self.distill_term = self.distill_kl = None
        self.teacher_saver_def = None
        if not distill.enabled(params):
            return out.loss
        teacher = distill.build_teacher(features["inputs"],
                                        features["targets"], params)
        term, kl = distill.distill_terms(
            out.logits, teacher.logits, params.get("distill_temperature", 1.0))
        self.teacher_saver_def = tf.train.Saver(
            teacher.variables, name="teacher_saver").as_saver_def()
        self.teacher_state = [t.name for s in teacher.state for t in s]
        self.teacher_final_state = [t.name for s in teacher.final_state
                                    for t in s]
        self.teacher_logits = teacher.logits.name
        self.distill_term, self.distill_kl = term.name, kl.name
        return out.loss + params["distill_weight"] * term

    def instance(self, seed):
        """(tf.Graph, last-epoch Saver, best Saver, warm-start Saver or None,
        teacher Saver or None) with reseeded random ops; the warm-start
        Saver (quantized models) restores a float checkpoint's model
        variables, the teacher Saver the teacher's (``distill_from``)."""
        meta = tf.MetaGraphDef()
        meta.CopyFrom(self.meta_graph)
        for node in meta.graph_def.node:
            if "seed" in node.attr and "seed2" in node.attr:
                node.attr["seed"].i = seed
        graph = tf.Graph()
        with graph.as_default():
            tf.train.import_meta_graph(meta)
            savers = [tf.train.Saver(saver_def=d) for d in self.saver_defs]
            teacher = (tf.train.Saver(saver_def=self.teacher_saver_def)
                       if self.teacher_saver_def is not None else None)
        graph.finalize()
        return graph, savers[0], savers[1], (savers[2] if len(savers) > 2
                                             else None), teacher

    def quant_ranges(self, sess):
        """{'<layer>/<cell>/<tensor>/min|max': value} of a quantized model's
        learned ranges ({} for a float model)."""
        if self.range_values is None:
            return {}
        return dict(zip(self.range_tags, sess.run(self.range_values).tolist()))

    def zero_state(self, batch, teacher=False):
        """Numpy zeros for every state placeholder (``teacher``: the
        teacher's, [] without one)."""
        if teacher and not self.teacher_state:
            return []
        return [np.zeros((batch, n), np.float32) for n in self.state_sizes]

    def feed(self, x, y, state, extra=None):
        """Feed dict for inputs, targets and the flat list of state arrays."""
        feed = {self.inputs: x, self.targets: y}
        feed.update(zip(self.state, state))
        feed.update(extra or {})
        return feed


class TrainingDiverged(FloatingPointError, Error):
    """Training that diverged (see `diverged`): the loss of a training step
    or the validation loss after an epoch. Nothing of that epoch is saved:
    the checkpoints of the previous epochs and state.json are kept.

    Attributes:
      epoch: the epoch (1-based); step, steps: the step of the epoch
        (1-based) and the epoch's steps, None for a validation loss
        (after the epoch's last step).
      what: 'training loss' or 'validation loss'; loss: its value.
    """

    def __init__(self, what, loss, epoch, step=None, steps=None, kept=""):
        self.what, self.loss, self.epoch = what, float(loss), epoch
        self.step, self.steps, self.kept = step, steps, kept
        where = ("at epoch %d, step %d of %d" % (epoch, step, steps)
                 if step is not None else "after the last step of epoch %d"
                 % epoch)
        super(TrainingDiverged, self).__init__(
            "training diverged %s: %s %r nats per token (perplexity inf); "
            "lower the learning rate (lr) or the clip%s" % (
                where, what, self.loss, "; " + kept if kept else ""))

    def keeping(self, kept):
        """The same error, saying what was kept (e.g. the checkpoints)."""
        return TrainingDiverged(self.what, self.loss, self.epoch, self.step,
                                self.steps, kept)


def window(stream, start, n):
    """(inputs, targets) of the BPTT window [start, start + n) of a stream."""
    return stream[:, start:start + n], stream[:, start + 1:start + n + 1]


def evaluate(sess, g, stream, bptt):
    """Mean cross-entropy (nats/token) of a batchified stream, state carried.

    Args:
      sess: session of `g`.
      g: Graph.
      stream: int32 [batch, length] from `data.batchify`.
      bptt: window length.
    Returns:
      float (a Python float: summed in float64 whatever numpy's promotion
      rules; NEP 50 would keep ``0.0 + np.float32`` in float32).
    """
    state = g.zero_state(stream.shape[0])
    total, count = 0.0, 0
    fetches = [g.xent] + g.final_state
    for start, n in data.bptt_windows(stream.shape[1] - 1, bptt):
        res = sess.run(fetches, g.feed(*window(stream, start, n),
                                       state=state))
        # A Python float: numpy 2 keeps float32 * int a float32 (which
        # json cannot write, and which would sum in float32).
        total += float(res[0]) * n
        count += n
        state = res[1:]
    return total / count


def train_epoch(sess, g, stream, params, epoch, progress=None):
    """One pass of stateful truncated BPTT over the training stream.

    The window lengths come from a generator seeded by (seed, epoch), and
    the learning rate of a window is ``lr * length / bptt``.

    With a teacher (`Graph`), its state is carried across the windows
    like the student's and reset with it at the epoch's start.

    Returns:
      (mean training cross-entropy, tokens per second, extra): Python
      floats, the loss summed in float64 (see `evaluate`); ``extra`` is {}
      or, with a teacher, ``{"distill_kl": mean KL(teacher || student) at
      the temperature, nats per token}``.

    Raises:
      TrainingDiverged: a step's loss is NaN, infinite or above
        `DIVERGED_LOSS` (the step is named).
    """
    rng = np.random.RandomState([params["seed"], epoch])
    windows = data.bptt_windows(stream.shape[1] - 1, params["bptt"], rng,
                                variable=params["variable_bptt"])
    state = g.zero_state(stream.shape[0])
    teacher = g.zero_state(stream.shape[0], teacher=True)
    fetches = [g.train_op, g.xent] + g.final_state + g.teacher_final_state
    if g.distill_kl is not None:
        fetches.append(g.distill_kl)
    split = 2 + len(state)
    total, count, start_time, kl = 0.0, 0, time.time(), 0.0
    bar = progress(total=stream.size, desc="epoch %d" % epoch) \
        if progress else None
    for step, (start, n) in enumerate(windows, 1):
        lr = params["lr"] * n / float(params["bptt"])
        extra = {g.lr: lr, g.training: True}
        extra.update(zip(g.teacher_state, teacher))
        res = sess.run(fetches, g.feed(*window(stream, start, n),
                                       state=state, extra=extra))
        if diverged(res[1]):
            raise TrainingDiverged("training loss", res[1], epoch, step,
                                   len(windows))
        total += float(res[1]) * n  # a Python float, as in evaluate
        count += n
        state = res[2:split]
        teacher = res[split:split + len(teacher)]
        if g.distill_kl is not None:
            kl += float(res[-1]) * n
        if bar is not None:
            rate = count * stream.shape[0] / max(time.time() - start_time,
                                                 1e-9)
            bar.update(n * stream.shape[0])
            bar.set_postfix(tok_s="%.0f" % rate, loss="%.3f" % res[1],
                            ppl="%.1f" % ppl(res[1]))
    if bar is not None:
        bar.close()
    elapsed = max(time.time() - start_time, 1e-9)
    extra = {} if g.distill_kl is None else {"distill_kl": kl / count}
    return total / count, count * stream.shape[0] / elapsed, extra


def _write_json(path, obj):
    """Writes ``obj`` to ``path`` atomically (a kill leaves the old file).
    Its numbers must be Python ints / floats: ``json`` rejects numpy
    scalars (a float32 under numpy 2's promotion rules), so the values
    are converted where they are computed."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _scalars(writer, step, **values):
    writer.add_summary(tf.Summary(value=[
        tf.Summary.Value(tag=k, simple_value=float(v))
        for k, v in sorted(values.items())]), step)
    writer.flush()


def ppl(loss):
    """Perplexity of a mean cross-entropy in nats."""
    return float(math.exp(min(loss, 700)))


def fresh_state(params):
    """The loop's Python-side state before epoch 1."""
    return {"epoch": 0, "best_valid": None, "best_epoch": 0,
            "since_best": 0, "val_history": [], "averaging_epoch": None,
            "epochs": [], "train_seconds": 0.0, "done": False,
            "params": params}


def stop_reason(state, params):
    """Why training stops after the last finished epoch, or None.

    The rule, the same for every model: stop when validation has not
    improved for `patience` epochs (counted from the best epoch, or from
    the epoch NT-ASGD started averaging if that is later), or after
    `max_epochs`.
    """
    if state["since_best"] >= params["patience"]:
        return "no improvement for %d epochs" % params["patience"]
    if state["epoch"] >= params["max_epochs"]:
        return "max epochs (%d)" % params["max_epochs"]
    return None


#: A model's name in logs and tables (`presets.label`, kept here by name).
label = presets.label


def best_checkpoint(run_dir):
    """Prefix of the best-validation checkpoint `run` keeps in run_dir."""
    return os.path.join(run_dir, "best", "model.ckpt")


class RunDirError(ValueError, Error):
    """A run directory that already holds a run, given without resume or
    overwrite (or with both); the message names the file found, resume
    and a new directory (never the way that deletes the run)."""


# The files that mark a directory as holding a training run.
RUN_FILES = (STATE_FILE, SUMMARY_FILE, "last", "best")


def check_run_dir(run_dir, resume=False, overwrite=False, names=RUN_FILES,
                  ways=("resume=True", "overwrite=True"), label="run_dir"):
    """Refuses to start a fresh run over ``run_dir``'s earlier one: the one
    check behind `run` and the command line's ``--resume`` / ``--overwrite``.

    Args:
      run_dir: the directory (need not exist; it must be one that can be
        made and written, `checks.check_writable_dir`).
      resume, overwrite: bools; with either a directory holding a run is
        accepted.
      names: the files and folders in run_dir that mark a run.
      ways: how the caller spells (resume, overwrite) in the message.
      label: how the caller names run_dir in the message (e.g. ``--out``).

    Raises:
      RunDirError: both resume and overwrite, or a file of ``names`` in
        run_dir without either; a run_dir that is (or lies under) a file,
        or where no file can be written.
    """
    try:
        check_writable_dir(run_dir, "%s %s" % (label, run_dir))
    except ValueError as e:
        raise RunDirError(str(e))
    if resume and overwrite:
        raise RunDirError("%s continues the run in %s %s: leave %s out, "
                          "which would delete it" % (ways[0], label, run_dir,
                                                     ways[1]))
    if resume or overwrite:
        return
    for name in names:
        path = os.path.join(run_dir, name)
        if os.path.exists(path):
            # Never the way that deletes it: the run may be a trained model.
            raise RunDirError("%s %s holds a run (%s): continue it with %s, "
                              "or give a new %s for a new run"
                              % (label, run_dir, path, ways[0], label))


def _readable(prefix, what):
    """The variable names of the checkpoint ``prefix``, sorted.

    Raises:
      CheckpointError: it cannot be read (named with ``what``)."""
    try:
        reader = check_checkpoint(prefix, what)
    except ValueError as e:
        raise CheckpointError(str(e))
    return sorted(reader.get_variable_to_shape_map())


class Trainer(object):
    """One model's training run in ``run_dir``, one step at a time.

    `epoch` trains, validates and checkpoints the next epoch and returns
    its record; `finish` scores the best checkpoint and returns the run's
    summary. Nothing is printed: `run` hands the records to a callback
    (`records` formats them). Checkpoints (last/, best/), TensorBoard
    events, state.json and summary.json are written as before.

    Args:
      corpus: data.Corpus.
      params: full parameter dict (`awd_lm.presets.params_for`); checked
        with `presets.check_params`.
      run_dir: the run's directory.
      resume: continue from run_dir's state.json if present.
      overwrite: start over: the files of an earlier run in run_dir
        (last/, best/, state.json, summary.json, events) are deleted
        first, and nothing else. Without resume or overwrite a run_dir
        holding a run is refused (`check_run_dir`).
      threads: intra-op threads (0 lets TensorFlow choose).
      init_from: checkpoint prefix of a run of the same model whose model
        variables start this run (see `run`).
      progress: None or a tqdm-like class for per-epoch progress bars.

    Raises:
      ValueError: invalid params (named), resume with changed parameters.
      CheckpointError: an unreadable state.json, init_from or
        distill_from checkpoint.
      data.DataError: a split too short for its batch size.
    """

    def __init__(self, corpus, params, run_dir, resume=False, threads=0,
                 init_from=None, progress=None):
        params = presets.check_params(dict(params,
                                           vocab_size=len(corpus.vocab)))
        warm_names = None
        if init_from is not None:
            warm_names = _readable(init_from, "init_from")
        if params.get("sparsity") and params.get("sparsity_weight") is None:
            # The KL / L0 term is a sum over weights; the data term a mean
            # over tokens: weigh by 1 / tokens (the ELBO per token).
            params["sparsity_weight"] = 1.0 / len(corpus.train)
        # The model's own rules (e.g. distill_weight needs distill_from)
        # before anything is deleted.
        params = model.check_params(params)
        if distill.enabled(params):
            _readable(params["distill_from"], "distill_from")
        self.params, self.run_dir = params, run_dir
        self.corpus, self.init_from, self.progress = corpus, init_from, \
            progress
        self.model = label(params)
        # Batched before anything is deleted: a split too short for its
        # batch size leaves an earlier run's files alone.
        self.streams = {
            split: data.batchify(getattr(corpus, split), params[key],
                                 "%s split" % split, "params[%r]" % key)
            for split, key in runtime.BATCH_KEYS}
        threads = check_nonnegative_int(threads, "threads")
        self.config = runtime.session_config(
            threads, inter_op_threads=min(threads, 2))
        # Its own inter-op pool: runs side by side in one process (the
        # compression pipeline's) otherwise queue on the first session's
        # global pool (one thread with threads=1: one core for all).
        self.config.use_per_session_threads = True
        self.state, self.resumed = self._load_state(resume)
        os.makedirs(run_dir, exist_ok=True)
        self.last_prefix = os.path.join(run_dir, "last", "model.ckpt")
        self.best_prefix = best_checkpoint(run_dir)
        # A resumed run that has finished trains and scores nothing: its
        # graph is built only if asked for (`graph`), so resuming a
        # pipeline of finished stages costs no graph construction.
        self._warm_names = warm_names
        self._graph = (None if self.resumed and self.state["done"]
                       else Graph(params, warm_names))
        self._writer = tf.summary.FileWriter(run_dir)

    @property
    def graph(self):
        """The run's `Graph` (built here on first use when the run was
        resumed finished)."""
        if self._graph is None:
            self._graph = Graph(self.params, self._warm_names)
        return self._graph

    def _load_state(self, resume):
        """(state, resumed): run_dir's state.json, or a fresh state after
        deleting an earlier run's files."""
        path = os.path.join(self.run_dir, STATE_FILE)
        if not (resume and os.path.exists(path)):
            _clear_run(self.run_dir)
            return fresh_state(self.params), False
        try:
            with open(path) as f:
                state = json.load(f)
            old = state["params"]
        except (ValueError, KeyError, TypeError) as e:
            raise CheckpointError("%s: unreadable run state (%s: %s); "
                                  "nothing was deleted"
                                  % (path, type(e).__name__, e))
        # Only max_epochs may change: it extends or shortens a run (a
        # quantized run's max_epochs is its quant_epochs).
        # A parameter the run's version did not have yet counts as its
        # default (a run resumes under a version that added parameters).
        changed = sorted(k for k in set(self.params) | set(old)
                         if self.params.get(k) != old.get(
                             k, presets.DEFAULTS.get(k))
                         and k not in ("max_epochs", "quant_epochs"))
        if changed:
            raise ValueError("resume: %s was made with different parameters "
                             "(%s): resume it with its own, or train these "
                             "in a new directory; nothing was changed"
                             % (self.run_dir, ", ".join(changed)))
        if old["max_epochs"] != self.params["max_epochs"]:
            old["max_epochs"] = self.params["max_epochs"]
            if state["done"] and stop_reason(state, self.params) is None:
                state["done"] = False  # extended past its old maximum
        return state, True

    def opening_record(self):
        """The 'resume' record of a resumed run, the 'start' record of a run
        with no finished epoch, else None."""
        if self.resumed:
            return {"event": "resume", "model": self.model,
                    "run_dir": self.run_dir, "epoch": self.state["epoch"]}
        if self.state["epoch"] == 0 and not self.state["done"]:
            return {"event": "start", "model": self.model}
        return None

    def finished(self):
        """Whether the stopping rule ended the run (or it was scored)."""
        return (self.state["done"]
                or stop_reason(self.state, self.params) is not None)

    def epoch(self):
        """Trains, validates and checkpoints the next epoch.

        Every epoch runs in a fresh instance of the graph seeded by (seed,
        epoch), starting from the previous epoch's checkpoint (or the
        initializer / ``init_from`` for epoch 1), so that a resumed run
        redoes an interrupted epoch exactly.

        Returns:
          the 'epoch' record (`awd_lm.records`), also appended to the
          state's epochs.

        Raises:
          CheckpointError: the previous epoch's checkpoint is unreadable.
          TrainingDiverged: (a FloatingPointError) the training loss of a
            step or the validation loss diverged; the epoch saves nothing
            (checkpoints, state.json), the message says what is kept.
        """
        g, state, params = self.graph, self.state, self.params
        epoch = state["epoch"] + 1
        start = time.time()
        graph, last_saver, best_saver, warm_saver, teacher_saver = \
            g.instance(params["seed"] * 1009 + epoch)
        with tf.Session(graph=graph, config=self.config) as sess:
            if epoch == 1:
                self._start(sess, warm_saver)
            else:
                # The checkpoint of the last finished epoch by name: a kill
                # during a later save may have moved "latest" already.
                restore(last_saver, sess,
                        "%s-%d" % (self.last_prefix, epoch - 1))
            if teacher_saver is not None:
                # Not in the model's checkpoints: restored every epoch.
                restore(teacher_saver, sess, params["distill_from"])
            if g.averaging is not None:
                g.optimizer.set_history(state["val_history"])
            try:
                train_loss, tok_s, distilled = train_epoch(
                    sess, g, self.streams["train"], params, epoch,
                    self.progress)
                record = self.validate(sess, best_saver, epoch)
            except TrainingDiverged as e:
                raise e.keeping(self._kept(epoch))
            if record["best"]:
                state.update(best_valid=record["valid_loss"],
                             best_epoch=epoch, since_best=0)
            elif epoch >= params.get("select_from_epoch", 1):
                # Patience counts from the first selectable epoch.
                state["since_best"] += 1
            if record["averaging_started"]:
                # The trigger fires on a stalled loss, when patience is
                # nearly spent: the averaged weights get their own.
                state.update(averaging_epoch=epoch, since_best=0)
            seconds = time.time() - start
            record.update(model=self.model, epoch=epoch,
                          train_loss=train_loss, train_ppl=ppl(train_loss),
                          tokens_per_s=tok_s, seconds=seconds,
                          lr=params["lr"], **distilled)
            if g.controller is not None and "sparsity" in record:
                record.update(self._control(sess, epoch, record["sparsity"]))
            state["epochs"].append(record)
            ranges = g.quant_ranges(sess)
            state["epoch"] = epoch
            state["train_seconds"] += seconds
            # Checkpoint first, state second: a kill in between redoes the
            # epoch from the previous checkpoint, which is still consistent.
            self.checkpoint(sess, last_saver, epoch)
        _write_json(os.path.join(self.run_dir, STATE_FILE), state)
        self._write_summaries(record, ranges)
        return dict(record, event="epoch")

    def _start(self, sess, warm_saver):
        """Epoch 1's start: the initializer, then ``init_from``'s weights;
        with ``average_from_start`` (and NT-ASGD) averaging is on from the
        first step, so that a fine-tuning from averaged weights keeps
        averaging instead of dropping the average's gain."""
        g = self.graph
        sess.run(g.init)
        if self.init_from is not None:
            restore(warm_saver, sess, self.init_from)
        if self.params.get("average_from_start") and g.averaging is not None:
            sess.run(g.optimizer.trigger_op().name)
            self.state["averaging_epoch"] = 1

    def _control(self, sess, epoch, measured):
        """The sparsity controller after an epoch: raises the KL / L0
        weight's scale while ``measured`` lags the schedule (the cubic
        ramp to ``target_sparsity`` over the run's ``max_epochs``; rule:
        `sparse_layers.losses.controlled_weight_scale`). Returns the
        record's fields: the scheduled sparsity and the new scale."""
        params, ops = self.params, self.graph.controller
        scheduled = float(magnitude_pruning.gradual_sparsity(
            epoch, 0, max(1, params["max_epochs"]),
            params["target_sparsity"]))
        scale = float(sess.run(ops["scale"]))
        new = sparse_losses.controlled_weight_scale(
            scale, min(1.0, max(0.0, measured)), scheduled,
            params["sparsity_controller"])
        if new != scale:
            sess.run(ops["assign"], {ops["value"]: new})
        return {"scheduled_sparsity": scheduled,
                "sparsity_weight_scale": new}

    def _kept(self, epoch):
        """What a diverged epoch leaves: the previous epochs' checkpoints."""
        if epoch == 1:
            return "no checkpoint was written"
        return ("kept: the checkpoint of epoch %d (%s-%d) and the best "
                "(%s, epoch %d)" % (epoch - 1, self.last_prefix, epoch - 1,
                                    self.best_prefix,
                                    self.state["best_epoch"]))

    def validate(self, sess, best_saver, epoch):
        """Validates the weights of the epoch just trained: NT-ASGD's
        averaged weights once it averages. A new best validation loss saves
        the best checkpoint (of the weights validated); before averaging,
        the loss feeds NT-ASGD's trigger. Epochs before
        ``params['select_from_epoch']`` (e.g. while a pruning schedule or a
        sparsity-loss ramp still runs) are never the best. With
        ``params['select_min_sparsity']``, an epoch whose weights reach that
        fraction of zeros (within 0.01) beats every epoch that does not,
        whatever its loss; among either kind the lower loss wins.

        Returns:
          dict with valid_loss, valid_ppl, best (bool), averaged (bool),
          averaging_started (bool) and, for a sparse or pruned model,
          sparsity (of the weights validated).

        Raises:
          TrainingDiverged: the validation loss diverged (`diverged`);
            the best checkpoint is not saved.
        """
        g, state = self.graph, self.state
        averaged = bool(g.averaging is not None and sess.run(g.averaging))
        # Without averaging, the raw weights are the ones validated.
        weights = (g.optimizer.averaged_weights(sess) if averaged
                   else contextlib.ExitStack())
        extra = {}
        with weights:
            valid_loss = evaluate(sess, g, self.streams["valid"],
                                  self.params["bptt"])
            if diverged(valid_loss):
                raise TrainingDiverged("validation loss", valid_loss, epoch)
            reached = True
            if g.sparsity:
                extra["sparsity"] = float(sess.run(g.sparsity["global"]))
                reached = extra["sparsity"] >= self.params.get(
                    "select_min_sparsity", 0.0) - 0.01
            best = bool(epoch >= self.params.get("select_from_epoch", 1)
                        and _is_best(state, valid_loss, reached))
            if best:
                best_saver.save(sess, self.best_prefix)
                state["best_reached"] = reached
        started = bool(not averaged and g.averaging is not None
                       and g.optimizer.observe(sess, valid_loss))
        if g.averaging is not None:
            state["val_history"] = list(g.optimizer.history)
        else:
            state["val_history"].append(valid_loss)
        return dict(extra, valid_loss=valid_loss, valid_ppl=ppl(valid_loss),
                    best=best, averaged=averaged, averaging_started=started)

    def checkpoint(self, sess, last_saver, epoch):
        """Writes the epoch's checkpoint to last/ (the previous epoch's is
        kept until the next save).

        Returns:
          the checkpoint prefix written.
        """
        # A Saver per epoch: tell it the checkpoints on disk (only those:
        # the Saver pairs paths with their files' times) so that
        # max_to_keep deletes the one before the previous.
        last_saver.recover_last_checkpoints([
            prefix for prefix in ("%s-%d" % (self.last_prefix, e)
                                  for e in (epoch - 2, epoch - 1) if e > 0)
            if tf.gfile.Exists(prefix + ".index")])
        return last_saver.save(sess, self.last_prefix, global_step=epoch)

    def _write_summaries(self, record, ranges):
        """The epoch's TensorBoard scalars (and learned quantization
        ranges, min and max)."""
        _scalars(self._writer, record["epoch"],
                 train_loss=record["train_loss"],
                 valid_loss=record["valid_loss"],
                 train_ppl=record["train_ppl"], valid_ppl=record["valid_ppl"],
                 learning_rate=record["lr"],
                 averaging=float(record["averaged"]),
                 tokens_per_s=record["tokens_per_s"],
                 **{k: record[k] for k in ("sparsity", "distill_kl")
                    if k in record})
        if ranges:
            _scalars(self._writer, record["epoch"],
                     **{"quant_range/" + k: v for k, v in ranges.items()})

    def finish(self, extra=None):
        """Scores the best checkpoint on the test split (once per run) and
        writes summary.json.

        Args:
          extra: dict merged into the summary.

        Returns:
          the summary dict (see `run`).

        Raises:
          CheckpointError: the best checkpoint is unreadable.
        """
        state = self.state
        if not state["done"]:
            g = self.graph
            state["stop_reason"] = stop_reason(state, self.params)
            graph, _, best_saver, _, _ = g.instance(
                self.params["seed"] * 1009)
            with tf.Session(graph=graph, config=self.config) as sess:
                restore(best_saver, sess, self.best_prefix)
                state["quant_ranges"] = g.quant_ranges(sess) or None
                bptt = self.params["bptt"]
                state["test_loss"] = evaluate(sess, g, self.streams["test"],
                                              bptt)
                state["best_valid_check"] = evaluate(
                    sess, g, self.streams["valid"], bptt)
                if g.sparsity:
                    values = sess.run(g.sparsity)
                    state["sparsity_report"] = {
                        "global": float(values["global"]),
                        "layers": collections.OrderedDict(
                            (k, float(v)) for k, v in
                            values["layers"].items())}
            state["done"] = True
            _write_json(os.path.join(self.run_dir, STATE_FILE), state)
        self._writer.close()
        summary = {
            "model": self.model, "corpus": self.corpus.name,
            "params": self.params, "epochs": state["epochs"],
            "epochs_run": state["epoch"], "best_epoch": state["best_epoch"],
            "best_valid_ppl": ppl(state["best_valid"]),
            "test_ppl": ppl(state["test_loss"]),
            "stop_reason": state["stop_reason"],
            "averaging_epoch": state["averaging_epoch"],
            "train_seconds": state["train_seconds"],
            "unk_counts": self.corpus.unk_counts,
            "sparsity_report": state.get("sparsity_report"),
            "quant": bool(self.params.get("quant")),
            "init_from": self.init_from,
            "quant_ranges": state.get("quant_ranges"),
        }
        summary.update(extra or {})
        _write_json(os.path.join(self.run_dir, SUMMARY_FILE), summary)
        return summary


def run(corpus, params, run_dir, resume=False, log=print, progress=None,
        threads=0, extra=None, init_from=None, on_record=None,
        overwrite=False, produced=None):
    """Trains one model until the stopping rule, then scores its best checkpoint.

    Args:
      corpus: data.Corpus.
      params: full parameter dict (`awd_lm.presets.params_for`).
      run_dir: directory for checkpoints (last/, best/), TensorBoard events,
        state.json and summary.json.
      resume: continue from run_dir's state.json if present.
      overwrite: start over: the files of an earlier run in run_dir
        (last/, best/, state.json, summary.json, events) are deleted
        first, and nothing else. Without resume or overwrite a run_dir
        holding a run is refused (`check_run_dir`).
      log: callable printing one line; used by the default record callback
        (`records.TableLog`).
      progress: None or a tqdm-like class for per-epoch progress bars.
      threads: intra-op threads (0 lets TensorFlow choose).
      extra: dict merged into the summary (e.g. the corpus floor).
      init_from: checkpoint prefix of a run of the same model (e.g.
        `best_checkpoint(float_run_dir)`) whose model variables, those it
        holds, start this run: a quantized run (params['quant']) or a
        compression stage; optimizer state, ranges and the global step
        start fresh. Epoch 1 of a resumed run starts from it again, so
        resume stays exact.
      on_record: callable receiving every record ('start' / 'resume',
        'epoch' per epoch, 'end' with the summary; see `awd_lm.records`);
        default: ``records.TableLog(log)``, the training table.
      produced: dict of more ``produced_by`` entries for config.json,
        recording how the run was made: ``data_dir``, the corpus
        directory's absolute path (None: the embedded corpus), is what
        ``awd-lm compress`` and ``train --resume`` read back
        (`awd_lm.config.runrecord`).

    run_dir also gets config.json and vocab.txt (`awd_lm.modeldir`) when
    the run starts and again, with its perplexities, when it ends, so that
    ``LanguageModel.load(run_dir)`` opens its best checkpoint.

    Returns:
      the summary dict (also written to run_dir/summary.json): model,
      corpus, params, epochs (the epoch records), epochs_run, best_epoch,
      best_valid_ppl, test_ppl (at the best checkpoint), stop_reason,
      averaging_epoch, train_seconds, unk_counts, sparsity_report, quant,
      init_from, quant_ranges, and ``extra``'s keys.

    Raises:
      ValueError: invalid params (named), resume with changed
        parameters.
      RunDirError: (a ValueError) run_dir holds a run and neither resume
        nor overwrite was given, or both were; nothing is written.
      GraphModeError: eager execution is on (TF 2.x's default), named with
        the fix, before anything is written.
      CheckpointError: (a ValueError) an unreadable checkpoint or
        state.json, named; nothing written is deleted.
      data.DataError: a split too short for its batch size.
      TrainingDiverged: (a FloatingPointError) a training or validation
        loss that is NaN, infinite or above `DIVERGED_LOSS`, naming the
        epoch and step; the previous epochs' checkpoints are kept.
    """
    _compat.require_graph_mode("awd_lm.train.run")
    check_run_dir(run_dir, resume, overwrite)
    report = on_record if on_record is not None else records.TableLog(log)
    trainer = Trainer(corpus, params, run_dir, resume=resume,
                      threads=threads, init_from=init_from,
                      progress=progress)
    opening = trainer.opening_record()
    if opening is not None:
        report(opening)
    # The run directory describes itself (config.json, vocab.txt) from the
    # start, so its best checkpoint opens while training goes on.
    produced = dict(produced or {}, corpus=corpus.name)
    modeldir.write_run_dir(run_dir, trainer.params, corpus.vocab, **produced)
    while not trainer.finished():
        report(trainer.epoch())
    summary = trainer.finish(extra)
    modeldir.write_run_dir(run_dir, trainer.params, corpus.vocab, summary,
                           **produced)
    report(dict(summary, event="end"))
    return summary


def _controller_ops(params):
    """Names of the sparsity controller's scale variable, its new value's
    placeholder and their assignment, or None without a controller."""
    if not (params.get("sparsity") and params.get("sparsity_controller")):
        return None
    scale = model.sparsity_weight_scale()
    value = tf.placeholder(tf.float32, [], "sparsity_weight_scale_value")
    assign = tf.assign(scale, value)
    return {"scale": scale.name, "value": value.name, "assign": assign.name}


def _clear_run(run_dir):
    """Deletes what an earlier run wrote in run_dir, and nothing else."""
    if not os.path.isdir(run_dir):
        return
    for name in os.listdir(run_dir):
        path = os.path.join(run_dir, name)
        if name in ("last", "best") and os.path.isdir(path):
            shutil.rmtree(path)
        elif (name in (STATE_FILE, SUMMARY_FILE)
              or name.startswith("events.out.tfevents.")):
            os.remove(path)


def _is_best(state, valid_loss, reached=True):
    """Whether an epoch beats the best so far: one that reached the target
    sparsity beats one that did not; else the lower loss wins."""
    if state["best_valid"] is None:
        return True
    best_reached = state.get("best_reached", True)
    if reached != best_reached:
        return reached
    return valid_loss < state["best_valid"]
