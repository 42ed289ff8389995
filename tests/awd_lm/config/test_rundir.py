"""The run tree's layout in one place (config.rundir, issue 43): the
paths `awd-lm train --out` writes, `clear` deleting only an earlier
training run's own files, and the atomic JSON write."""
import json
import os

import pytest

from tf1_awd_sparse.awd_lm.config import rundir
from tf1_awd_sparse.awd_lm.training import train

pytestmark = pytest.mark.per_python


def test_the_tree_names_the_layout_the_programs_write(tmp_path):
    out = rundir.RunDir(str(tmp_path))
    assert out.model_run("awd").path == os.path.join(str(tmp_path), "awd")
    assert out.quant_run("awd").path == os.path.join(str(tmp_path),
                                                     "awd_quant")
    pipe = out.compression("awd")
    assert pipe.path == os.path.join(str(tmp_path), "awd_compress")
    assert out.compression("awd", "/x/y").path == "/x/y"
    run = out.model_run("awd")
    # The training loop's own name of the best checkpoint.
    assert run.best_prefix == train.best_checkpoint(run.path)
    assert run.last_prefix == os.path.join(run.path, "last", "model.ckpt")
    assert run.state_file == os.path.join(run.path, rundir.STATE_FILE)
    assert run.summary_file == os.path.join(run.path, rundir.SUMMARY_FILE)
    assert rundir.RUN_FILES == rundir.RUN_FILES
    assert pipe.ramp_run("variational_dropout").path == pipe.join("vd")
    assert pipe.survivors_run("magnitude").path == pipe.join("mag_ft")
    assert pipe.cut_prefix("l0") == pipe.join("l0_cut", "model.ckpt")
    assert pipe.pruned_prefix == pipe.join("pruned", "model.ckpt")
    assert pipe.tflite_file("tflite_float") == pipe.join(
        "tflite_float.tflite")
    assert pipe.pipeline_file == pipe.join("pipeline.json")


def test_clear_deletes_only_an_earlier_runs_files(tmp_path):
    run = rundir.RunDir(str(tmp_path / "awd"))
    run.clear()   # a missing directory stays missing
    assert not os.path.exists(run.path)
    run.makedirs()
    for folder in ("last", "best"):
        os.makedirs(run.join(folder))
        open(run.join(folder, "model.ckpt.index"), "w").close()
    kept = ("config.json", "vocab.txt", "notes.txt")
    for name in kept + (rundir.STATE_FILE, rundir.SUMMARY_FILE,
                        rundir.EVENTS_PREFIX + "123.host"):
        open(run.join(name), "w").close()
    assert run.holds_run() == run.state_file
    run.clear()
    assert sorted(os.listdir(run.path)) == sorted(kept)
    assert run.holds_run() is None


def test_write_json_replaces_whole_or_keeps_the_old_file(tmp_path):
    run = rundir.RunDir(str(tmp_path))
    path = run.write_json("state.json", {"b": 1, "a": [2]})
    with open(path) as f:
        assert f.read() == json.dumps({"a": [2], "b": 1}, indent=1,
                                      sort_keys=True)
    with pytest.raises(TypeError):
        run.write_json("state.json", {"a": object()})
    with open(path) as f:
        assert json.load(f) == {"a": [2], "b": 1}
