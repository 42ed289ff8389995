"""Bad input to the language model's command lines and library (issue 13):
every case ends in a named error (CLI: exit status 2 and one line on stderr
naming the flag or file; library: ValueError naming the parameter), never a
hang, a TensorFlow abort, a traceback or a meaningless run with exit 0."""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.corpus import data, runtime
from tf1_awd_sparse.awd_lm import estimator, monitored
from tf1_awd_sparse.awd_lm.inference import export
from tf1_awd_sparse.awd_lm.distributed import cli, input_fn
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import USER_KEYS
from tf1_awd_sparse.awd_lm.training import train
from tf1_awd_sparse.quantization import export_tflite
from weight_drop_lstm import WeightDropLSTMCell
from tf1_awd_sparse.awd_lm.distributed.cluster import ClusterBarrierHook
from support import ROOT
from support.lm import (PARAMS, SCRIPT, TINY, make_features, one_error_line,
                        script, untrained_lm_file, write_ptb)
from tf1_awd_sparse.base import compat as _compat
from support.versions import needs_estimator
from support.lm_api import tree_bytes

#: The distributed command lines (same flags): the Estimator one only where
#: tf.estimator exists (elsewhere it exits 2 naming the monitored one).
DISTRIBUTED_CLIS = [pytest.param(estimator, marks=needs_estimator,
                                 id="estimator"),
                    pytest.param(monitored, id="monitored")]





# (flag, bad value): examples/awd_lm.py. Each fails before any training.
SCRIPT_CASES = [
    ("--bptt", "0"), ("--bptt", "-5"), ("--bptt", "2.5"),
    ("--max-epochs", "0"), ("--patience", "0"), ("--threads", "-1"),
    ("--eval-batch-size", "-1"), ("--batch-size", "0"),
    ("--lr", "-1"), ("--lr", "0"), ("--lr", "nan"), ("--clip", "-1"),
    ("--dropout", "1"), ("--wdrop", "-0.1"), ("--wdecay", "-0.5"),
    ("--variable-bptt", "maybe"), ("--seed", "-1"), ("--nonmono", "0"),
    ("--optimizer", "adam"), ("--emb-size", "x"), ("--num-layers", "0"),
    ("--sparsity-weight", "0"), ("--quant-lr", "-1"),
    ("--quant-epochs", "0"), ("--quant-delay", "-1"),
    ("--hmm-vocab", "0"), ("--hmm-train", "-1"), ("--weight-bits", "9"),
    ("--group-lasso", "-1e-05"), ("--ramp-fraction", "1"),
    ("--ramp-fraction", "0"),
]


@pytest.mark.parametrize("flag,value", SCRIPT_CASES,
                         ids=["%s=%s" % c for c in SCRIPT_CASES])
def test_awd_lm_script_bad_flag(capsys, tmp_path, flag, value):
    # flag=value: argparse would take e.g. '-1e-6' after a space for an
    # option.
    line = one_error_line(capsys, lambda: script.main(
        ["--out", str(tmp_path / "out"), "%s=%s" % (flag, value)]))
    assert flag in line and value in line, line
    assert not (tmp_path / "out").exists()   # nothing was written


