"""``awd-lm train`` (moved here from examples/awd_lm.py, which calls it):
train the AWD-LSTM language model (and/or the plain LSTM baseline).

Without --data-dir it trains on the embedded corpus: a seeded hidden Markov
source whose exact test perplexity (the floor no model can beat) is
printed beside the models'.  With --data-dir it reads a Penn Treebank
layout directory (train.txt valid.txt test.txt, or ptb.*.txt).

  awd-lm train --model both --preset demo
  awd-lm train --model awd --preset awd-ptb --data-dir DIR
  awd-lm train --out RUN --resume   # continue a killed run as it was made
  awd-lm train ... --quant       # then fine-tune it 8-bit QAT
  awd-lm train --model awd ... --compress l0,magnitude
                                               # then compress it (see below)

An --out (or --compress-out) that holds a finished or partial run is
refused unless --resume (continue it) is given; a new run goes to a new
--out. (--overwrite deletes the run files in --out and starts over; a new
--out keeps the trained models instead.)

--resume reads the run back (`tf1_awd_sparse.awd_lm.config.runrecord`):
each model's recorded parameters (sizes, epochs, preset), its --quant
phase and its corpus (the --data-dir it was trained on, or the embedded
one); no other flag is needed. A flag given that contradicts the run is
refused (exit 2, one line naming it), except --max-epochs and
--quant-epochs, which extend it. --out's summary.json keeps the rows of
the models not run again.

Exit status: 0 done; 1 training diverged (one line naming the epoch and
step; the checkpoints of the epochs before are kept, nothing diverged is
saved); 2 bad input (one line naming the flag or file).

Outputs in --out: <model>/ (checkpoints last/ and best/, TensorBoard
events, state.json, summary.json), with --quant also <model>_quant/ (the
quantization-aware fine-tuning), summary.json and valid_ppl.png.

--compress TECHNIQUES (variational_dropout, l0, magnitude, comma-separated)
then compresses each model (`tf1_awd_sparse.awd_lm.training.compress`): each
technique fine-tunes the float model for --finetune-epochs at
--finetune-lr: a ramp towards --target-sparsity (40 %), an exact cut to it,
the survivors fine-tuned (60 %), beside a float model fine-tuned for the
same budget (the reference row); the best is pruned, fine-tuned
quantization-aware (--quant-epochs, --quant-lr) and exported as float and
uint8 TFLite files scored with the TFLite interpreter. Its outputs and the
table go to --compress-out (default <out>/<model>_compress), summary.json
there.
"""
import argparse
import json
import os
import sys
import time

from tf1_awd_sparse.base import _cli, _progress, compat as _compat
from tf1_awd_sparse.base.checks import check_nonnegative_int
from tf1_awd_sparse.awd_lm.config import modeldir, presets, runrecord
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.training import compress, records, train

__all__ = ["HELP", "check_out", "parse_args", "main"]

