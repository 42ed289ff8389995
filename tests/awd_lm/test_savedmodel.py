"""The SavedModel export (awd_lm.savedmodel) of a tiny language model
trained for one epoch (support/lm_api.py's corpus and parameters):
its signatures, loaded with tf.saved_model.loader in a fresh graph and
run with saved_model_cli, against LanguageModel.load(run_dir) (the
checkpoint in the TF backend)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support import lm_api
from support.versions import IS_TF2
from tf1_awd_sparse.awd_lm import LanguageModel, savedmodel
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.config import modeldir

from support import ROOT
from support.lm import FLOAT_LOG_PROB_ATOL

#: The exported graph against the checkpoint's, in other batch / window
#: shapes: float32 rounding of the test LM (log-probabilities and the
#: states they come from; the QAT model's fake-quant grids are the same
#: on both sides, and a tie rounded the other way there would move a
#: value by a step: none does in these runs).
ATOL = FLOAT_LOG_PROB_ATOL


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A float run and a quantization-aware run from it, each exported
    once; LanguageModel.load of each run directory."""
    from tf1_awd_sparse.awd_lm.config import presets
    from tf1_awd_sparse.awd_lm.training import train
    root = str(tmp_path_factory.mktemp("savedmodel"))
    corpus = data.read_ptb(lm_api.write_corpus(
        os.path.join(root, "data")))
    from tf1_awd_sparse.awd_lm.config.params import as_params
    float_params, quant_params = presets.split_quant(
        as_params(dict(lm_api.tiny_params(), quant=True)))
    quiet = dict(log=lambda *a: None, threads=1)
    paths = {"root": root, "data": os.path.join(root, "data")}
    for name, params, init in (("float", float_params, None),
                               ("quant", quant_params, "float")):
        run_dir = os.path.join(root, name)
        train.run(corpus, params, run_dir, init_from=init and
                  train.best_checkpoint(paths[init]), **quiet)
        paths[name] = run_dir
        paths[name + "_sm"] = savedmodel.export_saved_model(
            run_dir, os.path.join(root, "exports", name))
    models = {name: LanguageModel.load(paths[name])
              for name in ("float", "quant")}
    paths["lm"] = models
    yield paths
    for model in models.values():
        model.close()


class Loaded(object):
    """A SavedModel loaded into its own graph and session; `call` feeds
    a signature's inputs by key and returns its outputs by key."""

    def __init__(self, path):
        self.graph = tf.Graph()
        self.session = tf.Session(graph=self.graph)
        with self.graph.as_default():
            meta = tf.saved_model.loader.load(self.session, ["serve"], path)
        self.signatures = meta.signature_def

    def call(self, key, **inputs):
        signature = self.signatures[key]
        feed = {signature.inputs[k].name: v for k, v in inputs.items()}
        keys = sorted(signature.outputs)
        values = self.session.run([signature.outputs[k].name for k in keys],
                                  feed)
        return dict(zip(keys, values))


def _states(result, prefix="final"):
    """``{state_<l>_c: ...}`` of a result's ``final_<l>_*`` outputs."""
    return {"state" + k[len(prefix):]: v for k, v in result.items()
            if k.startswith(prefix + "_")}


def _stream(batch, length, vocab, seed):
    return np.random.RandomState(seed).randint(
        0, vocab, size=[batch, length]).astype(np.int32)


