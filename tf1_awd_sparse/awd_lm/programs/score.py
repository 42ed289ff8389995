"""Scores text files with a trained language model.

    python -m tf1_awd_sparse.awd_lm.score --model PATH [--per-line] FILE...

PATH is a run / stage directory (config.json, vocab.txt, checkpoint) or a
``.tflite`` file with its ``.tflite.json`` sidecar. Prints one line per
non-empty input line, ``<perplexity>\\t<tokens>\\t<line>`` (tokens: its
words and ``<eos>``), then ``tokens N oov M`` and, last, ``perplexity X``
of the whole input. The state carries from line to line and from file to
file (``--per-line``: each line on its own). ``--as-training`` prints only
the last two lines, computed as the training loop evaluates a split (the
stream cut into the model's ``eval_batch_size`` rows, `LanguageModel.
evaluate`): on a corpus' test.txt, its ``test_ppl``. ``-`` reads standard
input.

The continuous cache pointer (`awd_lm.graph.cache`): ``--cache-window W
--cache-theta T --cache-lambda L`` mixes it in with those parameters;
``--tune-cache VALID_FILE`` chooses them on VALID_FILE first (never on
the scored files) and prints first ``cache window W theta T lambda L``
and the validation perplexity without and with it (``cache valid A ->
B``). A ``.tflite`` file needs the ``hidden`` output of
`lm.export_model` for either.
Progress shows on stderr (`base._progress`): a tqdm bar when stderr is a
terminal and tqdm is installed, else a plain line every 30 s and at the
end (``score: N/N line (100%), S s elapsed``). Bad
paths or flags: exit status 2 and one line.
"""
import sys

if __name__ == "__main__":  # the command line: quiet TensorFlow first
    import tf1_awd_sparse.base._quiet  # noqa: F401  pylint: disable=unused-import

from tf1_awd_sparse.base import _cli  # noqa: E402

__all__ = ["PROGRESS_LINES", "parse_args", "refuse_tflite_threads",
           "main"]


#: Kept for compatibility: progress now shows whatever the input's length.
PROGRESS_LINES = 2000


def refuse_tflite_threads(parser, args):
    """Ends the program (status 2, one line) when ``--threads`` is given
    for a ``.tflite`` model, whose interpreter runs single-threaded and
    would ignore it; else sets its default, 1, and checks it (score's and
    generate's).

    Raises:
      SystemExit: (code 2) --threads with a .tflite, or not >= 1.
    """
    import os
    from tf1_awd_sparse.base.scalar_checks import check_positive_int
    if args.threads is not None and args.model.endswith(".tflite") \
            and not os.path.isdir(args.model):
        parser.error("--threads has no effect here: it needs a model "
                     "directory (a TensorFlow session); the .tflite runs "
                     "on the single-threaded interpreter; leave it out")
    args.threads = 1 if args.threads is None else args.threads
    return parser.check_flags(args, {"threads": check_positive_int})


def parse_args(argv):
    """The flags (``--model``, ``--per-line``, ``--threads``, FILE...):
    one line and status 2 for a bad one, or one that would do nothing
    (``--threads`` with a ``.tflite``, `refuse_tflite_threads`)."""
    parser = _cli.ArgumentParser(
        prog="awd-lm score",
        description="Per-line and total perplexity of text files.")
    parser.add_argument("--model", required=True,
                        help="run directory or .tflite file")
    parser.add_argument("--per-line", action="store_true",
                        help="score each line on its own (zero state)")
    parser.add_argument("--as-training", action="store_true",
                        help="only the total, as the training evaluates "
                        "a split (eval_batch_size rows)")
    parser.add_argument("--threads", type=int, default=None,
                        help="TensorFlow's threads (a model directory; "
                        "default 1)")
    parser.add_argument("--cache-window", type=int, default=None,
                        help="continuous cache: previous steps held")
    parser.add_argument("--cache-theta", type=float, default=None,
                        help="continuous cache: inverse temperature")
    parser.add_argument("--cache-lambda", type=float, default=None,
                        help="continuous cache: its weight in [0, 1)")
    parser.add_argument("--tune-cache", metavar="VALID_FILE", default=None,
                        help="choose the cache's parameters on this file")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = refuse_tflite_threads(parser, parser.parse_args(argv))
    if args.as_training and args.per_line:
        parser.error("--as-training and --per-line exclude each other")
    given = [f for f in ("window", "theta", "lambda")
             if getattr(args, "cache_" + f) is not None]
    if given and args.tune_cache is not None:
        parser.error("--tune-cache and --cache-%s exclude each other"
                     % given[0])
    if given and len(given) < 3:
        parser.error("--cache-window, --cache-theta and --cache-lambda go "
                     "together, got only --cache-%s" % ", --cache-".join(
                         given))
    args.cache = None
    if given:
        # Here, not at the top: --help and a bad flag need none of it.
        from tf1_awd_sparse.awd_lm.graph import cache
        try:
            args.cache = cache.check_config(
                (args.cache_window, args.cache_theta, args.cache_lambda),
                "--cache")
        except ValueError as e:
            parser.error(str(e).replace("--cache.lambda_", "--cache-lambda")
                         .replace("--cache.", "--cache-"))
    return args