HELP = {
    "emb_size": "embedding size (= last LSTM layer, decoder tied)",
    "hidden_size": "units of the other LSTM layers",
    "num_layers": "LSTM layers",
    "dropout": "locked dropout on the last layer's output (rate)",
    "dropouth": "locked dropout between LSTM layers (rate)",
    "dropouti": "locked dropout on the embedding output (rate)",
    "dropoute": "embedding dropout: whole words (rate)",
    "wdrop": "DropConnect on the recurrent weights (rate)",
    "alpha": "AR weight", "beta": "TAR weight", "wdecay": "L2 weight decay",
    "batch_size": "training batch size",
    "eval_batch_size": "validation/test batch size",
    "bptt": "truncated BPTT window length",
    "variable_bptt": "vary the window length as in the paper (true/false)",
    "lr": "SGD learning rate", "clip": "gradient global-norm clip",
    "optimizer": "ntasgd or sgd (model plain defaults to sgd)",
    "nonmono": "NT-ASGD trigger window",
    "max_epochs": "stop after this many epochs",
    "patience": "stop when validation has not improved for this many epochs",
    "seed": "random seed (graph, BPTT lengths)",
    "hmm_seed": "embedded corpus: source seed",
    "hmm_states": "embedded corpus: hidden states",
    "hmm_vocab": "embedded corpus: vocabulary size",
    "hmm_train": "embedded corpus: training tokens",
    "hmm_valid": "embedded corpus: validation tokens",
    "hmm_test": "embedded corpus: test tokens",
    "quant_epochs": "--quant: epochs of quantization-aware fine-tuning",
    "quant_delay": "--quant: fine-tuning steps computed in float while the "
                   "ranges are learned",
    "weight_bits": "--quant: bits of the cells' weights",
    "activation_bits": "--quant: bits of the cells' activations",
    "compress": "comma-separated compression techniques to run after the "
                "float model: variational_dropout, l0, magnitude",
    "target_sparsity": "--compress: every technique's target fraction of "
                       "zeros (reached exactly by the cut at the ramp's end)",
    "finetune_epochs": "--compress: epochs of each technique's fine-tuning",
    "finetune_lr": "--compress: fine-tuning learning rate (default lr / 4)",
    "finetune_optimizer": "--compress: optimizer of the survivors' and the "
    "reference's fine-tuning (sgd or ntasgd; a ramp runs sgd)",
    "finetune_dropout_scale": "--compress: factor in [0, 1] on every "
    "dropout rate in the compressed model's fine-tunings (not the "
    "reference's)",
    "pruning_block": "--compress: prune and cut in 1 x k blocks along each "
    "matrix's input dimension (1: entry by entry; 4 and 16: the blocks "
    "TFLite's float and int8 sparse kernels take)",
    "average_from_start": "NT-ASGD averaging from the first step (true/false; "
    "the pipeline sets it for the reference, which starts from averaged "
    "weights)",
    "compress_controller": "--compress: VD / L0: factor on the KL / L0 "
    "weight after each ramp epoch whose sparsity lags the schedule (1: off)",
    "sparsity_controller": "VD / L0 (--sparsity): factor on the KL / L0 "
    "weight after each epoch whose sparsity lags the schedule (default: no "
    "controller; the pipeline sets it from --compress-controller)",
    "distill_weight": "--compress: weight of the distillation from the "
    "float model in each technique's fine-tuning (ramp and survivors; "
    "0: off): loss + W * T^2 * CE(teacher softmax, student softmax at T)",
    "distill_temperature": "--compress: the distillation's softmax "
    "temperature T (> 0)",
    "distill_teacher": "--compress: the distillation's teacher: the float "
    "model (float) or the reference, the float model fine-tuned for the "
    "same budget (reference: trained before the techniques)",
    "cut_scope": "--compress: the exact cut to the target at the ramp's end "
    "per weight matrix (matrix) or with one threshold across all (global)",
    "compress_sparsity_weight": "--compress: weight of the KL / L0 loss of "
                                "the VD / L0 fine-tuning (default 1 / "
                                "training tokens)",
    "sparsity_ramp_steps": "steps over which the KL / L0 weight ramps up "
                           "from 0",
    "aux_lr_scale": "learning rate of log_sigma2 / log_alpha as a multiple "
                    "of --lr",
    "pruning": "pruning masks on the embedding and kernels: magnitude "
               "(gradual schedule, as tf.contrib.model_pruning) or fixed",
    "pruning_begin_step": "--pruning magnitude: first step of the schedule",
    "pruning_end_step": "--pruning magnitude: last step of the schedule",
    "pruning_frequency": "--pruning magnitude: steps between mask updates",
    "select_from_epoch": "first epoch whose validation may be the best",
    "select_min_sparsity": "an epoch at this fraction of zeros beats every "
                           "epoch below it",
}

# Options declared by hand above the generated per-parameter flags.
EXPLICIT = ("quant", "quant_lr", "sparsity", "sparsity_weight")


def _parameter(key):
    """The check of a generated flag: the text converted to the
    parameter's type and checked (`presets.parse_value`)."""
    return lambda text, name: presets.parse_value(key, text, name)


# What marks a directory as holding a run: the training loop's files
# (`train`) and the compression pipeline's (`compress`).
RUN_FILES = (train.STATE_FILE, train.SUMMARY_FILE, "last", "best",
             compress.STATE_FILE)


