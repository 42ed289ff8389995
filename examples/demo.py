"""`make demo`: the AWD-LSTM language model against a plain LSTM.

Trains `plain` and `awd` with `--preset demo` on the embedded corpus (a
seeded hidden Markov source), one process each, side by side on one core
each (the demo model's matrices are too small for two threads to help one
run), and prints one table: the source's own perplexity (the floor), each
model's test perplexity at its best validation epoch, its gap to the floor,
epochs and seconds.  Outputs (checkpoints, TensorBoard events, summaries,
valid_ppl.png) go to runs/demo/, or to `--out DIR` (one folder per model
inside it).  Other arguments are passed to both runs (e.g. `--resume`).
"""
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "awd_lm.py")
MODELS = ("plain", "awd")


def load_script():
    """examples/awd_lm.py as a module (named apart from the awd_lm package)."""
    spec = importlib.util.spec_from_file_location("awd_lm_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _forward(proc, model, first):
    """Prints a run's per-epoch rows and its "stopped" line as they come;
    the corpus line and the column header only from the first run. Each
    run's closing table is left out: the demo prints one for both."""
    for line in proc.stdout:
        name, _, rest = line.partition("|")
        second = rest.split("|", 1)[0].strip()
        if first and second == "epoch":
            line = "model".ljust(len(name)) + "|" + rest   # header of both
        elif not ((name.strip() == model and (second.isdigit()
                                              or second.startswith("stopped")))
                  or (first and line.startswith("corpus"))):
            continue
        sys.stdout.write(line)
        sys.stdout.flush()


def main(argv):
    argv = list(argv)
    out = os.path.join(os.path.dirname(HERE), "runs", "demo")
    if "--out" in argv:   # the demo's folder; each model gets one inside it
        i = argv.index("--out")
        out = argv[i + 1]
        del argv[i:i + 2]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.time()
    procs, threads = [], []
    for i, model in enumerate(MODELS):
        proc = subprocess.Popen(
            [sys.executable, SCRIPT, "--model", model, "--preset", "demo",
             "--threads", "1", "--no-progress",
             "--out", os.path.join(out, model)] + argv,
            stdout=subprocess.PIPE, universal_newlines=True, env=env)
        procs.append(proc)
        threads.append(threading.Thread(target=_forward,
                                        args=(proc, model, i == 0)))
        threads[-1].start()
    codes = [p.wait() for p in procs]
    for t in threads:
        t.join()
    if any(codes):
        print("demo: a run failed (exit codes %s)" % codes, file=sys.stderr)
        return max(codes)
    summaries = []
    for model in MODELS:
        with open(os.path.join(out, model, "summary.json")) as f:
            summaries.append(json.load(f)["models"][0])
    floor = summaries[0]["floor_ppl"]
    script = load_script()
    lines = script.results_table(summaries, floor)
    print("\n" + "\n".join(lines))
    print("total %.0f s (both models at once, one core each); outputs in %s"
          % (time.time() - start, out))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"floor_ppl": floor, "models": summaries, "table": lines},
                  f, indent=1)
    script.train.plot_curves(summaries, os.path.join(out, "valid_ppl.png"),
                             floor)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
