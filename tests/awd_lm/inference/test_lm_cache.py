"""The continuous cache pointer of LanguageModel (awd_lm.cache) on the tiny
model of support/lm_api.py: a numpy reference written from the
formula (the top layer's outputs read back from the LSTM state token by
token), lambda 0, TF against float and uint8 TFLite, the tuning on
validation text only, files exported before the cache, the command line."""
import os
import subprocess
import sys

import numpy as np
import pytest

from tf1_awd_sparse.awd_lm import LanguageModel
from tf1_awd_sparse.awd_lm.graph import cache
from tf1_awd_sparse.awd_lm.inference import export, lm as lm_module
# test_lm.py's uint8-vs-QAT-checkpoint and float32 tolerances, with the
# cache (a convex mix of p and the cache's p: its relative error is at most
# the larger of theirs, so the log-probability bounds carry over).
from support.lm_api import ProgressRecorder
from support.lm import (FLOAT_LOG_PROB_ATOL, FLOAT_PPL_RTOL, UINT8_PPL_RTOL,
                        UINT8_TOKEN_ATOL)
from support.tolerances import printed_atol

from support import ROOT
CONFIG = cache.CacheConfig(window=7, theta=0.8, lambda_=0.3)


@pytest.fixture
def models(lm_models):
    """The session's tiny language models (tests/conftest.py)."""
    return lm_models


def _split(models, split, lines=None):
    with open(os.path.join(models["data"], split + ".txt")) as handle:
        return "\n".join(handle.read().splitlines()[:lines])


def _reference(model, lines, config):
    """log p of every token of ``lines`` (one document, from <eos> and the
    zero state): the model's full distribution and the top layer's h taken
    from the state after each token, the cache mixed in as the formula
    says, over the whole vocabulary."""
    ids = [model.eos]
    for line in lines:
        ids += model.encode(line.split()) + [model.eos]
    state, keys, out = None, [], []
    for t in range(len(ids) - 1):
        log_probs, state = model.step(np.asarray([[ids[t]]]), state)
        p = np.exp(log_probs[0, -1])
        h = state.arrays[-1][0].astype(np.float64)   # top layer's h
        history = list(range(max(0, t - config.window), t))
        if history:
            weights = np.exp([config.theta * h.dot(keys[i])
                              for i in history])
            p_cache = np.zeros_like(p)
            for i, weight in zip(history, weights / weights.sum()):
                p_cache[ids[i + 1]] += weight
            p = (1 - config.lambda_) * p + config.lambda_ * p_cache
        keys.append(h)
        out.append(np.log(p[ids[t + 1]]))
    return np.asarray(out)


def test_cache_scores_equal_the_formula(models):
    model = models["load"]("float_dir")
    lines = _split(models, "test", 12).splitlines()
    got = model.score(lines, cache=CONFIG)
    np.testing.assert_allclose(np.concatenate(got.log_probs),
                               _reference(model, lines, CONFIG),
                               rtol=0, atol=FLOAT_LOG_PROB_ATOL)
    plain = np.concatenate(model.score(lines).log_probs)
    assert not np.allclose(np.concatenate(got.log_probs), plain)
    # The history carries from one block of lines to the next.
    # float32 rounding only (blocks run other window shapes: 3.5e-7 seen
    # once on TF 1.15, where rtol 1e-12 was allowed); a history lost between
    # blocks moves them by far more.
    blocks = [s for _, s in model.iter_scores(lines, block=5, cache=CONFIG)]
    np.testing.assert_allclose(np.concatenate(blocks),
                               np.concatenate(got.log_probs), rtol=0,
                               atol=FLOAT_LOG_PROB_ATOL)
    # Per line: each line from the zero state and an empty cache.
    per_line = model.score(lines[:4], per_line=True, cache=CONFIG)
    for line, scored in zip(lines[:4], per_line.log_probs):
        np.testing.assert_allclose(scored, _reference(model, [line], CONFIG),
                                   rtol=0, atol=FLOAT_LOG_PROB_ATOL)


def test_lambda_zero_gives_exactly_the_plain_scores(models):
    text = _split(models, "test")
    for key in ("float_dir", "float_tflite"):
        model = models["load"](key)
        for per_line in (False, True):
            np.testing.assert_array_equal(
                np.concatenate(model.score(text, per_line, cache=(
                    5, 1.0, 0.0)).log_probs),
                np.concatenate(model.score(text, per_line).log_probs))
    test = os.path.join(models["data"], "test.txt")
    model = models["load"]("float_dir")
    assert model.evaluate(test, cache=(5, 1.0, 0.0)) == model.evaluate(test)


def test_tf_and_tflite_agree_with_the_cache(models):
    text = _split(models, "test")
    for per_line in (False, True):
        tf_scores = models["load"]("float_dir").score(text, per_line,
                                                      cache=CONFIG)
        lite = models["load"]("float_tflite").score(text, per_line,
                                                    cache=CONFIG)
        np.testing.assert_allclose(np.concatenate(lite.log_probs),
                                   np.concatenate(tf_scores.log_probs),
                                   rtol=0, atol=FLOAT_LOG_PROB_ATOL)
    test = os.path.join(models["data"], "test.txt")
    assert models["load"]("float_tflite").evaluate(test, cache=CONFIG)[
        "perplexity"] == pytest.approx(models["load"]("float_dir").evaluate(
            test, cache=CONFIG)["perplexity"], rel=FLOAT_PPL_RTOL)
    quant = models["load"]("quant_dir").score(text, cache=CONFIG)
    uint8 = models["load"]("uint8_tflite").score(text, cache=CONFIG)
    diff = np.abs(np.concatenate(uint8.log_probs)
                  - np.concatenate(quant.log_probs))
    assert diff.max() < UINT8_TOKEN_ATOL
    assert uint8.perplexity == pytest.approx(quant.perplexity,
                                             rel=UINT8_PPL_RTOL)


