"""``awd-lm compress --out RUN --compress TECHNIQUES``: compress the
models of a finished run's --out (see `main`)."""
import sys

from tf1_awd_sparse.base import _cli
from tf1_awd_sparse.awd_lm.programs import train


__all__ = ["main"]


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

    Returns:
      the train program's exit status; no --compress, or --overwrite
      (compress deletes nothing), exits 2 with one line.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    helping = "-h" in argv or "--help" in argv
    if not helping and not any(a == "--compress" or
                               a.startswith("--compress=") for a in argv):
        _cli.fail("compress needs --compress TECHNIQUES (e.g. "
                  "--compress magnitude) and the run's --out")
    if "--overwrite" in argv:
        _cli.fail("compress deletes no trained model: leave --overwrite "
                  "out (an earlier pipeline's finished stages are kept; "
                  "--compress-out DIR starts a new one)")
    if "--resume" not in argv:
        argv = list(argv) + ["--resume"]
    return train.main(argv, compress_only=True)
