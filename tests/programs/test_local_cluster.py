"""examples/local_cluster.py, the loopback cluster's harness: its TF_CONFIG
and free ports; it starts its tasks in the caller's working directory
(issue 10.5): a relative --model-dir lands there, not in the directory the
package or the harness lives in."""
import json
import os

import pytest
import tensorflow.compat.v1 as tf

from support import ROOT, example

# The example's harness, imported by its path (examples/ is no package).
local_cluster = example("local_cluster")
run_single = local_cluster.run_single
free_ports = local_cluster.free_ports
tf_config = local_cluster.tf_config

HPARAMS = ("emb_size=4,num_layers=1,batch_size=2,"
           "eval_batch_size=2,bptt=5,hmm_vocab=20,hmm_states=2,"
           "hmm_train=400,hmm_valid=100,hmm_test=100")


def test_relative_model_dir_resolves_in_callers_cwd(tmp_path, monkeypatch):
    caller = tmp_path / "caller"
    caller.mkdir()
    monkeypatch.chdir(str(caller))
    relative = os.path.join("runs", "relative_model_dir_probe")
    run_single(["--model-dir", relative, "--hparams", HPARAMS,
                "--threads", "1", "--train-steps", "2", "--eval-steps", "1",
                "--save-steps", "100"],
               timeout=90, log_path=str(tmp_path / "task.log"))
    model_dir = str(caller / relative)
    assert tf.train.latest_checkpoint(model_dir), os.listdir(str(caller))
    assert tf.train.load_variable(model_dir, "global_step") == 2
    for elsewhere in (ROOT, os.path.join(ROOT, "examples")):
        assert not os.path.exists(os.path.join(elsewhere, relative))


def test_tf_config_and_free_ports():
    ports = free_ports(3)
    assert len(set(ports)) == 3
    cluster = {"ps": ["localhost:%d" % ports[0]],
               "chief": ["localhost:%d" % ports[1]],
               "worker": ["localhost:%d" % ports[2]]}
    config = json.loads(tf_config(cluster, "worker", 0))
    assert config == {"cluster": cluster,
                      "task": {"type": "worker", "index": 0}}
    with pytest.raises(ValueError, match="worker:1"):
        tf_config(cluster, "worker", 1)
