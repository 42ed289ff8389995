"""The compression pipeline's sequencing (`awd_lm.training.compression`):
the stages in order, the fine-tunings side by side on threads, what
finished recorded for resume, and summary.json.
"""
import concurrent.futures
import json
import os
import threading

from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.graph import compression_ops
from tf1_awd_sparse.awd_lm.config import modeldir, presets, rundir
from tf1_awd_sparse.awd_lm.config.params import Params, takes_params
from tf1_awd_sparse.awd_lm.config.runrecord import RunSummary
from tf1_awd_sparse.awd_lm.training import records, train
from tf1_awd_sparse.awd_lm.training.compression import (
    cuts, plot, rows as rows_, ship, small_dense, stages, tflite)

__all__ = ["Pipeline", "run_pipeline", "sparsify", "ramp_and_cut", "prune",
           "quantize"]


class Pipeline(object):
    """One pipeline run in ``out_dir``: its settings, the stages' shared
    inputs and what finished (pipeline.json, for resume).

    Args:
      corpus, float_summary, float_dir, out_dir: as `run_pipeline`'s.
      params: the float model's full `Params` (`run_pipeline`'s).
      run_options: dict of ``resume``, ``log``, ``progress`` and
        ``threads`` (`train.run`'s options of every stage).

    Attributes:
      params: Params, the float model's with the corpus's ``vocab_size``.
      float_summary: the float run's `runrecord.RunSummary`.
      dir: the pipeline's `rundir.RunDir`.
      done: {stage key: what it was made from} of the finished stages.
    """

    def __init__(self, corpus, params, float_summary, float_dir, out_dir,
                 run_options):
        self.corpus, self.out_dir = corpus, out_dir
        self.dir = rundir.RunDir(out_dir)
        self.params = params.replace(vocab_size=len(corpus.vocab))
        self.float_summary = RunSummary.coerce(float_summary,
                                               "float_summary")
        self.float_best = rundir.RunDir(float_dir).best_prefix
        # The distillation's teacher (`teacher_is_reference`: the
        # reference's best checkpoint once it has trained).
        self.teacher = self.float_best
        self.float_ppl = self.float_summary.test_ppl
        self.run_options = run_options  # resume, log, progress, threads
        self.extra = {"floor_ppl": self.float_summary.floor_ppl}
        optimization = self.params.optimization
        stream = data.batchify(corpus.train, optimization.batch_size)
        self.steps_per_epoch = max(1, (stream.shape[1] - 1)
                                   // optimization.bptt)
        self.path = self.dir.pipeline_file
        self.lock = threading.Lock()
        self.done = {}
        if run_options["resume"] and self.dir.exists(rundir.PIPELINE_FILE):
            with open(self.path) as handle:
                self.done = json.load(handle)
        self.dir.makedirs()

    def teacher_is_reference(self):
        """Whether the techniques distil from the reference (which then
        trains before them): ``distill_weight > 0`` and ``distill_teacher
        = 'reference'``."""
        distill = self.params.distill
        return (float(distill.distill_weight or 0.0) > 0.0
                and distill.distill_teacher == "reference")

    def record(self, key, value):
        """Notes a finished stage (written atomically)."""
        with self.lock:
            self.done[key] = value
            rundir.write_json(self.path, self.done)
        return value

    def train(self, params, run_dir, init_from):
        """`train.run` of one stage (resumable) in the `rundir.RunDir`
        ``run_dir``: its `RunSummary` (`run_params` its parameters)."""
        # A stage without resume starts over in its own folder of out_dir
        # (the pipeline, or its command line, decided to redo it).
        options = dict(self.run_options)
        options.setdefault("overwrite", not options.get("resume"))
        return train.run(self.corpus, params, run_dir.path, extra=self.extra,
                         init_from=init_from, **options)

    @staticmethod
    def run_params(summary):
        """The `Params` a stage trained with (the trainer's: the stage's
        with the corpus's ``vocab_size`` and a sparsity weight set), which
        its config.json, cut and files are made of: its `RunSummary`
        records them flat, read back here once."""
        return Params.from_flat(summary.params)

    def model_params(self, **changes):
        """The model's parameters without the pipeline's own."""
        return stages.model_params(self.params, **changes)

    def compressed_params(self, **changes):
        """The compressed model's parameters: `model_params` with the keys
        that shape its graph (`stages.compressed_structure`)."""
        return self.model_params(**dict(
            stages.compressed_structure(self.params), **changes))


@takes_params()
def run_pipeline(corpus, params, float_summary, float_dir, out_dir,
                 techniques, resume=False, log=print, threads=1,
                 progress=None, parallel=2):
    """Runs the compression pipeline on a trained float model.

    Args:
      corpus: the `data.Corpus` the float model was trained on.
      params: the full parameters (a `Params`, or `presets.params_for`'s
        dict): the model's, the compression settings
        (`presets.COMPRESS_KEYS`) and the quantization-aware schedule
        (`presets.QUANT_KEYS`).
      float_summary: the float run's summary (`train.run`'s
        `runrecord.RunSummary`, or its summary.json's dict).
      float_dir: the float run's directory (its best checkpoint is used).
      out_dir: the pipeline's directory (one run directory per stage,
        the pruned checkpoint, the .tflite files, summary.json;
        `rundir.RunDir` names them).
      techniques: list of ``presets.COMPRESS_TECHNIQUES``.
      resume: skip finished stages and resume a killed training stage.
      log: callable printing one line.
      threads: intra-op threads of each training run.
      progress: None or a tqdm-like class.
      parallel: fine-tuning runs at once (each on its own thread).

    Returns:
      ``{"stages": [row, ...], "table": [lines], "chosen": technique,
      "target_sparsity": float, "recommended": the file to ship}`` (also
      summary.json; `ship.recommend`, its line the table's
      last).

    Raises:
      ValueError: no technique, or an unknown one.
    """
    if not techniques:
        raise ValueError("techniques: give at least one of %s"
                         % ", ".join(presets.COMPRESS_TECHNIQUES))
    pipeline = Pipeline(corpus, params, float_summary, float_dir, out_dir,
                        {"resume": resume, "log": log, "progress": progress,
                         "threads": threads})
    target = pipeline.params.prune.target_sparsity
    weights = cuts.effective_weights(pipeline.float_best, pipeline.params)
    # A table budget that leaves the kernels none is refused before any
    # fine-tuning.
    compression_ops.matrix_targets(pipeline.params,
                                   {n: w.size for n, w in weights.items()})
    rows = [rows_.row("float", "-", pipeline.float_summary,
                      pipeline.float_ppl, weights)]
    runs = sparsify(pipeline, ["reference"] + list(techniques), parallel)
    reference, sparse_runs = runs[0], runs[1:]
    reference["row"] = rows_.best_reference(rows[0], reference["row"])
    rows += [run["row"] for run in runs]
    scope = pipeline.params.compression.cut_scope
    table = pipeline.params.prune.table_sparsity
    reach = records.reach_scope(scope, table)
    chosen_row, chosen_reached = rows_.choose(
        [run["row"] for run in sparse_runs], target, log, reach)
    chosen = chosen_row["technique"]
    pruned = prune(pipeline, chosen)
    quant, quant_best = quantize(pipeline, pruned)
    # The QAT run's config.json, with the technique its model came from.
    modeldir.write_run_dir(pipeline.dir.stage_run("qat").path,
                           pipeline.run_params(quant), corpus.vocab, quant,
                           technique=chosen)
    rows.append(rows_.row("qat", chosen, quant, pipeline.float_ppl,
                          cuts.effective_weights(quant_best,
                                                 pipeline.run_params(quant))))
    # --small-dense: its files timed in the same rounds as the others.
    more = (lambda files: small_dense.small_dense_rows(pipeline, files,
                                                       progress)) \
        if pipeline.params.compression.small_dense else None
    rows += tflite.tflite_rows(
        pipeline, chosen, (pipeline.compressed_params(pruning="fixed"), pruned),
        (pipeline.run_params(quant), quant_best), progress, more)
    rows_.mark(rows, target, reference["row"]["test_ppl"], reach)
    result = _summary(pipeline, rows, {
        "chosen": chosen, "chosen_reached_target": chosen_reached,
        "target_sparsity": target, "cut_scope": scope}, table)
    with open(pipeline.dir.summary_file, "w") as handle:
        json.dump(result, handle, indent=1)
    plot.plot(pipeline, [reference] + sparse_runs, chosen, quant)
    return result


def _summary(pipeline, rows, choice, table):
    """summary.json's dict: the rows and their table, the ``choice``
    (technique, target), the small-dense verdict where that model ran, the
    file to ship (its line the table's last) and the table's own target
    where one was given."""
    result = dict({"stages": rows, "table": rows_.format_table(rows)},
                  **choice)
    dense = small_dense.summary_of(rows)
    if dense is not None:
        result["small_dense"] = dense
        result["table"].append(small_dense.verdict_line(dense))
    result["recommended"] = ship.recommend(
        rows, pipeline.params.compression.ship_ppl_target)
    result["table"].append(ship.recommended_line(
        result["recommended"]))
    if table is not None:
        result["table_sparsity"] = table
    return result


def _finetune(pipeline, technique):
    """One fine-tuning of stage 2: the reference's, or a technique's (its
    ramp and cut, then its survivors). Returns ``{technique, summary,
    row}``."""
    if technique == "reference":
        run = pipeline.dir.stage_run("reference")
        summary = pipeline.train(stages.reference_params(pipeline.params),
                                 run, pipeline.float_best)
        modeldir.write_run_dir(run.path, pipeline.run_params(summary),
                               pipeline.corpus.vocab, summary,
                               stage="reference")
        return {"technique": "-", "summary": summary,
                "row": rows_.row("reference", "-", summary,
                                 pipeline.float_ppl, cuts.effective_weights(
                                     run.best_prefix, pipeline.run_params(summary)))}
    cut, remade = ramp_and_cut(pipeline, technique)
    run = pipeline.dir.survivors_run(technique)
    if remade:   # survivors of an older cut: not to be resumed
        run.clear()
    summary = pipeline.train(
        stages.survivors_params(pipeline.params, pipeline.teacher), run, cut)
    # Its config.json names the technique its survivors came from.
    modeldir.write_run_dir(run.path, pipeline.run_params(summary),
                           pipeline.corpus.vocab, summary,
                           stage="sparse", technique=technique)
    return {"technique": technique, "summary": summary,
            "row": rows_.row("sparse", technique, summary,
                             pipeline.float_ppl, cuts.effective_weights(
                                 run.best_prefix, pipeline.run_params(summary)))}


def sparsify(pipeline, techniques, parallel):
    """Stage 2: the reference's fine-tuning and each technique's (ramp,
    exact cut, survivors' fine-tuning) from the float model, up to
    ``parallel`` at once. Returns ``[{technique, summary, row}]``."""
    def finetune(technique):
        return _finetune(pipeline, technique)

    with concurrent.futures.ThreadPoolExecutor(max(1, parallel)) as pool:
        if pipeline.teacher_is_reference():
            # The techniques' teacher is the reference: it trains first.
            first = finetune(techniques[0])
            # The teacher is the reference `best_reference` reports.
            float_row = {"valid_ppl": pipeline.float_summary.best_valid_ppl}
            if rows_.best_reference(float_row, first["row"])[
                    "reference_is"] == "fine-tuned":
                pipeline.teacher = pipeline.dir.stage_run(
                    "reference").best_prefix
            return [first] + list(pool.map(finetune, techniques[1:]))
        return list(pool.map(finetune, techniques))


def ramp_and_cut(pipeline, technique):
    """A technique's first phase and its exact cut (redone when the phase's
    last checkpoint or the cut's scope changed). Returns ``(prefix, remade)``:
    the cut checkpoint's prefix and whether it was (re)written now."""
    params = stages.finetune_params(pipeline.params, technique,
                                    pipeline.steps_per_epoch,
                                    pipeline.teacher)
    run = pipeline.dir.ramp_run(technique)
    pipeline.train(params, run, pipeline.float_best)
    last = tf.train.latest_checkpoint(run.last_dir)
    cut = pipeline.dir.cut_prefix(technique)
    scope = pipeline.params.compression.cut_scope
    table = pipeline.params.prune.table_sparsity
    source = cuts.made_from("%s:%s" % (technique, scope) + (
        "" if table is None else ":table=%r" % table), last)
    key = "cut_" + rundir.TECHNIQUE_DIRS[technique]
    remade = pipeline.done.get(key) != source
    if remade:
        cuts.cut_checkpoint(last, params,
                            pipeline.params.prune.target_sparsity, cut,
                            scope)
        pipeline.record(key, source)
    return cut, remade


def prune(pipeline, technique):
    """Stage 3: the chosen model as dense weights with fixed masks (once).
    Returns the pruned checkpoint's prefix."""
    pruned = pipeline.dir.pruned_prefix
    source = pipeline.dir.survivors_run(technique).best_prefix
    made = cuts.made_from(technique, source)
    if pipeline.done.get("pruned") != made:
        cuts.prune_checkpoint(source, stages.survivors_params(
            pipeline.params, pipeline.teacher), pruned)
        pipeline.record("pruned", made)
    _describe_pruned(pipeline, technique, pruned)
    return pruned


def _describe_pruned(pipeline, technique, pruned):
    """config.json and vocab.txt of the pruned checkpoint's directory."""
    params = pipeline.compressed_params(pruning="fixed")
    count, total = cuts.nonzero(cuts.effective_weights(pruned, params))
    directory, checkpoint = os.path.split(pruned)
    modeldir.write_config(
        directory, params, pipeline.corpus.vocab,
        modeldir.produced_by(params, stage="pruned", technique=technique,
                             sparsity=1.0 - count / float(total)),
        checkpoint=checkpoint)


def quantize(pipeline, pruned):
    """Stage 4: quantization-aware fine-tuning of the pruned model with its
    masks held. Returns (summary, best checkpoint)."""
    run = pipeline.dir.stage_run("qat")
    summary = pipeline.train(stages.quantize_params(pipeline.params), run,
                             pruned)
    return summary, run.best_prefix