def check_out(args, all_params):
    """Refuses to start over a finished or partial run without --resume
    or --overwrite (a fresh run deletes the files of the one before).

    Raises:
      ValueError: naming the flag, the file found, --resume and a new
        directory (never --overwrite: the run may hold trained models);
        or --resume with --overwrite.
    """
    ways = ("--resume", "--overwrite")
    train.check_run_dir(args.out, args.resume, args.overwrite, names=(),
                        ways=ways, label="--out")
    if args.resume or args.overwrite:
        return
    # (flag, the directory it names, a run file under it): the message
    # names the flag's own directory and the file found.
    found = [("--out", args.out, train.SUMMARY_FILE)]
    for params in all_params:
        for run in (params["model"], params["model"] + "_quant"):
            found += [("--out", args.out, os.path.join(run, name))
                      for name in RUN_FILES]
        if args.compress_out:
            flag, base, sub = "--compress-out", args.compress_out, ""
        else:
            flag, base, sub = "--out", args.out, params["model"] + "_compress"
        found += [(flag, base, os.path.join(sub, name))
                  for name in (compress.STATE_FILE, compress.SUMMARY_FILE)]
    for flag, base, name in found:
        train.check_run_dir(base, names=(name,), ways=ways, label=flag)


def _flag(key):
    """The flag of a parameter (in errors)."""
    return "--" + key.replace("_", "-")


def parse_args(argv=None):
    """Command-line arguments; every preset value has an override flag.

    A bad value ends the program with status 2 and one line naming the
    flag (`tf1_awd_sparse.base._cli`).
    """
    p = _cli.ArgumentParser(
        prog="awd-lm train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["awd", "plain", "both"], default=None,
                   help="model(s) to train (default awd; with --resume the "
                   "models --out holds; compress: its one trained model)")
    p.add_argument("--preset", choices=sorted(presets.PRESETS),
                   default=None, help="hyper-parameter set (default demo; "
                   "with --resume the run's)")
    p.add_argument("--data-dir", help="PTB-layout corpus directory; default: "
                   "the embedded HMM corpus (with --resume: the run's)")
    p.add_argument("--out", default="runs/awd_lm",
                   help="output directory (default runs/awd_lm)")
    p.add_argument("--resume", action="store_true",
                   help="continue the runs found in --out")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the runs found in --out (without it or "
                   "--resume, an --out holding a run is refused)")
    p.add_argument("--threads", type=int, default=0,
                   help="intra-op threads (0: TensorFlow's choice, all "
                   "cores)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars")
    p.add_argument("--compress-out", default=None,
                   help="--compress: output directory (default "
                   "<out>/<model>_compress)")
    group = p.add_argument_group("hyper-parameters (default: the preset's)")
    group.add_argument("--sparsity", choices=["variational_dropout", "l0"],
                       default=None, help="sparse embedding and LSTM "
                       "weights (sparse_layers); prints the sparsity report")
    group.add_argument("--sparsity-weight", dest="sparsity_weight",
                       type=float, default=None, metavar="FLOAT",
                       help="weight of the KL / L0 loss (default 1 / "
                       "training tokens)")
    group.add_argument("--quant", action="store_true", default=None,
                       help="after training each model, fine-tune it "
                       "quantization-aware (8-bit fake-quant cells) from its "
                       "best checkpoint and score both")
    group.add_argument("--quant-lr", dest="quant_lr", type=float,
                       default=None, metavar="FLOAT",
                       help="--quant: fine-tuning learning rate (default "
                       "--lr / 4)")
    checks = {"threads": check_nonnegative_int,
              "sparsity_weight": presets.CHECKS["sparsity_weight"],
              "quant_lr": presets.CHECKS["quant_lr"]}
    for key, default in sorted(presets.DEFAULTS.items()):
        if key in EXPLICIT:
            continue  # the options above
        # Read as text; converted and checked below, so that a bad value
        # is reported with the flag's name and the parameter's range.
        kind = presets.text_type(key)
        group.add_argument("--" + key.replace("_", "-"), dest=key,
                           default=None, metavar=kind.__name__.upper(),
                           help=HELP.get(key, key))
        checks[key] = _parameter(key)
    return p.check_flags(p.parse_args(argv), checks)


def _models(args, compress_only):
    """The float models to run: ``--model``; without it, with --resume,
    those ``--out`` holds (compress: its one trained model), else awd.

    Raises:
      ValueError: compress on an --out holding none, or two without
        --model.
    """
    if args.model:
        return ["plain", "awd"] if args.model == "both" else [args.model]
    found = runrecord.trained_models(args.out) if args.resume else []
    if compress_only and not found:
        raise ValueError("--out %s holds no trained model (awd/ or plain/ "
                         "with a config.json): train one first (awd-lm "
                         "train --out %s ...)" % (args.out, args.out))
    if compress_only and len(found) > 1:
        raise ValueError("--out %s holds two trained models (%s): give "
                         "--model %s or both" % (args.out, ", ".join(found),
                                                 " or ".join(found)))
    return found or ["awd"]


