"""``awd-lm SUBCOMMAND [FLAGS]``: the language model's whole life in one
command (also ``python -m tf1_awd_sparse.awd_lm``).

  train       train a model (and --quant QAT, --compress compression)
  compress    compress the trained model of a finished run's --out
  export      write a model directory's model as a float / uint8 .tflite
  savedmodel  write a model directory's model as a SavedModel
  score       perplexity of text files under a model directory / .tflite
  generate    sample words from a model
  info        what a model directory, a run's --out or a .tflite holds
  monitored   train with tf.train.MonitoredTrainingSession
  estimator   train with tf.estimator

``awd-lm SUBCOMMAND --help`` shows each one's flags. Exit status: the
subcommand's (0 done, 2 bad input with one line naming the flag or file,
1 a diverged training run). A path that cannot be read or written, and a
TensorFlow that is missing or that the library refuses, end any of them
with one line and status 2, never a traceback. Ctrl-C ends any of them
with one line and status 130 (``train`` and ``compress``: the command
that resumes the run); a reader that closes the output early
(``awd-lm info RUN | head``) ends it silently with status 141, as a unix
tool killed by SIGPIPE. The old module paths (``python -m
tf1_awd_sparse.awd_lm.score``, each program's own module) run through
`run_as_main`, so they end the same way.
"""
import importlib
import os
import sys

from tf1_awd_sparse.base import _cli

__all__ = ["PROGRAMS", "WITHOUT_TENSORFLOW", "main", "run_as_main"]

# The one table of subcommands: the module (imported only when chosen, so
# --help and info stay fast) whose main(argv) runs it.
PROGRAMS = {
    "train": "tf1_awd_sparse.awd_lm.programs.train",
    "compress": "tf1_awd_sparse.awd_lm.programs.compress",
    "export": "tf1_awd_sparse.awd_lm.programs.export",
    "savedmodel": "tf1_awd_sparse.awd_lm.savedmodel",
    "score": "tf1_awd_sparse.awd_lm.programs.score",
    "generate": "tf1_awd_sparse.awd_lm.programs.generate",
    "info": "tf1_awd_sparse.awd_lm.programs.info",
    "monitored": "tf1_awd_sparse.awd_lm.programs.monitored",
    "estimator": "tf1_awd_sparse.awd_lm.programs.estimator",
}

#: The subcommands that never import TensorFlow (info reads JSON files):
#: TensorFlow's quieting (`base._quiet`, which imports it) is skipped.
WITHOUT_TENSORFLOW = ("info",)


def _resume_hint(name, rest):
    """What Ctrl-C prints: how to continue ``train`` / ``compress``, which
    keep every finished epoch and stage (their files are written whole)."""
    if name == "compress":
        return "interrupted; run the same awd-lm compress command again " \
               "to resume it"
    if name in ("estimator", "monitored") and "--evaluate-only" not in rest:
        return "interrupted; the same command continues from --model-dir's " \
               "latest checkpoint"
    if name != "train":
        return "interrupted"
    out = None
    for index, arg in enumerate(rest):
        if arg == "--out" and index + 1 < len(rest):
            out = rest[index + 1]
        elif arg.startswith("--out="):
            out = arg[len("--out="):]
    if out is None:
        return "interrupted"
    if not os.path.isdir(out):
        return "interrupted before the run began: nothing was written"
    return "interrupted; resume with: awd-lm train --out %s --resume" % (
        _cli.quoted(out),)


def main(argv=None):
    """Runs ``awd-lm SUBCOMMAND ...``.

    Args:
      argv: the arguments after the command (default ``sys.argv[1:]``).

    Returns:
      the subcommand's exit status; no or an unknown subcommand prints the
      list and returns 2; ``--help`` the list and returns 0.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in PROGRAMS:
        print("error: unknown subcommand %r; one of: %s"
              % (name, ", ".join(sorted(PROGRAMS))), file=sys.stderr)
        return 2
    sys.argv[0] = "awd-lm " + name   # the programs' usage line
    try:
        if name not in WITHOUT_TENSORFLOW:
            import tf1_awd_sparse.base._quiet  # noqa: F401  (before TF)
        status = importlib.import_module(PROGRAMS[name]).main(rest)
        sys.stdout.flush()   # a closed pipe met here, not at exit
    except KeyboardInterrupt:
        _cli.interrupted(_resume_hint(name, rest))
    except BrokenPipeError:
        _cli.broken_pipe()
    except OSError as e:   # a path no program's own checks caught
        _cli.fail(e)
    except ImportError as e:
        line = _cli.requirement_line(e, sys.argv[0])
        if line is None:
            raise
        _cli.fail(line)
    return 0 if status is None else status


def run_as_main(name):
    """Runs program ``name`` as ``awd-lm NAME`` with this process's
    arguments and exits with its status: the ``python -m`` entry of each
    program's module and of its old path (``python -m
    tf1_awd_sparse.awd_lm.score``), so that they start, fail, end on
    Ctrl-C and on a closed pipe as the command does.

    Raises:
      SystemExit: always, with the program's exit status.
    """
    sys.exit(main([name] + sys.argv[1:]))
