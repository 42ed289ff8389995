"""Bad input to the language model's command lines and library (issue 13):
every case ends in a named error (CLI: exit status 2 and one line on stderr
naming the flag or file; library: ValueError naming the parameter), never a
hang, a TensorFlow abort, a traceback or a meaningless run with exit 0."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm import (data, estimator, input_fn, model,
                                   presets, runtime, train)
from tf1_awd_sparse.awd_lm.cluster import ClusterBarrierHook
from test_lm_model import PARAMS, make_features
from test_lm_script import SCRIPT, TINY, script, write_ptb
from tf_versions import needs_estimator


def _one_error_line(capsys, call):
    """Runs ``call``; returns the one stderr line it ended with (exit 2)."""
    with pytest.raises(SystemExit) as stop:
        call()
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


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
]


@pytest.mark.parametrize("flag,value", SCRIPT_CASES,
                         ids=["%s=%s" % c for c in SCRIPT_CASES])
def test_awd_lm_script_bad_flag(capsys, tmp_path, flag, value):
    # flag=value: argparse would take e.g. '-1e-6' after a space for an
    # option.
    line = _one_error_line(capsys, lambda: script.main(
        ["--out", str(tmp_path / "out"), "%s=%s" % (flag, value)]))
    assert flag in line and value in line, line
    assert not (tmp_path / "out").exists()   # nothing was written


def test_one_compress_out_for_two_models_is_refused(capsys, tmp_path):
    """Both models' pipelines would write (and resume) in one directory."""
    line = _one_error_line(capsys, lambda: script.main(
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


@pytest.mark.parametrize("argv,name", ESTIMATOR_CASES,
                         ids=[" ".join(c[0]) for c in ESTIMATOR_CASES])
def test_estimator_cli_bad_flag(capsys, tmp_path, argv, name):
    verbosity = tf.logging.get_verbosity()
    try:
        line = _one_error_line(capsys, lambda: estimator.main(
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
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    for argv in ([sys.executable, SCRIPT, "--out", str(tmp_path), "--bptt",
                  "-5"],
                 [sys.executable, "-m", "tf1_awd_sparse.awd_lm.estimator",
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


@pytest.mark.parametrize("damage", ["data", "index"])
def test_truncated_checkpoint_then_resume(capsys, tmp_path, two_epochs,
                                          damage):
    data_dir, finished = two_epochs
    out = str(tmp_path / "out")
    shutil.copytree(finished, out)
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
    line = _one_error_line(capsys, lambda: script.main(
        TINY + ["--model", "plain", "--data-dir", data_dir, "--out", out,
                "--max-epochs", "3", "--resume"]))
    assert os.path.join(run_dir, "last", "model.ckpt-2") in line, line
    # Nothing already written was lost.
    assert sorted(os.listdir(os.path.join(run_dir, "last"))) == before
    with open(os.path.join(run_dir, "state.json")) as f:
        assert f.read() == state
    assert os.path.exists(os.path.join(run_dir, "best", "checkpoint"))


def test_corrupt_state_then_resume(capsys, tmp_path):
    run_dir = tmp_path / "out" / "plain"
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_text("{not json")
    data_dir = str(tmp_path / "ptb")
    os.mkdir(data_dir)
    write_ptb(data_dir)
    line = _one_error_line(capsys, lambda: script.main(
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
