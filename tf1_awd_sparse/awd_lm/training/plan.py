"""One command's run of the language model: float -> quantization-aware
-> compression, for each model, in a run's ``--out`` (``awd-lm train``
and ``awd-lm compress`` are this module's command line).

`plan_run` decides everything before anything is trained or written: the
models, their checked parameters and phases, what a recorded run
(``--resume``, `awd_lm.config.runrecord`) fixes, the corpus and the
summaries already in ``--out``. `run_plan` then runs each model's
phases (`train.run`, `compression.pipeline.run_pipeline`) and returns their
summaries; `results` and `write_results` make ``--out``'s results table,
summary.json and valid_ppl.png.

The error messages name the command line's flags (``--out``,
``--model``, ...; a parameter through ``flag``), as the programs print
them.
"""
import collections
import json
import os

from tf1_awd_sparse.awd_lm.config import modeldir, presets, rundir, runrecord
from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.awd_lm.config.rundir import RunDir
from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.training import records, train
from tf1_awd_sparse.awd_lm.training.compression import pipeline

__all__ = ["RUN_FILES", "Plan", "flag_name", "check_out", "plan_run",
           "run_plan", "results", "write_results"]

# What marks a directory as holding a run: the training loop's files
# (`train`) and the compression pipeline's record of finished stages.
RUN_FILES = rundir.RUN_FILES + (rundir.PIPELINE_FILE,)

#: Everything `plan_run` decided: the run's settings (out, compress_out,
#: resume, overwrite), the models, their `Params` (configs) and phases
#: ((float, quantization-aware or None) each), the finished records ``awd-lm
#: compress`` reads, the corpus (its absolute data_dir, or None for the
#: embedded one; floor and description) and --out's earlier summaries.
Plan = collections.namedtuple("Plan", (
    "out", "compress_out", "resume", "overwrite", "models", "configs",
    "phases", "finished", "data_dir", "corpus", "floor", "description",
    "previous"))


def flag_name(key):
    """The command-line flag of a parameter (in errors): ``--bptt``."""
    return "--" + key.replace("_", "-")


def check_out(out, resume, overwrite, compress_out, configs):
    """Refuses to start over a finished or partial run without resume
    or overwrite (a fresh run deletes the files of the one before).

    It looks for the files of a run in the layout `rundir.RunDir` names:
    ``<out>/<model>``, ``<out>/<model>_quant`` and ``<out>/<model>
    _compress`` (or ``compress_out``).

    Args:
      out: the run's --out; compress_out: --compress-out or None.
      resume, overwrite: bools (--resume, --overwrite).
      configs: each model's `Params`.

    Raises:
      ValueError: naming the flag, the file found, --resume and a new
        directory (never --overwrite: the run may hold trained models);
        or --resume with --overwrite.
    """
    ways = ("--resume", "--overwrite")
    train.check_run_dir(out, resume, overwrite, names=(), ways=ways,
                        label="--out")
    if resume or overwrite:
        return
    # (flag, the directory it names, a run file under it): the message
    # names the flag's own directory and the file found. The layout's
    # paths relative to that directory: `RunDir`'s, rooted at "".
    layout = RunDir("")
    found = [("--out", out, rundir.SUMMARY_FILE)]
    for params in configs:
        model = params.run.model
        for run in (layout.model_run(model), layout.quant_run(model)):
            found += [("--out", out, run.join(name)) for name in RUN_FILES]
        if compress_out:
            flag, base, pipe = "--compress-out", compress_out, layout
        else:
            flag, base, pipe = "--out", out, layout.compression(model)
        found += [(flag, base, pipe.join(name))
                  for name in (rundir.PIPELINE_FILE, rundir.SUMMARY_FILE)]
    for flag, base, name in found:
        train.check_run_dir(base, names=(name,), ways=ways, label=flag)


