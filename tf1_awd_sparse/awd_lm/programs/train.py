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
each model's recorded parameters (sizes, epochs, preset), its corpus (the
--data-dir it was trained on, or the embedded one) and its whole plan,
recorded when it started: --quant and --compress with their flags and
--compress-out, so a run killed in its float phase finishes them as
asked; no other flag is needed. A flag given that contradicts the run is
refused (exit 2, one line naming it), except --max-epochs and
--quant-epochs, which extend it (they override the record), and --quant
or --compress on a run that planned none, which add the phase. --out's
summary.json keeps the rows of the models not run again.

A flag that no model of the run would use is refused (exit 2, one line
naming it and what it needs): e.g. --target-sparsity without --compress,
--quant-delay without --quant or --compress, --pruning-end-step without
--pruning magnitude, a dropout with --model plain, an --hmm-* size with
--data-dir, --compress-out without --compress.

Exit status: 0 done; 1 training diverged (one line naming the epoch and
step; the checkpoints of the epochs before are kept, nothing diverged is
saved); 2 bad input (one line naming the flag or file).

Outputs in --out: <model>/ (checkpoints last/ and best/, TensorBoard
events, state.json, summary.json), with --quant also <model>_quant/ (the
quantization-aware fine-tuning), summary.json and valid_ppl.png.

--compress TECHNIQUES (variational_dropout, l0, magnitude, comma-separated)
then compresses each model (`tf1_awd_sparse.awd_lm.training.compress`): each
technique fine-tunes the float model for --finetune-epochs at
--finetune-lr: a ramp towards --target-sparsity (--ramp-fraction, default
40 %), an exact cut to it, the survivors fine-tuned (the rest), beside a float model fine-tuned for the
same budget (the reference row); the best is pruned, fine-tuned
quantization-aware (--quant-epochs, --quant-lr) and exported as float and
uint8 TFLite files scored with the TFLite interpreter. Its outputs and the
table go to --compress-out (default <out>/<model>_compress), summary.json
there.
"""
import argparse
import sys
import time

from tf1_awd_sparse.base import _cli, _progress, compat as _compat
from tf1_awd_sparse.base.checks import check_nonnegative_int
from tf1_awd_sparse.awd_lm.config import (
    CHECKS, PRESETS, STAGE_KEYS, USER_KEYS, parse_value, text_type)
from tf1_awd_sparse.awd_lm.training import (
    TrainingDiverged, check_out as check_run_out, flag_name, plan_run,
    results, run_plan, write_results)

__all__ = ["HELP", "check_out", "parse_args", "explicit_parameters",
           "run_and_report", "main"]

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
    "TFLite's float and int8 sparse kernels take; 16 gives the fastest "
    "file, `export --lstm fused`; its best recipe measured adds "
    "--table-rank 16 --table-rank-rows 4000 --distill-weight 1 "
    "--distill-teacher reference --finetune-dropout-scale 0.25: "
    "docs/results.md)",
    "compress_controller": "--compress: VD / L0: factor on the KL / L0 "
    "weight after each ramp epoch whose sparsity lags the schedule (1: off)",
    "distill_weight": "--compress: weight of the distillation from the "
    "float model in each technique's fine-tuning (ramp and survivors; "
    "0: off): loss + W * T^2 * CE(teacher softmax, student softmax at T)",
    "distill_temperature": "--compress: the distillation's softmax "
    "temperature T (> 0)",
    "distill_teacher": "--compress: the distillation's teacher: the float "
    "model (float) or the reference, the float model fine-tuned for the "
    "same budget (reference: trained before the techniques)",
    "table_sparsity": "--compress: uneven budgets: the table's (embedding "
    "and tied decoder) own fraction of zeros; the kernels share the rest of "
    "the model's zeros, --target-sparsity x all weights (default: every "
    "matrix at --target-sparsity; with --cut-scope matrix)",
    "table_rank": "--compress magnitude: the compressed model's table is "
    "its pruned self plus a dense rank-r product, so that every word, also "
    "one whose row is pruned away, keeps r numbers of its own (0: off; "
    "still tied; the fused file stores the two parts)",
    "table_rank_rows": "--table-rank: the part on the vocabulary's first K "
    "words only, the most frequent (its ids are sorted by training "
    "frequency): the fused file's sparse decoder pays for each row it "
    "reads, so K words cost less time than all (0: every word)",
    "ship_ppl_target": "--compress: the recommended file (under the table, "
    "in summary.json, awd-lm info and export) is the fastest TFLite file "
    "whose test perplexity is at most this x /ref's, ties the smallest; "
    "none within it: the lowest perplexity",
    "ramp_fraction": "--compress: the fraction of --finetune-epochs the "
    "ramp takes (magnitude's schedule, the VD / L0 weight's rise) before "
    "the exact cut; the survivors are fine-tuned for the rest",
    "small_dense": "--compress: also train a small-dense model, the thing "
    "to do instead of compressing: the same architecture narrower "
    "(emb_size = hidden_size) so that its uint8 file has the bytes of the "
    "compressed model's smallest file, from scratch for the float model's "
    "epochs, then quantization-aware; its rows small_dense* in the table",
    "group_lasso": "--compress magnitude: weight G of a group lasso on the "
    "pruned weights' 1 x k blocks in the ramp (not the survivors' "
    "fine-tuning): loss + G * sum over blocks of sqrt(entries) * L2 norm "
    "(0: off; docs/results.md measures it)",
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
}

# Options declared by hand above the generated per-parameter flags.
EXPLICIT = ("quant", "quant_lr", "sparsity", "sparsity_weight",
            "small_dense")


def _parameter(key):
    """The check of a generated flag: the text converted to the
    parameter's type and checked (`presets.parse_value`)."""
    return lambda text, name: parse_value(key, text, name)