#: What an error on contradicting flags suggests (never a deleting step):
#: one flag, several.
_REMEDY = ("leave it out (the run's own value is used), or train with it "
           "in a new --out")
_REMEDIES = ("leave them out (the run's own values are used), or train "
             "with them in a new --out")


def _model_params(args, model, record, explicit, compress_only):
    """One model's parameters: with a recorded run (--resume, compress),
    the run's own (`runrecord.recorded_overrides`), explicit flags only
    where they agree with it (--resume may change --max-epochs and
    --quant-epochs); else the preset's and the flags'.

    Raises:
      ValueError: compress of a model --out does not hold, or explicit
        flags (--preset included) that contradict the run, all named in
        one line.
    """
    if record is None:
        if compress_only:
            raise ValueError("--model %s: --out %s holds no trained %s "
                             "model (it holds: %s)" % (
                                 model, args.out, model, ", ".join(
                                     runrecord.trained_models(args.out))
                                 or "none"))
        return presets.params_for(args.preset or "demo", model, explicit)
    may_change = () if compress_only else ("max_epochs", "quant_epochs")
    conflicts = runrecord.explicit_conflicts(record, explicit, may_change)
    preset = record.params.get("preset", "demo")
    if args.preset and args.preset != preset:
        conflicts.insert(0, ("preset", args.preset, preset))
    if conflicts:
        raise ValueError(runrecord.conflict_line(
            record.run_dir, conflicts, _flag,
            _REMEDY if len(conflicts) == 1 else _REMEDIES))
    overrides = dict(runrecord.recorded_overrides(record), **explicit)
    return presets.params_for(preset, model, overrides)


def _previous_models(out):
    """The model summaries of ``out``'s summary.json ([] without one).

    Raises:
      ValueError: it is unreadable (named; nothing is trained)."""
    path = os.path.join(out, "summary.json")
    if not os.path.isfile(path):
        return []
    try:
        with open(path) as f:
            return list(json.load(f)["models"])
    except (IOError, OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError("%s: unreadable run summary (%s: %s); nothing was "
                         "changed" % (path, type(e).__name__, e))


def _corpus_dir(args, records):
    """The corpus directory of the run (None: the embedded corpus): the
    recorded runs' (`runrecord.corpus_dir`), else --data-dir."""
    found = {runrecord.corpus_dir(r, args.data_dir)
             for r in records.values() if r is not None}
    if len(found) > 1:
        raise ValueError("--out %s: its models were trained on different "
                         "corpora (%s): give --model" % (args.out, ", ".join(
                             sorted(d or "the embedded corpus"
                                    for d in found))))
    return found.pop() if found else args.data_dir


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


def _plan(args, compress_only):
    """Everything decided before anything is trained or written: the
    models, their parameters and phases, the recorded runs, the corpus
    and the summaries already in --out.

    Raises:
      ValueError: bad input (data.DataError included), one line.
    """
    explicit = {k: getattr(args, k) for k in presets.DEFAULTS
                if getattr(args, k) is not None}
    models = _models(args, compress_only)
    records = {m: runrecord.read(args.out, m) if args.resume else None
               for m in models}
    all_params = [_model_params(args, m, records[m], explicit,
                                compress_only) for m in models]
    if args.compress_out and all_params[0]["compress"] and len(models) > 1:
        raise ValueError(
            "--compress-out names one directory but --model both "
            "compresses two models: leave it out (each gets "
            "<out>/<model>_compress) or give one --model")
    check_out(args, all_params)
    for params in all_params:
        presets.check_used(params, set(explicit), _flag)
    # compress trains no float model: each must have finished (its
    # summary is read here, before anything is written).
    finished = {m: records[m] for m in models
                if compress_only and records[m].summary()}
    data_dir = _corpus_dir(args, records)
    corpus, floor, description = runtime.load_corpus(
        data_dir, as_params(all_params[0]))
    for model, params in zip(models, all_params):
        runtime.check_corpus(corpus, as_params(params), data_dir, _flag)
        _check_vocab(corpus, records[model], data_dir)
    return {"models": models, "params": all_params, "finished": finished,
            "phases": [presets.split_quant(p) for p in all_params],
            "data_dir": os.path.abspath(data_dir) if data_dir else None,
            "corpus": corpus, "floor": floor, "description": description,
            "previous": _previous_models(args.out)}


def _run_model(args, plan, index, runs):
    """One model's phases: the float run (compress: read back, its files
    untouched), --quant's (read back too when compress finds it
    finished), then the compression pipeline. Returns the float and
    quantized summaries."""
    params, (float_params, quant_params) = (plan["params"][index],
                                            plan["phases"][index])
    corpus, model = plan["corpus"], plan["models"][index]
    float_dir = os.path.join(args.out, float_params["model"])
    record = plan["finished"].get(model)
    float_summary = (record.summary() if record else train.run(
        corpus, float_params, float_dir, **runs))
    summaries = [float_summary]
    if record and record.quant_finished and quant_params is not None:
        summaries.append(record.summary(quant=True))
    elif quant_params is not None:   # continued, or added by --quant
        summaries.append(train.run(
            corpus, quant_params, float_dir + "_quant",
            init_from=train.best_checkpoint(float_dir), **runs))
    if params["compress"]:
        result = compress.run_pipeline(
            corpus, params, float_summary, float_dir,
            args.compress_out or (float_dir + "_compress"),
            params["compress"].split(","), resume=args.resume,
            log=runs["log"], threads=max(1, args.threads),
            progress=runs["progress"])
        print("\n".join(result["table"]))
    return summaries


def _write_results(args, plan, summaries, seconds):
    """Prints the results table and writes --out's summary.json and
    valid_ppl.png: the summaries of this command merged into those
    already there (`records.merge_summaries`; --overwrite drops the rows
    of the models it retrained)."""
    merged = records.merge_summaries(
        plan["previous"], summaries,
        dropped=plan["models"] if args.overwrite else ())
    floor, corpus = plan["floor"], plan["corpus"]
    lines = records.results_table(merged, floor)
    print("\n" + "\n".join(lines))
    print("total %.0f s; outputs in %s" % (seconds, args.out))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"floor_ppl": floor, "corpus": corpus.name,
                   "data_dir": plan["data_dir"], "models": merged,
                   "table": lines}, f, indent=1)
    records.plot_curves(merged, os.path.join(args.out, "valid_ppl.png"),
                        floor, log=print)