def test_one_compress_out_for_two_models_is_refused(capsys, tmp_path):
    """Both models' pipelines would write (and resume) in one directory."""
    line = one_error_line(capsys, lambda: script.main(
        ["--out", str(tmp_path / "out"), "--model", "both", "--compress",
         "l0", "--compress-out", str(tmp_path / "c")]))
    assert "--compress-out" in line and "--model" in line, line
    assert not (tmp_path / "out").exists()


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
        assert estimator.parse_hparams("variable_bptt=" + text) == {
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


@pytest.fixture(scope="module")
def two_epochs(tmp_path_factory):
    """(data dir, out dir) of a finished two-epoch run, trained once."""
    root = tmp_path_factory.mktemp("two_epochs")
    data_dir = str(root / "ptb")
    os.mkdir(data_dir)
    write_ptb(data_dir)
    out = str(root / "out")
    assert script.main(TINY + ["--model", "plain", "--data-dir", data_dir,
                               "--out", out, "--max-epochs", "2"]) == 0
    return data_dir, out


@pytest.fixture
def copied_run(tmp_path, two_epochs):
    """(data dir, out dir): a copy of the finished two-epoch run to damage
    or rerun."""
    data_dir, finished = two_epochs
    out = str(tmp_path / "out")
    shutil.copytree(finished, out)
    return data_dir, out


@pytest.mark.parametrize("damage", ["data", "index"])
def test_truncated_checkpoint_then_resume(capsys, copied_run, damage):
    data_dir, out = copied_run
    capsys.readouterr()
    run_dir = os.path.join(out, "plain")
    suffix = {"data": ".data-00000-of-00001", "index": ".index"}[damage]
    path = os.path.join(run_dir, "last", "model.ckpt-2" + suffix)
    with open(path, "rb") as f:
        content = f.read()
    with open(path, "wb") as f:
        f.write(content[:len(content) // 2])
    before = sorted(os.listdir(os.path.join(run_dir, "last")))
    with open(os.path.join(run_dir, "state.json")) as f:
        state = f.read()
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--model", "plain", "--data-dir", data_dir, "--out", out,
                "--max-epochs", "3", "--resume"]))
    assert os.path.join(run_dir, "last", "model.ckpt-2") in line, line
    # Nothing already written was lost.
    assert sorted(os.listdir(os.path.join(run_dir, "last"))) == before
    with open(os.path.join(run_dir, "state.json")) as f:
        assert f.read() == state
    assert os.path.exists(os.path.join(run_dir, "best", "checkpoint"))


def test_resume_with_other_parameters_names_them_and_the_way_out(
        capsys, copied_run):
    """A run made by other parameters (or an older version's pipeline):
    one line naming the flag, the run's value and a way on that keeps the
    run (never --overwrite, which deletes it: issue 42); nothing lost."""
    data_dir, out = copied_run
    before = tree_bytes(out)
    capsys.readouterr()
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--model", "plain", "--data-dir", data_dir, "--out", out,
                "--max-epochs", "2", "--resume", "--lr", "3.5"]))
    assert ("--lr 3.5 contradicts the run in %s (made with --lr 5.0)"
            % os.path.join(out, "plain")) in line, line
    assert "a new --out" in line and "--overwrite" not in line, line
    assert tree_bytes(out) == before


def test_corrupt_state_then_resume(capsys, tmp_path):
    run_dir = tmp_path / "out" / "plain"
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_text("{not json")
    data_dir = str(tmp_path / "ptb")
    os.mkdir(data_dir)
    write_ptb(data_dir)
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--model", "plain", "--data-dir", data_dir, "--out",
                str(tmp_path / "out"), "--resume"]))
    assert str(run_dir / "state.json") in line
    assert (run_dir / "state.json").read_text() == "{not json"


# ---------------------------------------------------------------------------
# The library: ValueError naming the parameter.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("change,name", [
    ({"vocab_size": 10.7}, "params['vocab_size']"),
    ({"vocab_size": True}, "params['vocab_size']"),
    ({"emb_size": "4"}, "params['emb_size']"),
    ({"hidden_size": -6}, "params['hidden_size']"),
    ({"dropouth": float("nan")}, "params['dropouth']"),
    ({"wdecay": -1.0}, "params['wdecay']"),
    ({"sparsity": "magnitude"}, "params['sparsity']"),
])
def test_build_lm_bad_params(change, name):
    features, _ = make_features()
    with pytest.raises(ValueError) as error:
        model.build_lm(features, False, dict(PARAMS, model="awd", **change))
    assert str(error.value).startswith(name), error.value


@pytest.mark.parametrize("mode", ["training", "TRAIN", "", 1,
                                  tf.constant(1.0)])
def test_build_lm_bad_mode(mode):
    features, _ = make_features()
    with pytest.raises((ValueError, TypeError), match="^mode"):
        model.build_lm(features, mode, dict(PARAMS, model="awd"))


# tf.estimator.ModeKeys' values (TRAIN, EVAL, PREDICT), as documented: the
# model takes them also on TF 2.16+, which has no tf.estimator.
MODE_KEYS = ("train", "eval", "infer")


@needs_estimator
def test_mode_keys_are_estimators():
    keys = tf.estimator.ModeKeys
    assert MODE_KEYS == (keys.TRAIN, keys.EVAL, keys.PREDICT)