def _models(out, model, resume, compress_only):
    """The float models to run: ``model`` (--model); without it, with
    resume, those ``out`` holds (compress: its one trained model), else
    awd.

    Raises:
      ValueError: compress on an --out holding none, or two without
        --model.
    """
    if model:
        return ["plain", "awd"] if model == "both" else [model]
    found = runrecord.trained_models(out) if resume else []
    if compress_only and not found:
        raise ValueError("--out %s holds no trained model (awd/ or plain/ "
                         "with a config.json): train one first (awd-lm "
                         "train --out %s ...)" % (out, out))
    if compress_only and len(found) > 1:
        raise ValueError("--out %s holds two trained models (%s): give "
                         "--model %s or both" % (out, ", ".join(found),
                                                 " or ".join(found)))
    return found or ["awd"]


#: What an error on contradicting flags suggests (never a deleting step):
#: one flag, several.
_REMEDY = ("leave it out (the run's own value is used), or train with it "
           "in a new --out")
_REMEDIES = ("leave them out (the run's own values are used), or train "
             "with them in a new --out")


def _model_params(out, preset, model, record, explicit, compress_only,
                  flag):
    """One model's checked parameters: with a recorded run (resume,
    compress), the run's own (`runrecord.recorded_overrides`), explicit
    ones only where they agree with it (resume may change max_epochs and
    quant_epochs); else the preset's and the explicit ones.

    Raises:
      ValueError: compress of a model --out does not hold, or explicit
        flags (--preset included) that contradict the run, all named in
        one line.
    """
    if record is None:
        if compress_only:
            raise ValueError("--model %s: --out %s holds no trained %s "
                             "model (it holds: %s)" % (
                                 model, out, model, ", ".join(
                                     runrecord.trained_models(out))
                                 or "none"))
        return Params.for_preset(preset or "demo", model, explicit)
    # More epochs extend a run; the shipping target only re-picks among
    # the files made (it trains nothing).
    may_change = () if compress_only else ("max_epochs", "quant_epochs",
                                           "ship_ppl_target")
    # compress states its own compression: the run's planned one (if
    # any) does not bind it.
    conflicts = runrecord.explicit_conflicts(
        record, explicit, may_change, compression=not compress_only)
    recorded = record.preset or "demo"
    if preset and preset != recorded:
        conflicts.insert(0, ("preset", preset, recorded))
    if conflicts:
        remedy = _REMEDY if len(conflicts) == 1 else _REMEDIES
        if any(k in presets.COMPRESS_KEYS for k, _, _ in conflicts):
            # Another compression of the same float model is `compress`'s.
            remedy += ("; to compress its trained model with other "
                       "settings: awd-lm compress --out %s ... "
                       "--compress-out NEW" % out)
        raise ValueError(runrecord.conflict_line(
            record.run_dir, conflicts, flag, remedy))
    overrides = dict(runrecord.recorded_overrides(
        record, compression=not compress_only), **explicit)
    return Params.for_preset(recorded, model, overrides)


def _planned_compress_out(recorded, given):
    """The --compress-out of a resumed run: the one its plan records
    (`runrecord.plan_entry`'s ``compress_out``), else ``given``.

    Raises:
      ValueError: ``given`` names another directory than the recorded.
    """
    for record in recorded.values():
        planned = record.plan.get("compress_out") if record else None
        if planned is None:
            continue
        if given and os.path.abspath(given) != planned:
            raise ValueError(
                "--compress-out %s contradicts the run in %s (made with "
                "--compress-out %s): %s" % (given, record.run_dir, planned,
                                            _REMEDY))
        return planned
    return given


