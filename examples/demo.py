"""`make demo`: the AWD-LSTM language model against a plain LSTM.

Trains `plain` then `awd` with `--preset demo` on the embedded corpus (a
seeded hidden Markov source) and prints one table: the source's own
perplexity (the floor), each model's test perplexity at its best
validation epoch, its gap to the floor, epochs and seconds.  Outputs
(checkpoints, TensorBoard events, summary.json, valid_ppl.png) go to
runs/demo/.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import awd_lm  # noqa: E402  (examples/awd_lm.py, the one script)

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))), "runs", "demo")
    sys.exit(awd_lm.main(["--model", "both", "--preset", "demo", "--out", out]
                         + sys.argv[1:]))
