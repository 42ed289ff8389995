"""Training throughput of the language model's Estimator: one process
against a two-worker loopback parameter-server cluster and MirroredStrategy
over two CPU devices, on this machine.

Every run is a separate ``examples/lm_task.py`` process (the Estimator
command line plus its run log; the cluster: one ps, a chief and a worker,
each single-threaded) training the same small
AWD model with ``--use-vd`` on the embedded corpus; throughput is counted
from each task's run log over its steps after a warm-up, in tokens per
second summed over the tasks (MirroredStrategy: each replica takes its own
batch per step). The printed ratios are medians over rounds, each round
running the variants back to back, against the one-process run of the same
round. On one 2-core machine the cluster is not faster: the figure documents
the overhead of the gRPC parameter server (every step pulls and pushes all
weights over loopback) and of asynchronous workers sharing two cores.

Run: ``.venv/bin/python benchmarks/run.py bench_distributed``
(or ``python benchmarks/bench_distributed.py [--rounds N] [--steps N]``).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "examples"))
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402

from local_cluster import LocalCluster, run_single  # noqa: E402

BATCH, BPTT = 20, 35
HPARAMS = ("emb_size=64,hidden_size=128,num_layers=2,batch_size=%d,bptt=%d,"
           "eval_batch_size=10,hmm_vocab=2000,hmm_states=16,"
           "hmm_train=60000,hmm_valid=2000,hmm_test=2000" % (BATCH, BPTT))
TIMEOUT = 300.0


def _common(model_dir, steps, threads):
    return ["--model-dir", model_dir, "--hparams", HPARAMS, "--use-vd",
            "--threads", str(threads), "--train-steps", str(steps),
            "--eval-steps", "1", "--save-steps", str(10 * steps)]


def tokens_per_second(log, replicas=1):
    """Tokens/s of one task from its run log (steps after the warm-up)."""
    (t0, s0), (t1, s1) = log["first"], log["last"]
    if s1 <= s0 or t1 <= t0:
        return 0.0
    return (s1 - s0) / (t1 - t0) * BATCH * BPTT * replicas


def _load(path):
    with open(path) as f:
        return json.load(f)


def run_one_process(work, steps):
    """Tokens/s of a single-process, single-threaded run."""
    log = os.path.join(work, "single.json")
    run_single(_common(os.path.join(work, "single"), steps, 1)
               + ["--run-log", log], TIMEOUT,
               os.path.join(work, "single.log"))
    return tokens_per_second(_load(log))


def run_mirrored(work, steps):
    """Tokens/s of MirroredStrategy over 2 CPU devices (2 threads)."""
    log = os.path.join(work, "mirrored.json")
    run_single(_common(os.path.join(work, "mirrored"), steps, 2)
               + ["--distribute", "mirrored", "--num-devices", "2",
                  "--run-log", log], TIMEOUT,
               os.path.join(work, "mirrored.log"))
    return tokens_per_second(_load(log), replicas=2)


def run_cluster(work, steps):
    """Tokens/s summed over chief and worker of a loopback ps cluster
    (``steps`` global steps shared by the two)."""
    logs = {}

    def per_task(job, index):
        logs[job] = os.path.join(work, "%s_%d.json" % (job, index))
        return ["--run-log", logs[job]]

    with LocalCluster(_common(os.path.join(work, "cluster"), steps, 1),
                      num_workers=1, timeout=TIMEOUT, log_dir=work,
                      per_task_args=per_task) as cluster:
        cluster.wait()
    return sum(tokens_per_second(_load(logs[job]))
               for job in ("chief", "worker"))


VARIANTS = (
    ("one process, 1 thread", run_one_process),
    ("ps cluster: chief + worker, 1 thread each", run_cluster),
    ("MirroredStrategy, 2 CPU devices", run_mirrored),
)


def measure(rounds, steps):
    """{variant: [tokens/s per round]}, variants back to back per round."""
    results = {name: [] for name, _ in VARIANTS}
    for _ in range(rounds):
        for name, fn in VARIANTS:
            work = tempfile.mkdtemp(prefix="bench_distributed_")
            try:
                results[name].append(fn(work, steps))
            finally:
                shutil.rmtree(work, ignore_errors=True)
    return results


def main(argv=None):
    """Prints each variant's tokens/s and its ratio to one process."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150,
                        help="global steps per run")
    args = parser.parse_args(argv if argv is not None else [])
    print("AWD LM Estimator training (emb 64, 2x128 LSTM, use_vd, vocab "
          "2000), batch %d, bptt %d, %d global steps per run; median over "
          "%d rounds" % (BATCH, BPTT, args.steps, args.rounds))
    results = measure(args.rounds, args.steps)
    base = np.array(results[VARIANTS[0][0]])
    for name, _ in VARIANTS:
        values = np.array(results[name])
        print("  %-42s %8.0f tokens/s  %.2fx of one process"
              % (name, np.median(values), np.median(values / base)))


if __name__ == "__main__":
    main(sys.argv[1:])