def test_tuning_is_the_best_grid_point_on_validation(models):
    model = models["load"]("float_dir")
    valid = _split(models, "valid")
    grid = dict(windows=(3, 20), thetas=(0.1, 1.0), lambdas=(0.1, 0.4))
    config, found = model.tune_cache(valid, details=True, **grid)
    ppl = {(w, t, l): model.perplexity(valid, cache=(w, t, l))
           for w in grid["windows"] for t in grid["thetas"]
           for l in grid["lambdas"]}
    assert tuple(config) == min(ppl, key=ppl.get)
    # The same float32 stream of log-probabilities (one read, batch 1, as
    # perplexity() reads it) mixed in float64 in another order: a few
    # hundred roundings of 2**-53, far below 1e-9.
    assert found["perplexity"] == pytest.approx(min(ppl.values()),
                                                rel=1e-9)
    assert found["base_perplexity"] == pytest.approx(
        model.perplexity(valid), rel=1e-9)


def test_tuning_shows_its_progress_and_chooses_the_same(models):
    model = models["load"]("float_dir")
    valid = _split(models, "valid")
    grid = dict(windows=(3, 20, 50), thetas=(0.1, 1.0), lambdas=(0.1, 0.4))
    ProgressRecorder.made = []
    with_bar = model.tune_cache(valid, details=True,
                                progress=ProgressRecorder,
                                **grid)
    assert with_bar == model.tune_cache(valid, details=True, **grid)
    read, windows = ProgressRecorder.made
    # Every scored token is counted once (the tokens the perplexity is
    # over), and every window of the grid once.
    assert (read.desc, read.n, read.total) == (
        "tune-cache: read", with_bar[1]["tokens"], with_bar[1]["tokens"])
    assert (windows.desc, windows.n, windows.total) == (
        "tune-cache: grid", 3, 3)
    assert read.closed and windows.closed


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m",
                           "tf1_awd_sparse.awd_lm.score"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, cwd=ROOT)


def test_command_line_tunes_on_validation_only(models, tmp_path):
    valid = os.path.join(models["data"], "valid.txt")
    other = tmp_path / "other.txt"
    other.write_text(_split(models, "train", 40))
    test = os.path.join(models["data"], "test.txt")
    printed = []
    for scored in (test, str(other)):
        result = _cli("--model", models["float_tflite"], "--tune-cache",
                      valid, scored)
        assert result.returncode == 0, result.stderr
        printed.append(result.stdout.splitlines())
    assert printed[0][0] == printed[1][0]      # the same cache line
    # stderr is a pipe: the progress is plain lines, one at each end.
    assert "tune-cache: read" in result.stderr
    assert "tune-cache: grid" in result.stderr and "\r" not in result.stderr
    assert printed[0][0].startswith("cache window ")
    window, theta, lambda_ = printed[0][0].split()[2::2]
    expected = models["load"]("float_dir").score(
        _split(models, "test"), cache=(int(window), float(theta),
                                       float(lambda_)))
    assert printed[0][-1].startswith("perplexity ")
    # Another process (threads may reorder sums), printed %.4f.
    assert float(printed[0][-1].split()[1]) == pytest.approx(
        expected.perplexity, rel=FLOAT_PPL_RTOL, abs=printed_atol(4))
    fixed = _cli("--model", models["float_dir"], "--cache-window", "7",
                 "--cache-theta", "0.8", "--cache-lambda", "0.3", test)
    assert fixed.returncode == 0, fixed.stderr
    # Was compared as the string "perplexity %.4f": float32 rounding in
    # another process can move the fourth decimal.
    word, printed_ppl = fixed.stdout.splitlines()[-1].split()
    assert word == "perplexity" and len(printed_ppl.split(".")[1]) == 4
    assert float(printed_ppl) == pytest.approx(models["load"](
        "float_dir").score(_split(models, "test"), cache=CONFIG).perplexity,
        rel=FLOAT_PPL_RTOL, abs=printed_atol(4))
    half = _cli("--model", models["float_dir"], "--cache-window", "7", test)
    assert half.returncode == 2 and "go together" in half.stderr


def test_bad_configs_are_named(models):
    model = models["load"]("float_dir")
    for config, named in (((0, 1.0, 0.1), "cache.window"),
                          ((5, -1.0, 0.1), "cache.theta"),
                          ((5, 1.0, 1.0), "cache.lambda_"),
                          ((5, 1.0), "CacheConfig")):
        with pytest.raises(ValueError, match=named):
            model.score("the cat", cache=config)
    with pytest.raises(ValueError, match="lambdas must be a non-empty"):
        model.tune_cache("the cat", lambdas=())


def test_a_file_exported_before_the_cache_refuses_it(models, tmp_path,
                                                      monkeypatch):
    unrolled = export._unrolled_model

    def without_hidden(*args):
        inputs, outputs, cells = unrolled(*args)
        return inputs, [t for t in outputs
                        if not t.name.startswith("hidden")], cells

    monkeypatch.setattr(export, "_unrolled_model", without_hidden)
    path = str(tmp_path / "old.tflite")
    lm_module.export_model(models["float_dir"], path, batch_size=2,
                           num_steps=4)
    old = LanguageModel.load(path)
    text = _split(models, "test", 5)
    np.testing.assert_allclose(
        np.concatenate(old.score(text).log_probs),
        np.concatenate(models["load"]("float_dir").score(text).log_probs),
        rtol=0, atol=FLOAT_LOG_PROB_ATOL)
    with pytest.raises(ValueError, match="no 'hidden' output.*export the "
                       "model again"):
        old.score(text, cache=CONFIG)