@pytest.mark.parametrize("kind", ["float", "quant"])
@pytest.mark.parametrize("batch", [1, 3])
def test_score_and_next_token_match_the_checkpoint(runs, kind, batch):
    lm = runs["lm"][kind]
    loaded = Loaded(runs[kind + "_sm"])
    assert set(loaded.signatures) == set(savedmodel.SIGNATURES)
    stream = _stream(batch, 9, len(lm.words), seed=batch)
    ids, targets = stream[:, :-1], stream[:, 1:]
    expected, state = lm.step(ids)          # float64 [batch, 8, vocab]
    picked = np.take_along_axis(expected, targets[..., None], axis=2)[..., 0]
    scored = loaded.call("score", ids=ids, targets=targets)
    assert scored["log_probs"].shape == (batch, 8)
    np.testing.assert_allclose(scored["log_probs"], picked, atol=ATOL)
    finals = [scored["final_%d_%s" % (i, p)]
              for i in range(len(state.arrays) // 2) for p in "ch"]
    for got, want in zip(finals, state.arrays):
        np.testing.assert_allclose(got, want, atol=ATOL)
    # next_token: the distribution after the last id, states fed or not.
    whole = loaded.call("next_token", ids=ids)
    assert whole["log_probs"].shape == (batch, len(lm.words))
    np.testing.assert_allclose(whole["log_probs"], expected[:, -1],
                               atol=ATOL)
    zeros = {k: np.zeros_like(v) for k, v in _states(whole).items()}
    fed = loaded.call("next_token", ids=ids, **zeros)
    np.testing.assert_allclose(fed["log_probs"], whole["log_probs"],
                               atol=ATOL)
    # Two calls carrying the state == one call over the concatenation.
    first = loaded.call("next_token", ids=ids[:, :5])
    second = loaded.call("next_token", ids=ids[:, 5:], **_states(first))
    for key in whole:
        np.testing.assert_allclose(second[key], whole[key], atol=ATOL)
    assert not np.allclose(first["log_probs"], whole["log_probs"],
                           atol=1e-3)


def test_the_saved_model_directory_opens_as_a_language_model(runs):
    path = runs["float_sm"]
    config = modeldir.read_config(os.path.join(path, "config.json"))
    assert config["checkpoint"] == savedmodel.VARIABLES
    assert config["produced_by"]["stage"] == "saved_model"
    assert config["produced_by"]["source"] == os.path.abspath(runs["float"])
    assert config["words"] == runs["lm"]["float"].words
    with open(os.path.join(runs["data"], "test.txt")) as handle:
        text = handle.read()
    reopened = LanguageModel.load(path)
    try:
        scores = reopened.score(text)
    finally:
        reopened.close()
    want = runs["lm"]["float"].score(text)
    assert scores.oov == want.oov > 0
    np.testing.assert_allclose(np.concatenate(scores.log_probs),
                               np.concatenate(want.log_probs), atol=ATOL)


def _saved_model_cli():
    """The saved_model_cli of this interpreter's environment."""
    script = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    if os.path.isfile(script):
        return [script]
    return [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]


def _printed_results(stdout):
    """``{output key: flat float64 array}`` of saved_model_cli run's
    ``Result for output key K:`` blocks."""
    blocks = re.split(r"^Result for output key (\w+):$", stdout,
                      flags=re.M)
    number = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    return {key: np.array([float(x) for x in re.findall(number, text)])
            for key, text in zip(blocks[1::2], blocks[2::2])}


def test_saved_model_cli_run_matches_python(runs):
    loaded = Loaded(runs["float_sm"])
    stream = _stream(1, 7, len(runs["lm"]["float"].words), seed=5)
    first = loaded.call("next_token", ids=stream[:, :3])
    second = loaded.call("next_token", ids=stream[:, 3:], **_states(first))
    exprs = ["ids=%r" % stream[:, 3:].tolist()] + [
        "%s=%r" % (k, v.astype(np.float64).tolist())
        for k, v in sorted(_states(first).items())]
    result = subprocess.run(
        _saved_model_cli() + ["run", "--dir", runs["float_sm"], "--tag_set",
                              "serve", "--signature_def", "next_token",
                              "--input_exprs", ";".join(exprs)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True)
    assert result.returncode == 0, result.stderr[-2000:]
    printed = _printed_results(result.stdout)
    assert set(printed) == set(second), result.stdout
    for key, value in second.items():
        np.testing.assert_allclose(printed[key], value.ravel(), atol=ATOL,
                                   err_msg=key)


# TF 2's eager loader: every signature input is a required argument.
_EAGER_CALL = """
import json, sys
import numpy as np
import tensorflow as tf
function = tf.saved_model.load(sys.argv[1]).signatures["next_token"]
specs = function.structured_input_signature[1]
ids = np.array(json.loads(sys.argv[2]), np.int32)
states = {k: tf.zeros([ids.shape[0], s.shape[1]]) for k, s in specs.items()
          if k.startswith("state_")}
out = function(ids=tf.constant(ids), **states)
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))
"""


@pytest.mark.skipif(not IS_TF2, reason="tf.saved_model.load (TF 2's eager "
                    "loader of a TF1 SavedModel) exists only on TF 2.x")
def test_tf2_eager_loader_calls_next_token(runs):
    import json
    ids = _stream(2, 4, len(runs["lm"]["float"].words), seed=7)
    result = subprocess.run(
        [sys.executable, "-c", _EAGER_CALL, runs["float_sm"],
         json.dumps(ids.tolist())], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True)
    assert result.returncode == 0, result.stderr[-2000:]
    eager = json.loads(result.stdout.splitlines()[-1])
    want = Loaded(runs["float_sm"]).call("next_token", ids=ids)
    assert set(eager) == set(want)
    for key, value in want.items():
        np.testing.assert_allclose(eager[key], value, atol=ATOL,
                                   err_msg=key)


# TensorFlow's C++ log lines (glog and absl formats), not the program's.
_TF_LOG = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [EWIF] |"
                     r"[EWIF]\d{4} \d\d:\d\d:\d\d\.\d+ )")


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm.savedmodel"] +
        list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, env=env, cwd=ROOT)
    errors = [line for line in result.stderr.splitlines()
              if not _TF_LOG.match(line)]
    return result, errors


def test_command_line_refuses_to_overwrite(runs, tmp_path):
    out = str(tmp_path / "exported")
    made, _ = _cli("--model", runs["float"], "--out", out)
    assert made.returncode == 0, made.stderr[-2000:]
    assert os.path.isfile(os.path.join(out, "saved_model.pb"))
    marker = os.path.join(out, "marker")
    open(marker, "w").close()
    refused, errors = _cli("--model", runs["float"], "--out", out)
    assert refused.returncode == 2
    assert errors == ["error: --out %s exists: give a new --out, or "
                      "replace this SavedModel with --overwrite" % out]
    assert os.path.isfile(marker)
    replaced, _ = _cli("--model", runs["float"], "--out", out,
                       "--overwrite")
    assert replaced.returncode == 0, replaced.stderr[-2000:]
    assert not os.path.exists(marker)
    assert sorted(os.listdir(str(tmp_path))) == ["exported"]  # no staging
    bad, errors = _cli("--model", str(tmp_path), "--out",
                       str(tmp_path / "other"))
    assert bad.returncode == 2 and len(errors) == 1
    assert "no config.json" in errors[0]


def test_overwrite_never_deletes_what_is_not_a_saved_model(runs, tmp_path):
    keep = tmp_path / "notes"
    keep.mkdir()
    (keep / "file.txt").write_text(u"mine")
    with pytest.raises(ValueError, match="no saved_model.pb"):
        savedmodel.export_saved_model(runs["float"], str(keep),
                                      overwrite=True)
    with pytest.raises(ValueError, match="exists"):
        savedmodel.export_saved_model(runs["float"], str(keep))
    assert os.listdir(str(keep)) == ["file.txt"]
    with pytest.raises(modeldir.ConfigError, match="tflite"):
        savedmodel.export_saved_model(str(tmp_path / "missing"),
                                      str(tmp_path / "out"))
