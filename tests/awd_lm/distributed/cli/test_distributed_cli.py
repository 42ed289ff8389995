"""The distributed programs' shared command line (estimator and
monitored): --hparams parsing and its errors, bad flags and short splits as
one line with exit status 2, the eval line as strict JSON, the model
directory's config."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm import estimator, monitored
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.distributed import cli
from support import ROOT
from support.lm import SCRIPT, one_error_line, ptb_with, script
from support.versions import needs_estimator


def test_parse_hparams_types_and_errors():
    got = cli.parse_hparams("emb_size=16, lr=2.5,variable_bptt=false")
    assert got == {"emb_size": 16, "lr": 2.5, "variable_bptt": False}
    assert cli.parse_hparams("") == {}
    with pytest.raises(ValueError, match="nonsense"):
        cli.parse_hparams("nonsense=1")
    with pytest.raises(ValueError, match="emb_size"):
        cli.parse_hparams("emb_size")


#: The distributed command lines (same flags): the Estimator one only where
#: tf.estimator exists (elsewhere it exits 2 naming the monitored one).
DISTRIBUTED_CLIS = [pytest.param(estimator, marks=needs_estimator,
                                 id="estimator"),
                    pytest.param(monitored, id="monitored")]


# (argv): the Estimator command line (python -m tf1_awd_sparse.awd_lm...).
ESTIMATOR_CASES = [
    (["--train-steps", "0"], "--train-steps"),
    (["--eval-steps", "0"], "--eval-steps"),
    (["--threads", "-1"], "--threads"),
    (["--num-devices", "0"], "--num-devices"),
    (["--save-steps", "-3"], "--save-steps"),
    (["--barrier-timeout", "0"], "--barrier-timeout"),
    (["--max-lifetime", "-1"], "--max-lifetime"),
    (["--hparams", "variable_bptt=maybe"], "--hparams variable_bptt"),
    (["--hparams", "bptt=0"], "--hparams bptt"),
    (["--hparams", "eval_batch_size=-1"], "--hparams eval_batch_size"),
    (["--hparams", "lr=-1"], "--hparams lr"),
    (["--hparams", "nonsense=1"], "--hparams"),
    (["--data-dir", "/nonexistent/ptb"], "/nonexistent/ptb"),
]


@pytest.mark.parametrize("cli", DISTRIBUTED_CLIS)
@pytest.mark.parametrize("argv,name", ESTIMATOR_CASES,
                         ids=[" ".join(c[0]) for c in ESTIMATOR_CASES])
def test_estimator_cli_bad_flag(capsys, tmp_path, argv, name, cli):
    verbosity = tf.logging.get_verbosity()
    try:
        line = one_error_line(capsys, lambda: cli.main(
            ["--model-dir", str(tmp_path / "m")] + argv))
    finally:
        tf.logging.set_verbosity(verbosity)
    assert name in line, line


def test_both_command_lines_read_bools_alike():
    """The same text is the same bool in --hparams and in awd_lm.py (the
    Estimator CLI read 'on' as False)."""
    for text, want in (("on", True), ("Yes", True), ("1", True),
                       ("off", False), ("FALSE", False), ("0", False)):
        assert cli.parse_hparams("variable_bptt=" + text) == {
            "variable_bptt": want}
        args = script.parse_args(["--variable-bptt", text])
        assert args.variable_bptt is want


def test_cli_processes_exit_2_with_one_line(tmp_path):
    """The real processes, not only main(): status 2, one stderr line."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    for argv in ([sys.executable, SCRIPT, "--out", str(tmp_path), "--bptt",
                  "-5"],
                 [sys.executable, "-m", "tf1_awd_sparse.awd_lm.estimator",
                  "--model-dir", str(tmp_path), "--threads", "-1"],
                 [sys.executable, "-m", "tf1_awd_sparse.awd_lm.monitored",
                  "--model-dir", str(tmp_path), "--threads", "-1"]):
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env,
                              universal_newlines=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def _estimator_line(capsys, argv, cli=estimator):
    verbosity = tf.logging.get_verbosity()
    try:
        return one_error_line(capsys, lambda: cli.main(argv))
    finally:
        tf.logging.set_verbosity(verbosity)