def test_build_lm_modes_that_are_accepted():
    """Every ModeKeys value and both kinds of training flag still build."""
    flags = (lambda: True, lambda: False,
             lambda: tf.placeholder_with_default(True, []))
    for make_mode in tuple((lambda m=m: m) for m in MODE_KEYS) + flags:
        with tf.Graph().as_default():
            features, _ = make_features()
            model.build_lm(features, make_mode(), dict(PARAMS, model="awd"))


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


def test_library_pieces_name_their_argument():
    with pytest.raises(ValueError, match="^bptt"):
        data.bptt_windows(100, 0)          # divided by zero
    with pytest.raises(ValueError, match="^bptt"):
        data.bptt_windows(100, -5)         # looped forever
    with pytest.raises(ValueError, match="^batch_size"):
        data.batchify(np.arange(10), -1)
    with pytest.raises(ValueError, match="^threads"):
        runtime.session_config(-1)         # TensorFlow aborts on it
    with pytest.raises(ValueError, match="^bptt"):
        input_fn.bptt_batches(np.arange(100), 2, 0)
    with pytest.raises(ValueError, match="^num_tasks"):
        ClusterBarrierHook(0, 10, True)
    with pytest.raises(ValueError, match="^override 'lr'"):
        presets.params_for("demo", "awd", {"lr": -1.0})
    with pytest.raises(ValueError, match="^--x must be true or false"):
        presets.parse_value("variable_bptt", "maybe", "--x")
    with pytest.raises(ValueError, match="^quant_lr"):
        presets.split_quant(dict(presets.params_for("demo", "awd"),
                                 quant=True, quant_lr=-1.0))
    # Bit widths are checked before the float phase trains, not when the
    # quantized cells are built after it.
    for name, bits in (("weight_bits", 9), ("activation_bits", 1)):
        with pytest.raises(ValueError, match="^override '%s'" % name):
            presets.params_for("demo", "awd", {name: bits})


def test_quant_phase_params_do_not_depend_on_compression():
    """A --quant run resumes under --compress (the quantized model is the
    same): its parameters carry no compression setting."""
    base = dict(presets.params_for("demo", "awd"), quant=True)
    plain = presets.split_quant(base)
    compressed = presets.split_quant(dict(
        base, compress=["l0"], target_sparsity=0.8, finetune_epochs=3))
    assert plain == compressed
    assert not set(presets.COMPRESS_KEYS) & set(plain[1])


# ---------------------------------------------------------------------------
# Issue 22: errors that name the split file and the flag to change.
# ---------------------------------------------------------------------------
def _ptb_with(tmp_path, **texts):
    """A PTB-layout directory, the given splits replaced by ``texts``."""
    data_dir = str(tmp_path / "ptb")
    os.mkdir(data_dir)
    write_ptb(data_dir)
    for split, text in texts.items():
        with open(os.path.join(data_dir, split + ".txt"), "w") as f:
            f.write(text)
    return data_dir


def test_short_valid_split_names_file_and_flag(capsys, tmp_path):
    """Was: 'split of 2 tokens is too short for batch size 2'."""
    data_dir = _ptb_with(tmp_path, valid="a\n")      # 'a <eos>': 2 tokens
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--data-dir", data_dir, "--out", str(tmp_path / "out")]))
    assert line == (
        "error: valid split (%s): 2 tokens are too short for "
        "--eval-batch-size 2 (need at least 2 tokens per stream: at most 1)"
        % os.path.join(data_dir, "valid.txt")), line
    assert not (tmp_path / "out").exists()


def test_library_names_the_split_and_parameter(tmp_path):
    corpus = data.Corpus(["a", "b"], np.zeros(100, np.int32),
                         np.zeros(3, np.int32), np.zeros(50, np.int32),
                         {}, "tiny")
    params = dict(presets.params_for("demo", "plain"), eval_batch_size=2)
    with pytest.raises(data.DataError, match=r"^valid split: 3 tokens are "
                       r"too short for params\['eval_batch_size'\] 2"):
        train.run(corpus, params, str(tmp_path / "run"), log=lambda _: None)


@pytest.mark.parametrize("flag", ["--hmm-vocab", "--hmm-states"])
def test_hmm_sizes_name_their_flag(capsys, tmp_path, flag):
    """Was: 'vocab_size must be >= 2' (synthetic.make_hmm's argument)."""
    line = one_error_line(capsys, lambda: script.main(
        ["--out", str(tmp_path / "out"), flag, "1"]))
    assert line == "error: %s must be an int >= 2, got 1" % flag, line