def main(argv=None, compress_only=False):
    """Trains the chosen models and prints the results table.

    With --resume the run in --out is read back (`awd_lm.config.
    runrecord`): each model's recorded parameters, phases and corpus
    (never the embedded corpus for a run made on --data-dir); explicit
    flags must agree with them, but --max-epochs and --quant-epochs may
    extend it.

    Args:
      argv: the flags (default ``sys.argv[1:]``).
      compress_only: ``awd-lm compress``: no float model is trained (each
        must have finished; its summary is read, its files untouched) and
        --max-epochs / --quant-epochs may not change either.

    Returns:
      0; bad input (a flag, the corpus, an unreadable checkpoint or run
      state, a flag contradicting the recorded run) exits 2 with one line
      on stderr naming the flag or file, nothing deleted; training that
      diverges (a loss NaN, infinite or too large for a float perplexity,
      `train.TrainingDiverged`) exits 1 with one line naming the epoch and
      step, good checkpoints kept.
    """
    args = parse_args(argv)
    _compat.graph_mode_program()   # TF 2.x: the v1 graph mode it trains in
    try:
        plan = _plan(args, compress_only)
    except ValueError as e:  # data.DataError, modeldir.ConfigError included
        _cli.fail(e)
    print(plan["description"])
    runs = dict(resume=args.resume, overwrite=args.overwrite, log=print,
                # The shared display: a bar on a terminal, plain lines.
                progress=None if args.no_progress else _progress.bar,
                threads=args.threads, extra={"floor_ppl": plan["floor"]},
                produced={"data_dir": plan["data_dir"]})
    start = time.time()
    summaries = []
    try:
        for index in range(len(plan["models"])):
            summaries += _run_model(args, plan, index, runs)
    except train.TrainingDiverged as e:
        _cli.fail(e, status=1)   # not bad input: status 1
    except (ValueError, OSError) as e:
        # --resume with changed parameters, an unreadable checkpoint or
        # run state, an --out that cannot be written.
        _cli.fail(e)
    _write_results(args, plan, summaries, time.time() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())  # python -m tf1_awd_sparse.awd_lm train is the command