def _tune(model, path):
    """The cache chosen on a validation file, its line printed; exits 2 on
    an unreadable file or one the model cannot score."""
    lines = _read_lines([path])
    try:
        config, found = model.tune_cache(lines, details=True,
                                         progress=_progress_class())
    except ValueError as e:  # OOVError, a .tflite without 'hidden'
        _cli.fail("--tune-cache %s: %s" % (path, e))
    print("cache window %d theta %g lambda %g" % config)
    print("cache valid %.4f -> %.4f" % (found["base_perplexity"],
                                        found["perplexity"]))
    return config


def _as_training(model, lines, cache=None):
    """Prints the two closing lines as `LanguageModel.evaluate` computes
    them over the lines' words (an ``<eos>`` after each line)."""
    import collections
    oov = collections.Counter()
    # Here: --help does not need it.
    from tf1_awd_sparse.awd_lm.corpus import data
    words = [w for line in lines if line.split()
             for w in line.split() + [data.EOS]]
    ids = model.encode(words, oov)
    result = model.evaluate(ids, cache=cache)
    print("tokens %d oov %d" % (result["tokens"], sum(oov.values())))
    print("perplexity %.4f" % result["perplexity"])
    return 0


def _read_lines(paths):
    """All lines of the files, in order (``-``: stdin); exits 2 on an
    unreadable file."""
    lines = []
    for path in paths:
        try:
            if path == "-":
                lines += sys.stdin.read().splitlines()
            else:
                with open(path, encoding="utf-8") as handle:
                    lines += handle.read().splitlines()
        except (IOError, OSError) as e:
            _cli.fail("%s: cannot read (%s)" % (path, e.strerror or e))
        except UnicodeDecodeError as e:
            _cli.fail("%s: not UTF-8 text (byte %d)" % (path, e.start))
    if not any(line.split() for line in lines):
        _cli.fail("%s: no words to score" % " ".join(paths))
    return lines


def _progress_class():
    """`base._progress.bar`: a tqdm bar on a terminal, else plain periodic
    lines, whatever the input's length."""
    # Here: --help does not need it.
    from tf1_awd_sparse.base import _progress as progress
    return progress.bar


def _progress(lines):
    """The progress over the lines (`_progress_class`)."""
    return _progress_class()(total=len(lines), desc="score", unit="line")


def main(argv=None):
    """Runs the command line; returns 0 (bad input exits 2)."""
    import collections
    args = parse_args(argv)
    lines = _read_lines(args.files)
    from tf1_awd_sparse.base import compat as _compat
    _compat.graph_mode_program()
    # Here, after the flags are read: --help and a bad flag need no
    # TensorFlow.
    from tf1_awd_sparse.awd_lm.graph import checkpoints
    from tf1_awd_sparse.awd_lm.inference import lm
    try:
        model = lm.LanguageModel.load(args.model, threads=args.threads)
    except ValueError as e:  # ConfigError, CheckpointError
        _cli.fail(e)
    cache = args.cache
    if args.tune_cache is not None:
        cache = _tune(model, args.tune_cache)
    if args.as_training:
        try:
            return _as_training(model, lines, cache)
        except ValueError as e:  # OOVError, a stream too short
            _cli.fail(e)
    oov = collections.Counter()
    texts = [line for line in lines if line.split()]
    bar = _progress(texts)
    total = count = 0
    try:
        for text, (_, log_probs) in zip(texts, model.iter_scores(
                texts, args.per_line, oov, cache=cache)):
            total += float(log_probs.sum())
            count += log_probs.size
            print("%.4f\t%d\t%s" % (checkpoints.perplexity(-log_probs.sum()
                                                     / log_probs.size),
                                    log_probs.size, text.strip()))
            if bar is not None:
                bar.update(1)
    except ValueError as e:  # OOVError, a .tflite without 'hidden'
        _cli.fail(e)
    if bar is not None:
        bar.close()
    print("tokens %d oov %d" % (count, sum(oov.values())))
    print("perplexity %.4f" % checkpoints.perplexity(-total / count))
    return 0


if __name__ == "__main__":  # as ``awd-lm score`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("score")
