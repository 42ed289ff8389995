"""`make demo`: the AWD-LSTM language model against a plain LSTM, then the
AWD model compressed into a sparse, 8-bit TFLite language model.

Trains `plain` and `awd` with `--preset demo` on the embedded corpus (a
seeded hidden Markov source), one process each, side by side on one core
each (the demo model's matrices are too small for two threads to help one
run), and prints one table: the source's own perplexity (the floor), each
model's test perplexity at its best validation epoch, its gap to the floor,
epochs and seconds. The awd run then compresses its model to 95 % zeros
in the embedding and LSTM kernels (`--compress l0,magnitude
--target-sparsity 0.95`, see `awd_lm.training.compression`): both
techniques fine-tune side by side, the best is pruned, fine-tuned
quantization-aware and exported as float and uint8 TFLite files scored
with the TFLite interpreter; the demo ends with that table (also in
compress/summary.json).  Outputs (checkpoints, TensorBoard events,
summaries, valid_ppl.png) go to runs/demo/, or to `--out DIR` (one folder
per model inside it, with the run's own output in train.log, and
compress/).  Other arguments are passed to both runs (e.g. `--resume`; a
new demo goes to a new `--out DIR`, which keeps the trained one), but a
flag of the compression pipeline (or of --quant's phase, without --quant)
only to the awd run, which compresses: `awd-lm train` refuses a flag its
run would not use.
The embedded corpus is written first as text in the PTB layout
(``data/{train,valid,test}.txt``), to score or train on; the demo ends
with a few sentences drawn from the uint8 TFLite model
(``python -m tf1_awd_sparse.awd_lm.generate``).

The epoch rows are read from each run's JSON files as the run writes them
(state.json after every epoch, summary.json at the end), never from its
printed output, and formatted with `awd_lm.training.records`.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tf1_awd_sparse.awd_lm.training import records  # noqa: E402  (no TensorFlow)
from tf1_awd_sparse.awd_lm.config import presets  # noqa: E402

# The installed command (`awd-lm train`), run as a module so that the
# interpreter of this program is the one that trains.
TRAIN = [sys.executable, "-m", "tf1_awd_sparse.awd_lm", "train"]
MODELS = ("plain", "awd")
#: What the awd run compresses its model with, and to how many zeros.
COMPRESS = "l0,magnitude"
TARGET_SPARSITY = "0.95"
#: The compression stages' run directories inside compress/, with labels.
COMPRESS_RUNS = (("awd+ref", "reference"), ("awd+l0", "l0"),
                 ("awd+l0+cut", "l0_ft"), ("awd+mag", "mag"),
                 ("awd+mag+cut", "mag_ft"), ("awd+pruned+q", "qat"))
POLL_SECONDS = 0.5
#: Words drawn from the uint8 model at the end, and the sentences shown.
SAMPLE_WORDS, SAMPLE_SENTENCES, SAMPLE_SEED = 80, 4, 1


def write_corpus(out):
    """Writes the demo's embedded corpus (the one both runs train on) as
    ``out/data/{train,valid,test}.txt``; returns the directory."""
    from tf1_awd_sparse.awd_lm.corpus import data, synthetic
    from tf1_awd_sparse.awd_lm.config import presets
    params = presets.params_for("demo", "awd")
    corpus, _ = synthetic.hmm_corpus(
        seed=params["hmm_seed"], n_train=params["hmm_train"],
        n_valid=params["hmm_valid"], n_test=params["hmm_test"],
        n_states=params["hmm_states"], vocab_size=params["hmm_vocab"])
    directory = os.path.join(out, "data")
    data.write_ptb(corpus, directory)
    return directory


def print_samples(compress_out):
    """Prints a few sentences drawn from the uint8 TFLite model (nothing if
    the file is missing)."""
    path = os.path.join(compress_out, "tflite_uint8.tflite")
    if not os.path.exists(path):
        return
    command = [sys.executable, "-m", "tf1_awd_sparse.awd_lm.generate",
               "--model", path, "--num-words", str(SAMPLE_WORDS),
               "--seed", str(SAMPLE_SEED)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(HERE)] + [os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(command, stdout=subprocess.PIPE,
                            universal_newlines=True, env=env)
    lines = [l for l in result.stdout.splitlines() if l.strip()]
    print("\nsentences from the uint8 model (python -m "
          "tf1_awd_sparse.awd_lm.generate --model %s --num-words %d "
          "--seed %d):" % (path, SAMPLE_WORDS, SAMPLE_SEED))
    for line in lines[:SAMPLE_SENTENCES]:
        print("  " + line)


def _load(path):
    """A JSON file, or None if it is missing (or, never expected since the
    runs replace files atomically, half written)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (IOError, ValueError):
        return None


