"""The language model's distributed command lines on real processes
(issue 7): a loopback parameter-server cluster (ps, chief, worker;
TF_CONFIG; free ports) and MirroredStrategy over two CPU devices, each
through the Estimator (``awd_lm.estimator``, where tf.estimator exists) and
through MonitoredTrainingSession (``awd_lm.monitored``, every version).
Every process is bounded by a timeout and killed at teardown, also when a
check fails."""
import json
import math
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm import estimator, monitored
from tf1_awd_sparse.awd_lm.distributed import cli
from tf1_awd_sparse.awd_lm.distributed.cluster import ClusterBarrierHook
from support.versions import needs_estimator

from support import ROOT, example

# The example's harness, imported by its path (examples/ is no package).
local_cluster = example("local_cluster")
LocalCluster = local_cluster.LocalCluster

free_ports = local_cluster.free_ports

run_single = local_cluster.run_single

tf_config = local_cluster.tf_config

VOCAB = 50
# A tiny model on a tiny embedded corpus: seconds per run.
HPARAMS = ("emb_size=8,hidden_size=16,num_layers=2,batch_size=4,"
           "eval_batch_size=4,bptt=10,hmm_vocab=%d,hmm_states=4,"
           "hmm_train=5000,hmm_valid=1000,hmm_test=1000,lr=5.0" % VOCAB)
STEPS = 60


#: The two command lines: the Estimator one only where tf.estimator exists.
ENTRIES = [pytest.param("estimator", marks=needs_estimator), "monitored"]
MODULES = {"estimator": estimator, "monitored": monitored}


def _args(model_dir, *extra):
    return ["--model-dir", model_dir, "--hparams", HPARAMS, "--threads", "1",
            "--use-vd"] + list(extra)


def _load(path):
    with open(path) as f:
        return json.load(f)


def _evaluate_in_this_process(model_dir, entry):
    # Without --use-vd, which --evaluate-only refuses (no dropout masks).
    return MODULES[entry].run(["--model-dir", model_dir, "--hparams",
                               HPARAMS, "--threads", "1", "--evaluate-only"])


def _check_saved_variables(model_dir, global_step):
    saved = dict(tf.train.list_variables(model_dir))
    assert not [n for n in saved if "mask" in n or "barrier" in n], saved
    assert tf.train.load_variable(model_dir, "global_step") == global_step


@pytest.mark.parametrize("entry", ENTRIES)
def test_ps_chief_worker_cluster(tmp_path, entry):
    model_dir = str(tmp_path / "model")
    logs = {}

    def per_task(job, index):
        logs["%s:%d" % (job, index)] = str(tmp_path / ("%s_%d.json"
                                                       % (job, index)))
        return ["--run-log", logs["%s:%d" % (job, index)]]

    with LocalCluster(_args(model_dir, "--train-steps", str(STEPS),
                            "--barrier-timeout", "60", "--entry", entry),
                      num_workers=1, timeout=100, log_dir=str(tmp_path),
                      per_task_args=per_task) as cluster:
        assert cluster.wait() == {"chief:0": 0, "worker:0": 0}
    chief, worker = _load(logs["chief:0"]), _load(logs["worker:0"])

    # Both trained, and the global step holds exactly their steps (the end
    # barrier keeps the chief's final checkpoint after every step).
    assert chief["steps"] >= 1 and worker["steps"] >= 1
    total = chief["steps"] + worker["steps"]
    assert STEPS <= total <= STEPS + 1   # at most one step in flight
    _check_saved_variables(model_dir, total)

    # Each task's masks live on its own device, were only ever changed by
    # its own update op, and differ between the two (own seeds).
    for log, device in ((chief, "/job:chief/task:0"),
                        (worker, "/job:worker/task:0")):
        assert len(log["masks"]) == 2            # one per LSTM layer
        assert all(m["devices"] == [device] for m in log["masks"])
        assert log["foreign_mask_changes"] == 0
        assert all(0.3 < f < 0.7 for m in log["masks"]
                   for f in m["kept_fraction"])
    assert [m["digest"] for m in chief["masks"]] != [
        m["digest"] for m in worker["masks"]]

    # The loss went down: the untrained model (small uniform weights)
    # predicts about uniformly, log(vocab); the final checkpoint, evaluated
    # in one process on the validation split, is clearly below that.
    metrics = _evaluate_in_this_process(model_dir, entry)
    assert metrics["global_step"] == total
    assert metrics["xent"] < math.log(VOCAB) - 0.15
    losses = chief["losses"] + worker["losses"]
    assert min(losses) < math.log(VOCAB) - 0.15


@pytest.mark.parametrize("entry", ENTRIES)
def test_mirrored_strategy_on_two_cpu_devices(tmp_path, entry):
    model_dir = str(tmp_path / "model")
    log_path = str(tmp_path / "run.json")
    run_single(_args(model_dir, "--distribute", "mirrored", "--num-devices",
                     "2", "--train-steps", "40", "--run-log", log_path,
                     "--entry", entry),
               timeout=100, log_path=str(tmp_path / "mirrored.log"))
    log = _load(log_path)
    assert log["steps"] == 40
    _check_saved_variables(model_dir, 40)
    # Every mask is replica-local: a copy on each CPU device, each replica
    # resampling its own (different draws), never changed by the other.
    assert len(log["masks"]) == 2
    for mask in log["masks"]:
        assert [tf.DeviceSpec.from_string(d).device_index
                for d in mask["devices"]] == [0, 1]
        assert mask["digest"][0] != mask["digest"][1]
    assert log["foreign_mask_changes"] == 0
    losses = np.array(log["losses"])
    assert losses[-10:].mean() < losses[:3].mean() - 0.1
    metrics = _evaluate_in_this_process(model_dir, entry)
    assert metrics["xent"] < math.log(VOCAB) - 0.15


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_ps_ends_itself_after_max_lifetime(tmp_path, entry):
    # A ps never exits by itself; --max-lifetime (which LocalCluster and
    # run_single always pass) bounds it even if its parent dies uncleanly.
    ports = free_ports(2)
    cluster = {"ps": ["localhost:%d" % ports[0]],
               "chief": ["localhost:%d" % ports[1]]}
    env = dict(os.environ, TF_CONFIG=tf_config(cluster, "ps", 0),
               PYTHONPATH=ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm." + entry]
        + _args(str(tmp_path / "model"), "--max-lifetime", "4"),
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, universal_newlines=True,
        start_new_session=True)
    try:
        _, err = proc.communicate(timeout=60)
        # The documented status and one line, not SIGALRM (rc -14 / 142).
        assert proc.returncode == cli.LIFETIME_EXIT_STATUS == 3
        lines = [l for l in err.splitlines() if "lifetime" in l]
        assert lines == ["--max-lifetime: the lifetime limit of 4 s was "
                         "reached; ending this process (exit status 3)"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_barrier_without_tasks_is_named_first():
    with pytest.raises(ValueError, match="^num_tasks"):
        ClusterBarrierHook(0, 10, True)
