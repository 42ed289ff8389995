"""``awd-lm compress TRAIN-FLAGS --compress TECHNIQUES``: compress the
models of a finished run's --out (see `main`)."""
import sys

from tf1_awd_sparse.base import _cli
from tf1_awd_sparse.awd_lm.programs import train


__all__ = ["main"]

def main(argv=None):
    """``awd-lm compress``: compression needs the trained float model's
    summary and its corpus, which only the training program's run holds,
    so it is ``train --resume`` on the finished run (its models are found
    finished and not trained again) with --compress required.

    Returns:
      the train program's exit status; no --compress exits 2.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not any(a == "--compress" or a.startswith("--compress=")
               for a in argv):
        if "-h" not in argv and "--help" not in argv:
            _cli.fail("compress needs --compress TECHNIQUES (e.g. "
                      "--compress magnitude), with train's flags of the run")
    if "--resume" not in argv and "--overwrite" not in argv:
        argv = list(argv) + ["--resume"]
    return train.main(argv)
