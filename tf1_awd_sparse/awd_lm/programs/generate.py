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

__all__ = ["parse_args", "main"]



def parse_args(argv):
    """The flags, checked (one line, exit 2, on a bad one)."""
    from tf1_awd_sparse.base.checks import (
        check_nonnegative_int, check_positive_int, check_real)
    parser = _cli.ArgumentParser(
        prog="awd-lm generate",
        description="Continue a prompt with a trained language model.")
    parser.add_argument("--model", required=True,
                        help="run directory or .tflite file")
    parser.add_argument("--prompt", default="", help="words to continue")
    parser.add_argument("--num-words", type=int, required=True)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    return parser.check_flags(args, {
        "num_words": check_positive_int,
        "temperature": lambda v, n: check_real(v, n, low=0.0),
        "top_k": check_positive_int, "seed": check_nonnegative_int,
        "threads": check_positive_int})


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


if __name__ == "__main__":
    sys.exit(main())
