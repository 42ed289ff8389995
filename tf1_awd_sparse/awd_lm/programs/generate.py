"""Generates text with a trained language model.

    python -m tf1_awd_sparse.awd_lm.generate --model PATH --prompt TEXT \\
        --num-words N [--temperature T] [--top-k K] [--seed S]

PATH is a run / stage directory or a ``.tflite`` file with its sidecar.
Prints the prompt and its continuation (``<eos>`` as a line break);
temperature 0 or top-k 1 picks the most likely word, the same seed draws
the same words. Prompt words outside the model's vocabulary are read as
``<unk>`` and named in one line on stderr. Bad paths or flags: exit status
2 and one line.
"""
import collections
import sys

if __name__ == "__main__":  # the command line: quiet TensorFlow first
    import tf1_awd_sparse.base._quiet  # noqa: F401  pylint: disable=unused-import

from tf1_awd_sparse.base import _cli  # noqa: E402

__all__ = ["parse_args", "refuse_unused", "main"]



def parse_args(argv):
    """The flags, checked: one line, exit 2, on a bad one, or on one the
    others leave nothing to do (`refuse_unused`)."""
    from tf1_awd_sparse.base.scalar_checks import (
        check_nonnegative_int, check_positive_int, check_real)
    from tf1_awd_sparse.awd_lm.programs.score import refuse_tflite_threads
    parser = _cli.ArgumentParser(
        prog="awd-lm generate",
        description="Continue a prompt with a trained language model.")
    parser.add_argument("--model", required=True,
                        help="run directory or .tflite file")
    parser.add_argument("--prompt", default="", help="words to continue")
    parser.add_argument("--num-words", type=int, required=True)
    parser.add_argument("--temperature", type=float, default=None,
                        help="0: the most likely word (default 1)")
    parser.add_argument("--top-k", type=int, default=None,
                        help="draw among the k most likely words")
    parser.add_argument("--seed", type=int, default=None,
                        help="the same seed draws the same words")
    parser.add_argument("--threads", type=int, default=None,
                        help="TensorFlow's threads (a model directory; "
                        "default 1)")
    args = parser.check_flags(parser.parse_args(argv), {
        "num_words": check_positive_int,
        "temperature": lambda v, n: check_real(v, n, low=0.0),
        "top_k": check_positive_int, "seed": check_nonnegative_int})
    refuse_unused(parser, args)
    if args.temperature is None:
        args.temperature = 1.0
    return refuse_tflite_threads(parser, args)


def refuse_unused(parser, args):
    """Ends the program (status 2, one line naming the flag) on a flag
    that the others leave nothing to do: --temperature with --top-k 1,
    --top-k with --temperature 0 (either picks the most likely word), and
    --seed with either (nothing is drawn at random).

    Raises:
      SystemExit: (code 2) such a flag.
    """
    greedy = ("--top-k 1" if args.top_k == 1 else "--temperature 0"
              if args.temperature == 0 else None)
    for flag, given in (("--temperature", args.top_k == 1
                         and args.temperature is not None),
                        ("--top-k", args.temperature == 0
                         and args.top_k is not None),
                        ("--seed", greedy and args.seed is not None)):
        if given:
            parser.error("%s has no effect here: it needs a random draw, "
                         "and %s picks the most likely word; leave it out"
                         % (flag, greedy))


def main(argv=None):
    """Runs the command line; returns 0 (bad input exits 2)."""
    args = parse_args(argv)
    from tf1_awd_sparse.base import compat as _compat
    _compat.graph_mode_program()
    # Here, after the flags are read: --help and a bad flag need no
    # TensorFlow.
    from tf1_awd_sparse.awd_lm.inference import lm
    oov = collections.Counter()
    try:
        model = lm.LanguageModel.load(args.model, threads=args.threads)
        text = model.generate(args.prompt, args.num_words,
                              temperature=args.temperature, top_k=args.top_k,
                              seed=args.seed, oov=oov)
    except ValueError as e:  # ConfigError, CheckpointError, OOVError
        _cli.fail(e)
    if oov:
        # A prompt word the model does not know becomes <unk> silently
        # otherwise, and the continuation then seems to ignore it.
        sys.stderr.write("generate: not in the vocabulary, read as <unk>: "
                         "%s\n" % " ".join(sorted(oov)))
    prompt = " ".join(args.prompt.split())
    joiner = "" if not prompt or text.startswith("\n") else " "
    print(prompt + joiner + text)
    return 0


if __name__ == "__main__":  # as ``awd-lm generate`` (`main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("generate")
