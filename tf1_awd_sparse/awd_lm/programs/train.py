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
then compresses each model (`tf1_awd_sparse.awd_lm.training.compression`): each
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
    PARAMETERS, PRESETS, STAGE_KEYS, USER_KEYS, parse_value, text_type)
from tf1_awd_sparse.awd_lm.training import (
    TrainingDiverged, check_out as check_run_out, flag_name, plan_run,
    results, run_plan, write_results)

__all__ = ["HELP", "check_out", "parse_args", "explicit_parameters",
           "run_and_report", "main"]

#: The help line of each parameter that has one (its registry entry's).
HELP = dict((p.name, p.help) for p in PARAMETERS if p.help)


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
    checks = {"threads": check_nonnegative_int}
    # One flag per parameter a user sets, in alphabetical order, declared
    # as its registry entry's ``flag`` says.
    for entry in sorted(PARAMETERS, key=lambda entry: entry.name):
        key, flag = entry.name, "--" + entry.name.replace("_", "-")
        if key not in USER_KEYS:
            continue   # the options above, or set by the pipeline
        if entry.flag == "switch":
            group.add_argument(flag, dest=key, action="store_true",
                               default=None, help=entry.help)
        elif entry.flag == "choice":
            group.add_argument(flag, dest=key, default=None, choices=[
                c for c in entry.choices if c is not None], help=entry.help)
        else:
            # Read as text; converted and checked below, so that a bad
            # value is reported with the flag's name and the parameter's
            # range.
            kind = text_type(key)
            group.add_argument(flag, dest=key, default=None,
                               metavar=kind.__name__.upper(),
                               help=entry.help or key)
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
