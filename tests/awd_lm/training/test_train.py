"""The training loop (`train.run`): its bad parameters and run directories
refused before anything is written, its evaluation's loss average against
numpy."""
import os

import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.training import train


class _StubGraph(object):
    """What `train.evaluate` uses of a `train.Graph`: fetches and feeds."""
    xent, final_state = "xent", ["c", "h"]

    def zero_state(self, batch):
        return [np.zeros((batch, 1), np.float32)] * 2

    def feed(self, x, y, state):
        return {"n": x.shape[1]}


class _StubSession(object):
    """Returns a float32 loss per window, as a session does."""

    def __init__(self, losses_by_window):
        self.losses = list(losses_by_window)

    def run(self, fetches, feed):
        return [self.losses.pop(0)] + [np.zeros((2, 1), np.float32)] * 2


def test_evaluate_averages_in_python_floats():
    """The mean over windows is a Python float summed in float64 (numpy 2
    would keep float32 + Python float in float32, which json rejects)."""
    stream = np.zeros((2, 48), np.int32)
    windows = data.bptt_windows(stream.shape[1] - 1, 10)
    window_losses = np.random.RandomState(0).uniform(
        3, 6, len(windows)).astype(np.float32)
    got = train.evaluate(_StubSession(window_losses), _StubGraph(), stream,
                         10)
    lengths = np.array([n for _, n in windows], np.float64)
    want = np.sum(window_losses.astype(np.float64) * lengths) / lengths.sum()
    assert type(got) is float
    assert got == want


@pytest.mark.parametrize("key,value", [
    ("bptt", 0), ("max_epochs", 0), ("patience", 0), ("eval_batch_size", -1),
    ("lr", -1.0), ("clip", -1.0), ("seed", -1)])
def test_train_run_bad_params(tmp_path, key, value):
    corpus = data.Corpus(["a", "b"], np.zeros(100, np.int32),
                         np.zeros(50, np.int32), np.zeros(50, np.int32),
                         {}, "tiny")
    params = presets.params_for("demo", "plain")
    params[key] = value
    with pytest.raises(ValueError, match=r"^params\['%s'\]" % key):
        train.run(corpus, params, str(tmp_path / "run"), log=lambda _: None)
    assert not (tmp_path / "run").exists()


def test_library_names_the_split_and_parameter(tmp_path):
    corpus = data.Corpus(["a", "b"], np.zeros(100, np.int32),
                         np.zeros(3, np.int32), np.zeros(50, np.int32),
                         {}, "tiny")
    params = dict(presets.params_for("demo", "plain"), eval_batch_size=2)
    with pytest.raises(data.DataError, match=r"^valid split: 3 tokens are "
                       r"too short for params\['eval_batch_size'\] 2"):
        train.run(corpus, params, str(tmp_path / "run"), log=lambda _: None)


def test_train_run_refuses_a_run_dir_holding_a_run(tmp_path):
    # The Python API refuses what the command line refuses (one check,
    # `train.check_run_dir`), before it reads the corpus or deletes files.
    import tf1_awd_sparse
    run_dir = tmp_path / "run"
    (run_dir / "best").mkdir(parents=True)
    (run_dir / "summary.json").write_text("{}")
    with pytest.raises(train.RunDirError,
                       match=r"run_dir .*run holds a run .*resume=True, or "
                             r"give a new run_dir for a new run$") as info:
        train.run(None, {}, str(run_dir), log=lambda _: None)
    assert isinstance(info.value, tf1_awd_sparse.Error)
    assert isinstance(info.value, ValueError)
    with pytest.raises(train.RunDirError,
                       match="leave overwrite=True out, which would delete"):
        train.run(None, {}, str(run_dir), resume=True, overwrite=True)
    assert sorted(os.listdir(str(run_dir))) == ["best", "summary.json"]
    # An empty or missing directory is a fresh run's, and accepted.
    train.check_run_dir(str(tmp_path / "none"))
    train.check_run_dir(str(tmp_path))