class RunWatcher(object):
    """Prints one run's epoch rows from its state.json as they appear, and
    its closing lines from its summary.json.

    Args:
      model: 'plain' or 'awd'.
      out: the run's --out directory (the run dir is ``out/<model>``).
      since: ignore a state.json older than this time (an earlier run's,
        about to be replaced).
    """

    def __init__(self, model, out, since, run_dir=None):
        self.model, self.out, self.since = model, out, since
        self.state_path = os.path.join(run_dir or os.path.join(out, model),
                                       "state.json")
        self.printed = 0

    def _print_epochs(self, epochs):
        for record in epochs:
            if record["epoch"] > self.printed:
                print(records.epoch_row(dict(record, model=self.model)))
                self.printed = record["epoch"]
        sys.stdout.flush()

    def poll(self):
        """Prints the epochs state.json holds that were not printed yet."""
        try:
            fresh = os.path.getmtime(self.state_path) >= self.since
        except OSError:
            return
        state = _load(self.state_path) if fresh else None
        if state:
            self._print_epochs(state["epochs"])

    def finish(self):
        """Prints the rest from summary.json and returns the run's summary
        (None if the run wrote none)."""
        summary = _load(os.path.join(self.out, "summary.json"))
        if summary is None:
            return None
        run = summary["models"][0]
        self._print_epochs(run["epochs"])
        for line in records.end_lines(run):
            print(line)
        return run


def plain_argv(argv):
    """``argv`` without the flags the plain run (no --compress) would not
    use, and refuse: the compression pipeline's and, without --quant,
    --quant's phase's (each with its value)."""
    keys = set(presets.COMPRESS_KEYS)
    if "--quant" not in argv:
        keys |= set(presets.QUANT_KEYS)
    unused = {"--" + k.replace("_", "-") for k in keys if k != "quant"}
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg.partition("=")[0] in unused:
            skip = "=" not in arg
        else:
            kept.append(arg)
    return kept


def main(argv):
    """Runs both models side by side and prints their rows and one table.

    Returns:
      0, or the failed runs' exit status (their output is in train.log).
    """
    argv = list(argv)
    out = os.path.join(os.path.dirname(HERE), "runs", "demo")
    if "--out" in argv:   # the demo's folder; each model gets one inside it
        i = argv.index("--out")
        out = argv[i + 1]
        del argv[i:i + 2]
    start = time.time()
    print("corpus as text: %s/{train,valid,test}.txt" % write_corpus(out))
    procs, watchers = [], []
    print(records.header("model"))
    compress_out = os.path.join(out, "compress")
    for model in MODELS:
        model_out = os.path.join(out, model)
        os.makedirs(model_out, exist_ok=True)
        extra = (["--compress", COMPRESS, "--target-sparsity",
                  TARGET_SPARSITY, "--compress-out", compress_out]
                 if model == "awd" else [])
        with open(os.path.join(model_out, "train.log"), "w") as log:
            procs.append(subprocess.Popen(
                TRAIN + ["--model", model, "--preset", "demo",
                 "--threads", "1", "--no-progress", "--out", model_out]
                + extra + (argv if model == "awd" else plain_argv(argv)),
                stdout=log))
        watchers.append(RunWatcher(model, model_out, start))
    stage_watchers = [RunWatcher(label, None, start,
                                 os.path.join(compress_out, name))
                      for label, name in COMPRESS_RUNS]
    # A run's closing lines as soon as it ends (plain usually stops first).
    summaries = [None] * len(procs)
    pending = list(range(len(procs)))
    while pending:
        time.sleep(POLL_SECONDS)
        for watcher in stage_watchers:
            watcher.poll()
        for i in list(pending):
            watchers[i].poll()
            if procs[i].poll() is not None:
                # A failed run's summary.json, if any, is an earlier run's.
                if procs[i].returncode == 0:
                    summaries[i] = watchers[i].finish()
                pending.remove(i)
    codes = [p.wait() for p in procs]
    if any(codes) or None in summaries:
        print("demo: a run failed (exit codes %s; its output is in %s)"
              % (codes, " and ".join(os.path.join(out, m, "train.log")
                                     for m in MODELS)), file=sys.stderr)
        return max(codes) or 1
    floor = summaries[0]["floor_ppl"]
    lines = records.results_table(summaries, floor)
    print("\n" + "\n".join(lines))
    compressed = _load(os.path.join(compress_out, "summary.json"))
    if compressed is not None:
        print("\ncompression of the awd model (%s), test perplexity and "
              "weights of the embedding and LSTM kernels:" % COMPRESS)
        print("\n".join(compressed["table"]))
    print_samples(compress_out)
    print("total %.0f s (both models at once, one core each); outputs in %s"
          % (time.time() - start, out))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"floor_ppl": floor, "models": summaries, "table": lines},
                  f, indent=1)
    records.plot_curves(summaries, os.path.join(out, "valid_ppl.png"), floor)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
