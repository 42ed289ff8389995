"""``awd-lm compress --out RUN --compress TECHNIQUES``: compress the
trained model of a finished run's --out (``awd-lm train``'s run), as the
run records it: its parameters, its corpus and, without --model, its one
trained model. No training flag is needed; one that contradicts the run
is refused. The float model's files are read, never written; finished
stages of an earlier pipeline in --compress-out are kept.

The compression flags (--target-sparsity, --finetune-epochs, ...) are
``awd-lm train --compress``'s: see ``awd-lm train --help``."""
from tf1_awd_sparse.base import _cli, compat as _compat
from tf1_awd_sparse.awd_lm.programs import train
from tf1_awd_sparse.awd_lm.training import flag_name, plan_run


__all__ = ["parse_args", "main"]


def parse_args(argv=None):
    """The command's flags: ``awd-lm train``'s (`train.parse_args`), as
    ``awd-lm compress``; --resume is implied (the run is read back).

    Returns:
      the parsed flags; a bad one, no --compress, or --overwrite
      (compress deletes nothing) ends the program with status 2 and one
      line.
    """
    args = train.parse_args(argv, prog="awd-lm compress",
                            description=__doc__)
    if args.compress is None:
        _cli.fail("compress needs --compress TECHNIQUES (e.g. "
                  "--compress magnitude) and the run's --out")
    if args.overwrite:
        _cli.fail("compress deletes no trained model: leave --overwrite "
                  "out (an earlier pipeline's finished stages are kept; "
                  "--compress-out DIR starts a new one)")
    args.resume = True
    return args


def main(argv=None):
    """``awd-lm compress``: the compression pipeline on the trained float
    model of a finished run, as the run records it (``train --resume``'s
    reading, `tf1_awd_sparse.awd_lm.config.runrecord`): its parameters,
    its corpus (the --data-dir it was trained on, never the embedded
    corpus instead) and, without --model, its one trained model. No
    training flag is needed; one that contradicts the run is refused
    (--max-epochs included: compress trains no float model). The float
    model's files are read, never written; finished stages of an earlier
    pipeline in --compress-out are kept; --out's summary.json keeps its
    other rows.

    Args:
      argv: the flags (default ``sys.argv[1:]``).

    Returns:
      0 (`train.run_and_report`: its exit statuses); bad input (a flag,
      no --compress, --overwrite, a flag contradicting the run) exits 2
      with one line.
    """
    args = parse_args(argv)
    _compat.graph_mode_program()   # TF 2.x: the v1 graph mode it trains in
    try:
        # compress_only: no float model is trained (each must have
        # finished; its summary is read, its files untouched).
        plan = plan_run(
            args.out, train.explicit_parameters(args), model=args.model,
            preset=args.preset, data_dir=args.data_dir, resume=True,
            compress_out=args.compress_out, compress_only=True,
            flag=flag_name)
    except ValueError as e:  # data.DataError, modeldir.ConfigError included
        _cli.fail(e)
    return train.run_and_report(plan, args)