def check_out(args, configs):
    """Refuses to start over a finished or partial run without --resume
    or --overwrite (`pipeline.check_out`, which `pipeline.plan_run`
    calls).

    Raises:
      ValueError: naming the flag, the file found, --resume and a new
        directory (never --overwrite: the run may hold trained models);
        or --resume with --overwrite.
    """
    check_run_out(args.out, args.resume, args.overwrite, args.compress_out,
                  configs)


def _refuse_stage_flags(argv):
    """Ends the program (status 2, one line) on a flag of a stage key
    (`params.STAGE_KEYS`): the pipeline sets those for a stage; they are
    no flags."""
    for arg in argv:
        key = arg.partition("=")[0][2:].replace("-", "_") \
            if arg.startswith("--") else None
        if key in STAGE_KEYS:
            _cli.fail("%s is not a flag: the pipeline sets %s for a stage "
                      "of a run (see --help for the flags)"
                      % (arg.partition("=")[0], key))


def parse_args(argv=None, prog="awd-lm train", description=None):
    """Command-line arguments; every parameter a user sets
    (`params.USER_KEYS`) has an override flag, the stage keys
    (`params.STAGE_KEYS`, set by the pipeline) none.

    Args:
      argv: the flags (default ``sys.argv[1:]``).
      prog: the command's name in --help and errors (``awd-lm compress``
        parses the same flags).
      description: the --help text (default: this program's).

    A bad value ends the program with status 2 and one line naming the
    flag (`tf1_awd_sparse.base._cli`); so does a stage key's flag.
    """
    _refuse_stage_flags(sys.argv[1:] if argv is None else argv)
    p = _cli.ArgumentParser(
        prog=prog, description=description or __doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["awd", "plain", "both"], default=None,
                   help="model(s) to train (default awd; with --resume the "
                   "models --out holds; compress: its one trained model)")
    p.add_argument("--preset", choices=sorted(PRESETS),
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
    group.add_argument("--small-dense", dest="small_dense",
                       action="store_true", default=None,
                       help=HELP["small_dense"])
    checks = {"threads": check_nonnegative_int,
              "sparsity_weight": CHECKS["sparsity_weight"],
              "quant_lr": CHECKS["quant_lr"]}
    for key in sorted(USER_KEYS):
        if key in EXPLICIT:
            continue  # the options above
        # Read as text; converted and checked below, so that a bad value
        # is reported with the flag's name and the parameter's range.
        kind = text_type(key)
        group.add_argument("--" + key.replace("_", "-"), dest=key,
                           default=None, metavar=kind.__name__.upper(),
                           help=HELP.get(key, key))
        checks[key] = _parameter(key)
    return p.check_flags(p.parse_args(argv), checks)


def explicit_parameters(args):
    """{key: value} of the parameter flags given (of `params.USER_KEYS`):
    what the run's plan checks against a recorded run."""
    return {k: getattr(args, k) for k in USER_KEYS
            if getattr(args, k) is not None}


def run_and_report(plan, args):
    """Runs a planned command (`pipeline.run_plan`): prints the corpus,
    the training tables and the results table, writes --out's summary.json
    and valid_ppl.png (`pipeline.write_results`). ``awd-lm train`` and
    ``awd-lm compress`` end with it.

    Args:
      plan: `pipeline.Plan` (`pipeline.plan_run`).
      args: the parsed flags (`parse_args`): --out, --threads,
        --no-progress are read.

    Returns:
      0; training that diverges exits 1, an unreadable checkpoint or run
      state or an --out that cannot be written exits 2, each with one
      line.
    """
    print(plan.description)
    start = time.time()
    try:
        summaries = run_plan(
            plan, log=print, threads=args.threads,
            # The shared display: a bar on a terminal, plain lines.
            progress=None if args.no_progress else _progress.bar)
    except TrainingDiverged as e:
        _cli.fail(e, status=1)   # not bad input: status 1
    except (ValueError, OSError) as e:
        # --resume with changed parameters, an unreadable checkpoint or
        # run state, an --out that cannot be written.
        _cli.fail(e)
    merged, lines = results(plan, summaries)
    print("\n" + "\n".join(lines))
    print("total %.0f s; outputs in %s" % (time.time() - start, args.out))
    write_results(plan, merged, lines, log=print)
    return 0


def main(argv=None):
    """Trains the chosen models and prints the results table
    (`pipeline.plan_run`, then `run_and_report`).

    With --resume the run in --out is read back (`awd_lm.config.
    runrecord`): each model's recorded parameters, phases and corpus
    (never the embedded corpus for a run made on --data-dir); explicit
    flags must agree with them, but --max-epochs and --quant-epochs may
    extend it.

    Args:
      argv: the flags (default ``sys.argv[1:]``).

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
        plan = plan_run(
            args.out, explicit_parameters(args), model=args.model,
            preset=args.preset, data_dir=args.data_dir, resume=args.resume,
            overwrite=args.overwrite, compress_out=args.compress_out,
            flag=flag_name)
    except ValueError as e:  # data.DataError, modeldir.ConfigError included
        _cli.fail(e)
    return run_and_report(plan, args)


if __name__ == "__main__":  # as ``awd-lm train`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("train")