def test_hidden_size_with_one_layer_is_refused(capsys, tmp_path):
    """One layer is sized to the embedding (tied decoder): an explicit
    --hidden-size would be ignored but recorded in summary.json."""
    line = one_error_line(capsys, lambda: script.main(
        ["--out", str(tmp_path / "out"), "--hidden-size", "999",
         "--num-layers", "1"]))
    assert line.startswith("error: --hidden-size 999 has no effect with "
                           "--num-layers 1"), line
    assert not (tmp_path / "out").exists()
    # One layer without --hidden-size, and --hidden-size with two, parse.
    for argv in (["--num-layers", "1"], ["--hidden-size", "999"]):
        args = script.parse_args(argv)
        params = presets.params_for(args.preset or "demo", "awd", {
            k: getattr(args, k) for k in USER_KEYS})
        presets.check_used(params, {k for k in USER_KEYS
                                    if getattr(args, k) is not None},
                           str)
    # Both distributed command lines (the Estimator one where it exists).
    for program in [estimator] * _compat.estimator_available() + [monitored]:
        with pytest.raises(ValueError, match="^--hparams hidden_size 5 has "
                           "no effect with --hparams num_layers 1"):
            program.prepare(program.parse_args(
                ["--model-dir", str(tmp_path / "m"), "--hparams",
                 "num_layers=1,hidden_size=5"]))


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
    data_dir = _ptb_with(tmp_path, valid="the cat sat on a mat dog\n" * 83)
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


def test_presets_name_an_unknown_key_first():
    with pytest.raises(ValueError, match=r"^override 'lrr': 'lrr' is not a "
                       r"parameter; did you mean 'lr'"):
        presets.params_for("demo", "awd", {"lrr": 1.0})
    with pytest.raises(ValueError, match=r"^--x: 'zzzz' is not a parameter;"):
        presets.parse_value("zzzz", "1", "--x")


def test_estimator_eval_line_is_strict_json():
    """json.dumps wrote NaN / Infinity (not JSON) for a diverged model."""
    metrics = {"xent": np.float32(2.5), "perplexity": np.float32(np.inf),
               "loss": np.float32(np.nan), "global_step": np.int64(7)}
    line = estimator.eval_line(metrics)
    assert line.startswith("eval: ")

    def refuse(name):
        raise ValueError("not JSON: %s" % name)

    parsed = json.loads(line[len("eval: "):], parse_constant=refuse)
    assert parsed == {"xent": 2.5, "perplexity": None, "loss": None,
                      "global_step": 7.0}
    assert "\n" not in line


# ---------------------------------------------------------------------------
# Issue 20: a run in --out is never replaced without --resume / --overwrite.
# ---------------------------------------------------------------------------


def test_finished_out_is_not_overwritten(capsys, tmp_path, copied_run):
    """Rerunning on a finished --out deleted it and trained anew."""
    data_dir, out = copied_run
    before = tree_bytes(out)
    capsys.readouterr()
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--model", "plain", "--data-dir", data_dir, "--out", out,
                "--max-epochs", "2"]))
    assert line == ("error: --out %s holds a run (%s): continue it with "
                    "--resume, or give a new --out for a new run"
                    % (out, os.path.join(out, "summary.json"))), line
    assert tree_bytes(out) == before
    # A partial run (a killed first run: only its run directory's files).
    partial = tmp_path / "partial"
    (partial / "plain" / "last").mkdir(parents=True)
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--model", "plain", "--data-dir", data_dir, "--out",
                str(partial)]))
    assert str(partial / "plain" / "last") in line, line
    line = one_error_line(capsys, lambda: script.main(
        ["--out", out, "--resume", "--overwrite"]))
    assert line.endswith("leave --overwrite out, which would delete it"), line


def test_compress_out_with_a_pipeline_is_not_overwritten(capsys, tmp_path,
                                                         two_epochs):
    data_dir, _ = two_epochs
    compress_out = tmp_path / "c"
    compress_out.mkdir()
    (compress_out / "pipeline.json").write_text("{}")
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--model", "plain", "--data-dir", data_dir, "--out",
                str(tmp_path / "out"), "--compress", "l0",
                "--compress-out", str(compress_out)]))
    assert line.startswith("error: --compress-out %s holds a run (%s)"
                           % (compress_out, compress_out / "pipeline.json")
                           ), line
    assert not (tmp_path / "out").exists()