@pytest.mark.parametrize("cli", DISTRIBUTED_CLIS)
def test_estimator_short_split_names_file_and_flags(capsys, tmp_path, cli):
    """664 validation tokens in 20 streams of 33: the loop evaluates them
    (one window of 32), the Estimator has whole windows of bptt 35 only.
    Was: 'ids: 664 tokens make streams of 33, too short for one window of
    bptt 35'."""
    data_dir = ptb_with(tmp_path, valid="the cat sat on a mat dog\n" * 83)
    line = _estimator_line(capsys, ["--model-dir", str(tmp_path / "m"),
                                    "--data-dir", data_dir], cli)
    path = os.path.join(data_dir, "valid.txt")
    assert line.startswith("error: valid split (%s): 664 tokens make 20 "
                           "streams of 33, too short for one window of "
                           "--hparams bptt 35" % path), line
    # The largest values that fit, computed independently: 33 - 1 steps;
    # 664 // 18 = 36 tokens per stream = 35 inputs + 1 target.
    assert line.endswith("set --hparams bptt <= 32 or --hparams "
                         "eval_batch_size <= 18"), line
    assert not (tmp_path / "m").exists()
    # The loop takes the same corpus: its windows cover all 32 steps.
    streams = data.batchify(data.read_ptb(data_dir).valid, 20)
    assert streams.shape == (20, 33)
    assert data.bptt_windows(32, 35) == [(0, 32)]


@pytest.mark.parametrize("argv,line", [
    (["--hparams", "hiden_size=3"],
     "error: --hparams: 'hiden_size' is not a parameter; did you mean "
     "'hidden_size'"),
    (["--hparams", "bpt=3"],
     "error: --hparams: 'bpt' is not a parameter; did you mean 'bptt'"),
    (["--hparams", "emb_size"], "error: --hparams: expected key=value, got "
     "'emb_size'"),
])
@pytest.mark.parametrize("cli", DISTRIBUTED_CLIS)
def test_hparams_typo_names_the_key_and_closest_first(capsys, tmp_path, argv,
                                                       line, cli):
    """Was: about 50 keys listed before the bad one."""
    got = _estimator_line(capsys, ["--model-dir", str(tmp_path / "m")] +
                          argv, cli)
    assert got.startswith(line), got
    assert len(got) < 200, got


def test_estimator_eval_line_is_strict_json():
    """json.dumps wrote NaN / Infinity (not JSON) for a diverged model."""
    metrics = {"xent": np.float32(2.5), "perplexity": np.float32(np.inf),
               "loss": np.float32(np.nan), "global_step": np.int64(7)}
    line = cli.eval_line(metrics)
    assert line.startswith("eval: ")

    def refuse(name):
        raise ValueError("not JSON: %s" % name)

    parsed = json.loads(line[len("eval: "):], parse_constant=refuse)
    assert parsed == {"xent": 2.5, "perplexity": None, "loss": None,
                      "global_step": 7.0}
    assert "\n" not in line


def test_monitored_model_dir_names_its_corpus_and_training(tmp_path):
    # The config.json written when a run starts says how and on what it
    # trains; --evaluate-only then finds the corpus without --data-dir.
    from support import lm_api
    from tf1_awd_sparse.awd_lm import monitored
    data_dir = lm_api.write_corpus(str(tmp_path / "data")) or str(
        tmp_path / "data")
    model_dir = str(tmp_path / "model")
    hparams = "emb_size=8,hidden_size=12,batch_size=4,eval_batch_size=3,bptt=6"
    args = monitored.parse_args(["--model-dir", model_dir, "--data-dir",
                                 data_dir, "--hparams", hparams])
    params, corpus = cli.command_params(args)
    cli.write_model_dir(args, params, corpus)
    with open(os.path.join(model_dir, "config.json")) as handle:
        produced = json.load(handle)["produced_by"]
    assert produced["data_dir"] == os.path.abspath(data_dir)
    assert produced["training"]["optimizer"].startswith("clipped SGD")
    assert "fixed windows of 6 steps" in produced["training"]["bptt"]
    assert produced["valid_ppl"] is None
    again = monitored.parse_args(["--model-dir", model_dir,
                                  "--evaluate-only"])
    _, corpus2 = cli.command_params(again)
    assert list(corpus2.vocab) == list(corpus.vocab)
    assert list(corpus2.valid) == list(corpus.valid)
    cli.record_valid_ppl(model_dir, {"perplexity": 12.5, "xent": 2.5})
    with open(os.path.join(model_dir, "config.json")) as handle:
        assert json.load(handle)["produced_by"]["valid_ppl"] == 12.5
