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
each step returns a record (`awd_lm.training.records`) and prints nothing.
`run` drives a Trainer to the stopping rule and hands the records to a
callback, by default the training table (`records.TableLog`).

The loop's parts are modules of their own, whose names are theirs:
`train_graph` (the graph and its reseeded instances), `epochs` (an epoch
of truncated BPTT, evaluation, `TrainingDiverged`), `runstate` (the
state, the stopping rule, what a resumed run reads back), `selection`
(which epoch is the best) and `controller` (the sparsity controller).
The run directory's layout and its atomic JSON writes are
`config.rundir`'s. This module keeps `check_run_dir`, `Trainer` and `run`.
"""
import collections
import contextlib
import time

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.checkpoints import check_checkpoint
from tf1_awd_sparse.base.checks import (check_nonnegative_int,
                                        check_writable_dir)
from tf1_awd_sparse.awd_lm.corpus import data, runtime
from tf1_awd_sparse.awd_lm.graph import distill, model
from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.config.params import takes_params
from tf1_awd_sparse.awd_lm.config.runrecord import EpochRecord, RunSummary
from tf1_awd_sparse.awd_lm.training import controller, records, selection
from tf1_awd_sparse.awd_lm.config.rundir import (
    RunDir, RUN_FILES, STATE_FILE, SUMMARY_FILE)
from tf1_awd_sparse.awd_lm.graph.checkpoints import (
    CheckpointError, diverged, perplexity, restore)
from tf1_awd_sparse.base.errors import Error
# `Trainer` reads the loop's parts by these names, so that a test's
# stand-in for one of them (``train.Graph``, ``train.evaluate``) is the
# one used.
from tf1_awd_sparse.awd_lm.training.train_graph import Graph
from tf1_awd_sparse.awd_lm.training.epochs import (
    TrainingDiverged, evaluate, train_epoch)
from tf1_awd_sparse.awd_lm.training.runstate import (
    fresh_state, stop_reason, read_state)

__all__ = ["ppl", "best_checkpoint", "RunDirError", "check_run_dir",
           "Trainer", "run"]

#: The former name of `perplexity` (0.3.0's ``train.ppl``, which capped the
#: loss at 700 where `perplexity` is inf above `DIVERGED_LOSS`).
ppl = perplexity

def _scalars(writer, step, **values):
    writer.add_summary(tf.Summary(value=[
        tf.Summary.Value(tag=k, simple_value=float(v))
        for k, v in sorted(values.items())]), step)
    writer.flush()


#: A model's name in logs and tables (`presets.label`, kept here by name).
label = presets.label


def best_checkpoint(run_dir):
    """Prefix of the best-validation checkpoint `run` keeps in run_dir
    (`rundir.RunDir.best_prefix`)."""
    return RunDir(run_dir).best_prefix


class RunDirError(ValueError, Error):
    """A run directory that already holds a run, given without resume or
    overwrite (or with both); the message names the file found, resume
    and a new directory (never the way that deletes the run)."""


def check_run_dir(run_dir, resume=False, overwrite=False, names=RUN_FILES,
                  ways=("resume=True", "overwrite=True"), label="run_dir"):
    """Refuses to start a fresh run over ``run_dir``'s earlier one: the one
    check behind `run` and the command line's ``--resume`` / ``--overwrite``.

    Args:
      run_dir: the directory (need not exist; it must be one that can be
        made and written, `checks.check_writable_dir`).
      resume, overwrite: bools; with either a directory holding a run is
        accepted.
      names: the files and folders in run_dir that mark a run (paths
        relative to it; default `rundir.RUN_FILES`).
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
    path = RunDir(run_dir).holds_run(names)
    if path is not None:
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
      params: the run's parameters: a `Params` or a dict
        (`awd_lm.config.presets.params_for`), checked here (`as_params`,
        then the model's rules).
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

    @takes_params()
    def __init__(self, corpus, params, run_dir, resume=False, threads=0,
                 init_from=None, progress=None):
        params = params.replace(vocab_size=len(corpus.vocab))
        warm_names = None
        if init_from is not None:
            warm_names = _readable(init_from, "init_from")
        if params.sparse.sparsity and params.sparse.sparsity_weight is None:
            # The KL / L0 term is a sum over weights; the data term a mean
            # over tokens: weigh by 1 / tokens (the ELBO per token).
            params = params.replace(sparsity_weight=1.0 / len(corpus.train))
        # The model's own rules (e.g. distill_weight needs distill_from)
        # before anything is deleted.
        model.check_params(params)
        if distill.enabled(params):
            _readable(params.stage.distill_from, "distill_from")
        self.params, self.run_dir = params, run_dir
        self.dir = RunDir(run_dir)
        self.corpus, self.init_from, self.progress = corpus, init_from, \
            progress
        self.model = label(params)
        # Batched before anything is deleted: a split too short for its
        # batch size leaves an earlier run's files alone.
        self.streams = {
            split: data.batchify(getattr(corpus, split), batch,
                                 "%s split" % split, "params[%r]" % key)
            for split, (key, batch) in params.batch_sizes().items()}
        threads = check_nonnegative_int(threads, "threads")
        self.config = runtime.session_config(
            threads, inter_op_threads=min(threads, 2))
        # Its own inter-op pool: runs side by side in one process (the
        # compression pipeline's) otherwise queue on the first session's
        # global pool (one thread with threads=1: one core for all).
        self.config.use_per_session_threads = True
        self.state, self.resumed = self._load_state(resume)
        self.dir.makedirs()
        self.last_prefix = self.dir.last_prefix
        self.best_prefix = self.dir.best_prefix
        # A resumed run that has finished trains and scores nothing: its
        # graph is built only if asked for (`graph`), so resuming a
        # pipeline of finished stages costs no graph construction.
        self._warm_names = warm_names
        self._graph = (None if self.resumed and self.state.done
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
        """(state, resumed): run_dir's state.json (a `runrecord.RunState`),
        or a fresh state after deleting an earlier run's files."""
        path = self.dir.state_file
        if not (resume and self.dir.exists(STATE_FILE)):
            self.dir.clear()
            return fresh_state(self.params), False
        # Only max_epochs may change (`runstate.read_state`).
        return read_state(path, self.params, self.run_dir), True

    def opening_record(self):
        """The 'resume' record of a resumed run, the 'start' record of a run
        with no finished epoch, else None."""
        if self.resumed:
            return {"event": "resume", "model": self.model,
                    "run_dir": self.run_dir, "epoch": self.state.epoch}
        if self.state.epoch == 0 and not self.state.done:
            return {"event": "start", "model": self.model}
        return None

    def finished(self):
        """Whether the stopping rule ended the run (or it was scored)."""
        return (self.state.done
                or stop_reason(self.state, self.params) is not None)

    def epoch(self):
        """Trains, validates and checkpoints the next epoch.

        Every epoch runs in a fresh instance of the graph seeded by (seed,
        epoch), starting from the previous epoch's checkpoint (or the
        initializer / ``init_from`` for epoch 1), so that a resumed run
        redoes an interrupted epoch exactly.

        Returns:
          the 'epoch' record (`awd_lm.training.records`), also appended to the
          state's epochs (as a `runrecord.EpochRecord`).

        Raises:
          CheckpointError: the previous epoch's checkpoint is unreadable.
          TrainingDiverged: (a FloatingPointError) the training loss of a
            step or the validation loss diverged; the epoch saves nothing
            (checkpoints, state.json), the message says what is kept.
        """
        g, params = self.graph, self.params
        epoch = self.state.epoch + 1
        start = time.time()
        graph, last_saver, best_saver, warm_saver, teacher_saver = \
            g.instance(params.optimization.seed * 1009 + epoch)
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
                restore(teacher_saver, sess, params.stage.distill_from)
            if g.averaging is not None:
                g.optimizer.set_history(list(self.state.val_history))
            try:
                train_loss, tok_s, distilled = train_epoch(
                    sess, g, self.streams["train"], params, epoch,
                    self.progress)
                record = self.validate(sess, best_saver, epoch)
            except TrainingDiverged as e:
                raise e.keeping(self._kept(epoch))
            state = self.state
            if record["best"]:
                state = state.replace(best_valid=record["valid_loss"],
                                      best_epoch=epoch, since_best=0)
            elif selection.selectable(params, epoch):
                # Patience counts from the first selectable epoch.
                state = state.replace(since_best=state.since_best + 1)
            if record["averaging_started"]:
                # The trigger fires on a stalled loss, when patience is
                # nearly spent: the averaged weights get their own.
                state = state.replace(averaging_epoch=epoch, since_best=0)
            seconds = time.time() - start
            record.update(model=self.model, epoch=epoch,
                          train_loss=train_loss,
                          train_ppl=perplexity(train_loss),
                          tokens_per_s=tok_s, seconds=seconds,
                          lr=params.optimization.lr, **distilled)
            if g.controller is not None and "sparsity" in record:
                record.update(controller.control(
                    sess, g.controller, params, epoch, record["sparsity"]))
            self.state = state.replace(
                epochs=state.epochs + (EpochRecord.from_json(record),),
                epoch=epoch, train_seconds=state.train_seconds + seconds)
            ranges = g.quant_ranges(sess)
            # Checkpoint first, state second: a kill in between redoes the
            # epoch from the previous checkpoint, which is still consistent.
            self.checkpoint(sess, last_saver, epoch)
        self.dir.write_json(STATE_FILE, self.state.to_json())
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
        if self.params.stage.average_from_start and g.averaging is not None:
            sess.run(g.optimizer.trigger_op().name)
            self.state = self.state.replace(averaging_epoch=1)

    def _kept(self, epoch):
        """What a diverged epoch leaves: the previous epochs' checkpoints."""
        if epoch == 1:
            return "no checkpoint was written"
        return ("kept: the checkpoint of epoch %d (%s-%d) and the best "
                "(%s, epoch %d)" % (epoch - 1, self.last_prefix, epoch - 1,
                                    self.best_prefix,
                                    self.state.best_epoch))

    def validate(self, sess, best_saver, epoch):
        """Validates the weights of the epoch just trained: NT-ASGD's
        averaged weights once it averages. A new best validation loss saves
        the best checkpoint (of the weights validated); before averaging,
        the loss feeds NT-ASGD's trigger. Which epoch is the best is
        `selection`'s rule: none before ``select_from_epoch``; with
        ``select_min_sparsity`` one that reaches it beats any that does
        not; else the lower loss wins.

        Returns:
          dict with valid_loss, valid_ppl, best (bool), averaged (bool),
          averaging_started (bool) and, for a sparse or pruned model,
          sparsity (of the weights validated).

        Raises:
          TrainingDiverged: the validation loss diverged (`diverged`);
            the best checkpoint is not saved.
        """
        g = self.graph
        averaged = bool(g.averaging is not None and sess.run(g.averaging))
        # Without averaging, the raw weights are the ones validated.
        weights = (g.optimizer.averaged_weights(sess) if averaged
                   else contextlib.ExitStack())
        extra = {}
        with weights:
            valid_loss = evaluate(sess, g, self.streams["valid"],
                                  self.params.optimization.bptt)
            if diverged(valid_loss):
                raise TrainingDiverged("validation loss", valid_loss, epoch)
            reached = True
            if g.sparsity:
                extra["sparsity"] = float(sess.run(g.sparsity["global"]))
                reached = selection.reaches_sparsity(self.params,
                                                     extra["sparsity"])
            best = bool(selection.selectable(self.params, epoch)
                        and selection.is_best(self.state, valid_loss,
                                              reached))
            if best:
                best_saver.save(sess, self.best_prefix)
                self.state = self.state.replace(best_reached=reached)
        started = bool(not averaged and g.averaging is not None
                       and g.optimizer.observe(sess, valid_loss))
        self.state = self.state.replace(val_history=(
            list(g.optimizer.history) if g.averaging is not None
            else self.state.val_history + (valid_loss,)))
        return dict(extra, valid_loss=valid_loss,
                    valid_ppl=perplexity(valid_loss),
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
          the `runrecord.RunSummary` (see `run`).

        Raises:
          CheckpointError: the best checkpoint is unreadable.
        """
        if not self.state.done:
            g = self.graph
            scored = {"stop_reason": stop_reason(self.state, self.params)}
            graph, _, best_saver, _, _ = g.instance(
                self.params.optimization.seed * 1009)
            with tf.Session(graph=graph, config=self.config) as sess:
                restore(best_saver, sess, self.best_prefix)
                scored["quant_ranges"] = g.quant_ranges(sess) or None
                bptt = self.params.optimization.bptt
                scored["test_loss"] = evaluate(
                    sess, g, self.streams["test"], bptt)
                scored["best_valid_check"] = evaluate(
                    sess, g, self.streams["valid"], bptt)
                if g.sparsity:
                    values = sess.run(g.sparsity)
                    scored["sparsity_report"] = {
                        "global": float(values["global"]),
                        "layers": collections.OrderedDict(
                            (k, float(v)) for k, v in
                            values["layers"].items())}
            self.state = self.state.replace(done=True, **scored)
            self.dir.write_json(STATE_FILE, self.state.to_json())
        self._writer.close()
        state = self.state
        summary = {
            "model": self.model, "corpus": self.corpus.name,
            "params": dict(self.params.to_flat()),
            "epochs": state.epochs,
            "epochs_run": state.epoch, "best_epoch": state.best_epoch,
            "best_valid_ppl": perplexity(state.best_valid),
            "test_ppl": perplexity(state.test_loss),
            "stop_reason": state.stop_reason,
            "averaging_epoch": state.averaging_epoch,
            "train_seconds": state.train_seconds,
            "unk_counts": self.corpus.unk_counts,
            "sparsity_report": state.sparsity_report,
            "quant": bool(self.params.quantization.quant),
            "init_from": self.init_from,
            "quant_ranges": state.quant_ranges,
        }
        summary.update(extra or {})
        summary = RunSummary.from_json(summary, self.dir.summary_file)
        self.dir.write_json(SUMMARY_FILE, summary.to_json())
        return summary


@takes_params()
def run(corpus, params, run_dir, resume=False, log=print, progress=None,
        threads=0, extra=None, init_from=None, on_record=None,
        overwrite=False, produced=None):
    """Trains one model until the stopping rule, then scores its best checkpoint.

    Args:
      corpus: data.Corpus.
      params: the run's parameters: a `Params` or a dict
        (`awd_lm.config.presets.params_for`), checked at once (`as_params`).
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
        holds, start this run: a quantized run (``quant``) or a
        compression stage; optimizer state, ranges and the global step
        start fresh. Epoch 1 of a resumed run starts from it again, so
        resume stays exact.
      on_record: callable receiving every record ('start' / 'resume',
        'epoch' per epoch, 'end' with the summary; see
        `awd_lm.training.records`); default: ``records.TableLog(log)``, the
        training table.
      produced: more ``produced_by`` entries for config.json (how the run
        was made; ``data_dir``, the corpus directory or None, is read back
        by ``awd-lm compress`` and ``train --resume``: `config.runrecord`).

    run_dir also gets config.json and vocab.txt (`awd_lm.config.modeldir`)
    when the run starts and again, with its perplexities, when it ends, so
    that ``LanguageModel.load(run_dir)`` opens its best checkpoint.

    Returns:
      the run's `runrecord.RunSummary` (its `to_json` is run_dir's
      summary.json): model, corpus, params, epochs (the epoch records),
      epochs_run, best_epoch, best_valid_ppl, test_ppl (at the best
      checkpoint), stop_reason, averaging_epoch, train_seconds,
      unk_counts, sparsity_report, quant, init_from, quant_ranges, and
      ``extra``'s keys (`RunSummary.extra` but those it declares).

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
    report(dict(summary.to_json(), event="end"))
    return summary