def _previous_models(out):
    """The model summaries of ``out``'s summary.json, each a
    `runrecord.RunSummary` ([] without one).

    Raises:
      ValueError: it is unreadable (named; nothing is trained); a
        `runrecord.RecordError` naming the model's entry and the key when
        one is no run's summary."""
    path = RunDir(out).summary_file
    if not os.path.isfile(path):
        return []
    try:
        with open(path) as f:
            models = list(json.load(f)["models"])
    except (IOError, OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError("%s: unreadable run summary (%s: %s); nothing was "
                         "changed" % (path, type(e).__name__, e))
    return [runrecord.RunSummary.from_json(
        model, "%s: models[%d]" % (path, i)) for i, model in enumerate(
            models)]


def _corpus_dir(out, data_dir, recorded):
    """The corpus directory of the run (None: the embedded corpus): the
    recorded runs' (`runrecord.corpus_dir`), else ``data_dir``."""
    found = {runrecord.corpus_dir(r, data_dir)
             for r in recorded.values() if r is not None}
    if len(found) > 1:
        raise ValueError("--out %s: its models were trained on different "
                         "corpora (%s): give --model" % (out, ", ".join(
                             sorted(d or "the embedded corpus"
                                    for d in found))))
    return found.pop() if found else data_dir


def _check_vocab(corpus, record, data_dir):
    """Refuses a corpus whose vocabulary is not the recorded run's."""
    if record is None or record.words is None or \
            list(corpus.vocab) == list(record.words):
        return
    raise ValueError(
        "%s: its vocabulary (%d words) is not the one %s was trained on "
        "(%s, %d words): give --data-dir with the run's corpus" % (
            data_dir or "the embedded corpus", len(corpus.vocab),
            record.run_dir, modeldir.VOCAB_FILE, len(record.words)))


def plan_run(out, explicit, model=None, preset=None, data_dir=None,
             resume=False, overwrite=False, compress_out=None,
             compress_only=False, flag=flag_name):
    """Everything decided before anything is trained or written.

    With ``resume`` the run in ``out`` is read back (`awd_lm.config.
    runrecord`): each model's recorded parameters, phases and corpus
    (never the embedded corpus for a run made on a directory); explicit
    parameters must agree with them, but max_epochs and quant_epochs may
    extend it (not with ``compress_only``).

    Args:
      out: the run's directory (--out).
      explicit: {key: value} of the parameters given explicitly (of
        `params.USER_KEYS`).
      model: 'awd', 'plain', 'both' or None (resume: the models ``out``
        holds; else awd).
      preset: a preset's name or None (the run's, else 'demo').
      data_dir: the corpus directory or None (the embedded corpus; with
        resume: the run's).
      resume, overwrite: continue the run in ``out`` / replace it.
      compress_out: the compression pipeline's directory, or None
        (``<out>/<model>_compress``).
      compress_only: ``awd-lm compress``: every model must have finished
        (its summary is read here); no float model is trained.
      flag: function ``key -> how the errors name it``.

    Returns:
      `Plan`.

    Raises:
      ValueError: bad input (data.DataError, modeldir.ConfigError
        included), one line.
    """
    models = _models(out, model, resume, compress_only)
    recorded = {m: runrecord.read(out, m) if resume else None
                for m in models}
    configs = [_model_params(out, preset, m, recorded[m], explicit,
                             compress_only, flag) for m in models]
    if not compress_only:
        compress_out = _planned_compress_out(recorded, compress_out)
    if compress_out and configs[0].compression.compress \
            and len(models) > 1:
        raise ValueError(
            "--compress-out names one directory but --model both "
            "compresses two models: leave it out (each gets "
            "<out>/<model>_compress) or give one --model")
    check_out(out, resume, overwrite, compress_out, configs)
    # A flag no model would use is refused, never recorded as if used.
    presets.check_unused(configs, set(explicit), flag)
    if compress_out and not configs[0].compression.compress:
        raise ValueError("--compress-out has no effect here: it needs "
                         "--compress TECHNIQUES; leave it out")
    # compress trains no float model: each must have finished (its
    # summary is read here, before anything is written).
    finished = {m: recorded[m] for m in models
                if compress_only and recorded[m].summary()}
    data_dir = _corpus_dir(out, data_dir, recorded)
    # The corpus is known only now (a resumed run's is recorded): the
    # embedded corpus's sizes (--hmm-*) are refused against it.
    presets.check_unused(configs, set(explicit), flag,
                         facts={"data_dir": data_dir})
    corpus, floor, description = runtime.load_corpus(data_dir, configs[0])
    for name, params in zip(models, configs):
        runtime.check_corpus(corpus, params.batch_sizes(),
                             params.optimization.bptt, data_dir, flag)
        _check_vocab(corpus, recorded[name], data_dir)
    return Plan(out=out, compress_out=compress_out, resume=resume,
                overwrite=overwrite, models=models, configs=configs,
                phases=[presets.split_quant(p) for p in configs], finished=finished,
                data_dir=os.path.abspath(data_dir) if data_dir else None,
                corpus=corpus, floor=floor, description=description,
                previous=_previous_models(out))


def _run_model(plan, index, runs):
    """One model's phases: the float run (compress: read back, its files
    untouched), the quantization-aware one (read back too when compress
    finds it finished), then the compression pipeline, whose table goes
    to ``runs['log']``. Returns the float and quantized summaries
    (`runrecord.RunSummary`)."""
    params, (float_params, quant_params) = (plan.configs[index],
                                            plan.phases[index])
    corpus, model = plan.corpus, plan.models[index]
    root, name = RunDir(plan.out), float_params.run.model
    float_dir = root.model_run(name).path
    record = plan.finished.get(model)
    # The float phase's config.json records the whole plan from its start
    # (`runrecord.plan_entry`): --resume after a kill finishes it.
    planned = runrecord.plan_entry(params)
    if planned.get("compress") and plan.compress_out:
        planned["compress_out"] = os.path.abspath(plan.compress_out)
    float_runs = dict(runs, produced=dict(runs["produced"], plan=planned))
    float_summary = (record.summary() if record else train.run(
        corpus, float_params, float_dir, **float_runs))
    summaries = [float_summary]
    if record and record.quant_finished and quant_params is not None:
        summaries.append(record.summary(quant=True))
    elif quant_params is not None:   # continued, or added by --quant
        summaries.append(train.run(
            corpus, quant_params, root.quant_run(name).path,
            init_from=train.best_checkpoint(float_dir), **runs))
    techniques = params.compression.compress
    if techniques:
        result = pipeline.run_pipeline(
            corpus, params, float_summary, float_dir,
            root.compression(name, plan.compress_out).path,
            techniques.split(","), resume=plan.resume,
            log=runs["log"], threads=max(1, runs["threads"]),
            progress=runs["progress"])
        runs["log"]("\n".join(result["table"]))
    return summaries


def run_plan(plan, log=print, progress=None, threads=0):
    """Runs each model of ``plan`` (`plan_run`): its float run (``awd-lm
    compress``: read back), its quantization-aware run with ``quant``,
    then with ``compress`` the compression pipeline (whose table is
    logged).

    Args:
      plan: `Plan`.
      log: callable printing one line (the training tables).
      progress: None or a tqdm-like class for progress bars.
      threads: intra-op threads (0: TensorFlow's choice).

    Returns:
      the summaries made or read, in order (each model's float, then
      quantization-aware one).

    Raises:
      epochs.TrainingDiverged: training diverged (the checkpoints of the
        epochs before are kept).
      ValueError, OSError: resume with changed parameters, an unreadable
        checkpoint or run state, a directory that cannot be written.
    """
    runs = dict(resume=plan.resume, overwrite=plan.overwrite, log=log,
                progress=progress, threads=threads,
                extra={"floor_ppl": plan.floor},
                produced={"data_dir": plan.data_dir})
    summaries = []
    for index in range(len(plan.models)):
        summaries += _run_model(plan, index, runs)
    return summaries


def results(plan, summaries):
    """(merged summaries, results table lines): the summaries of this
    command merged into those already in --out (`records.
    merge_summaries`; overwrite drops the rows of the models it
    retrained)."""
    merged = records.merge_summaries(
        plan.previous, summaries,
        dropped=plan.models if plan.overwrite else ())
    return merged, records.results_table(merged, plan.floor)


def write_results(plan, merged, lines, log=print):
    """Writes --out's summary.json (``merged``, the table ``lines``, the
    floor, the corpus) and valid_ppl.png (``log`` says why a plot was
    skipped)."""
    root = RunDir(plan.out)
    # Not `RunDir.write_json`: the file keeps its keys in this order.
    with open(root.summary_file, "w") as f:
        json.dump({"floor_ppl": plan.floor, "corpus": plan.corpus.name,
                   "data_dir": plan.data_dir,
                   "models": [s.to_json() for s in merged],
                   "table": lines}, f, indent=1)
    records.plot_curves(merged, root.plot_file, plan.floor, log=log)