def test_overwrite_replaces_the_run(capsys, copied_run):
    data_dir, out = copied_run
    notes = os.path.join(out, "plain", "notes.txt")
    with open(notes, "w") as f:
        f.write("mine")
    assert script.main(TINY + ["--model", "plain", "--data-dir", data_dir,
                               "--out", out, "--max-epochs", "1",
                               "--overwrite"]) == 0
    with open(os.path.join(out, "plain", "summary.json")) as f:
        assert json.load(f)["epochs_run"] == 1      # a new one-epoch run
    assert os.path.exists(notes)                    # not a run file: kept


@pytest.fixture(scope="module")
def tflite_files(tmp_path_factory):
    """A tiny language model exported with export_lm (untrained: only its
    signature matters here) and a cell stack exported with export_tflite."""
    folder = tmp_path_factory.mktemp("tflite")
    lm_path = untrained_lm_file(folder, 4)
    stack_path = str(folder / "stack.tflite")
    with tf.Graph().as_default():
        cell = WeightDropLSTMCell(4)
        tf.nn.dynamic_rnn(cell, tf.zeros([2, 4, 3]), dtype=tf.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            export_tflite(cell, 2, 4, stack_path, session=sess)
    return {"lm": lm_path, "stack": stack_path}


def test_lm_runner_given_a_stack_file_says_what_it_is(tflite_files):
    with pytest.raises(ValueError) as error:
        export.LMRunner(tflite_files["stack"])
    message = str(error.value)
    print(message)
    assert tflite_files["stack"] in message
    assert "not a language model" in message and "export_lm" in message
    assert "cell-stack model of quantization.export_tflite" in message
    assert "float32 inputs [2, 4, 3]" in message


def test_lm_runner_names_ids_outside_the_vocabulary(tflite_files):
    runner = export.LMRunner(tflite_files["lm"])
    stream = np.arange(12).reshape(2, 6) % 11
    # The model's logits are [2, 4, 11]; a good stream scores every target.
    scored = sum(picked.size for picked, _ in runner.windows(stream))
    assert scored == 2 * 5
    stream[0, 3], stream[1, 0] = 11, -2   # a target and an input
    with pytest.raises(ValueError) as error:
        runner.windows(stream)   # at the call, before any window runs
    message = str(error.value)
    print(message)
    assert message.startswith("stream must hold ids in [0, 11)")
    assert "11 at [0, 3]" in message and "-2 at [1, 0]" in message
    with pytest.raises(ValueError, match="integer word ids"):
        runner.windows(stream.astype(np.float32))
    with pytest.raises(ValueError, match=r"^stream must hold ids"):
        export.tflite_perplexity(tflite_files["lm"], stream)
    assert runner.vocab_size == PARAMS["vocab_size"] == 11


#: Runs ``awd-lm ARGS`` (the command's ``main``) in a child process with
#: the default interpreter, then with LiteRT made uninstalled (so with
#: ``tf.lite.Interpreter``, as on TF 1.x); prints ``[status, stdout,
#: stderr]`` of each.
_AWD_LM_ON_EACH_INTERPRETER = """
import contextlib, io, json, sys
from tf1_awd_sparse.awd_lm.programs import main
for hide_litert in (False, True):
    if hide_litert:
        sys.modules["ai_edge_litert"] = None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main.main(json.loads(sys.argv[1]))
        except SystemExit as stop:
            status = stop.code
    print(json.dumps([status, out.getvalue(), err.getvalue()]), flush=True)
"""


def test_score_of_a_truncated_tflite_exits_2_with_one_line(tflite_files,
                                                           tmp_path):
    # Issue 42: the first bytes of a language-model file (its sidecar
    # intact) made tf.lite (TF 1.x, and TF 2.x without LiteRT) read outside
    # the file and the process die of a segmentation fault (status 139);
    # the file is now checked before any interpreter reads it. A child
    # process: a signal fails this test instead of ending pytest.
    from tf1_awd_sparse.awd_lm.config import modeldir
    path = str(tmp_path / "lm.tflite")
    shutil.copy(tflite_files["lm"], path)
    words = ["<eos>", "<unk>"] + ["w%d" % i for i in range(9)]
    params = dict(PARAMS, model="awd")
    modeldir.write_tflite_sidecar(path, params, words,
                                  modeldir.produced_by(params))
    with open(path, "rb") as handle:
        whole = handle.read()
    with open(path, "wb") as handle:
        handle.write(whole[:len(whole) // 2])
    text = tmp_path / "test.txt"
    text.write_text("w1 w2 w3\nw4 w5\n")
    done = subprocess.run(
        [sys.executable, "-c", _AWD_LM_ON_EACH_INTERPRETER, json.dumps(
            ["score", "--model", path, str(text)])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stdout,
                                  done.stderr[-2000:])
    runs = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(runs) == 2
    for status, out, err in runs:
        lines = err.strip().splitlines()
        assert status == 2 and out == "" and len(lines) == 1, (status, err)
        assert lines[0].startswith("error: %r is not a whole TFLite file "
                                   "(truncated or damaged): " % path), lines


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


class _Parsed(Exception):
    pass


@pytest.mark.parametrize("program", ["score", "generate", "savedmodel",
                                     "monitored", "estimator", "example"])
def test_help_shows_every_default(program, monkeypatch):
    # Catch each command line's parser as it parses, then walk its actions:
    # every flag whose default is a value says so in --help.
    from tf1_awd_sparse.base import _cli
    from tf1_awd_sparse.awd_lm import generate, monitored, savedmodel, score
    caught = []

    def catch(self, argv=None, namespace=None):
        caught.append(self)
        raise _Parsed()

    monkeypatch.setattr(_cli.ArgumentParser, "parse_args", catch)
    if program == "example":
        spec = importlib.util.spec_from_file_location(
            "awd_lm_example", os.path.join(ROOT, "examples", "awd_lm.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = {"score": score, "generate": generate,
                  "savedmodel": savedmodel, "monitored": monitored,
                  "estimator": estimator}[program]
    with pytest.raises(_Parsed):
        module.parse_args([])
    parser, = caught
    text = " ".join(parser.format_help().split())
    with_default = [a for a in parser._actions
                    if a.default not in (None, argparse.SUPPRESS)]
    assert with_default, program
    for action in with_default:
        help_text = " ".join((action.help % dict(vars(action))).split())
        assert "default" in help_text.lower(), (program, action.dest)
        assert help_text in text, (program, action.dest)
        if "(default: " in help_text:
            assert help_text.endswith("(default: %s)" % (action.default,))


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
    params, corpus = estimator.command_params(args)
    estimator.write_model_dir(args, params, corpus)
    with open(os.path.join(model_dir, "config.json")) as handle:
        produced = json.load(handle)["produced_by"]
    assert produced["data_dir"] == os.path.abspath(data_dir)
    assert produced["training"]["optimizer"].startswith("clipped SGD")
    assert "fixed windows of 6 steps" in produced["training"]["bptt"]
    assert produced["valid_ppl"] is None
    again = monitored.parse_args(["--model-dir", model_dir,
                                  "--evaluate-only"])
    _, corpus2 = estimator.command_params(again)
    assert list(corpus2.vocab) == list(corpus.vocab)
    assert list(corpus2.valid) == list(corpus.valid)
    cli.record_valid_ppl(model_dir, {"perplexity": 12.5, "xent": 2.5})
    with open(os.path.join(model_dir, "config.json")) as handle:
        assert json.load(handle)["produced_by"]["valid_ppl"] == 12.5


def test_monitored_logs_loss_and_perplexity_every_log_steps():
    import collections
    import io
    import math
    from tf1_awd_sparse.awd_lm import monitored
    assert monitored.parse_args(["--model-dir", "d"]).log_steps == 100
    assert monitored.parse_args(["--model-dir", "d", "--log-steps",
                                 "2"]).log_steps == 2
    out = io.StringIO()
    hook = monitored._LastLossHook(None, log_steps=2, file=out)
    values = collections.namedtuple("Values", "results")
    for loss in (3.0, 2.0, 1.5, 1.0, 0.5):
        hook.after_run(None, values(loss))
    assert out.getvalue().splitlines() == [
        "train: step 2 loss 2.0000 ppl %.2f" % math.exp(2.0),
        "train: step 4 loss 1.0000 ppl %.2f" % math.exp(1.0)]
    quiet = io.StringIO()
    hook = monitored._LastLossHook(None, log_steps=0, file=quiet)
    hook.after_run(None, values(1.0))
    assert quiet.getvalue() == ""
