"""`make demo`: the AWD-LSTM language model against a plain LSTM.

Trains `plain` then `awd` with `--preset demo` on the embedded corpus (a
seeded hidden Markov source) and prints one table: the source's own
perplexity (the floor), each model's test perplexity at its best
validation epoch, its gap to the floor, epochs and seconds.  Outputs
(checkpoints, TensorBoard events, summary.json, valid_ppl.png) go to
runs/demo/.
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_script():
    """examples/awd_lm.py as a module (named apart from the awd_lm package)."""
    spec = importlib.util.spec_from_file_location(
        "awd_lm_script", os.path.join(HERE, "awd_lm.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(HERE), "runs", "demo")
    sys.exit(load_script().main(["--model", "both", "--preset", "demo",
                                 "--out", out] + sys.argv[1:]))
