"""Bad input to ``awd-lm train`` (`examples/awd_lm.py`; issue 13): every
case ends in exit status 2 and one line on stderr naming the flag or file,
never a hang, a TensorFlow abort, a traceback or a meaningless run with exit
0; a damaged or finished run is never lost."""
import json
import os
import shutil

import pytest

from tf1_awd_sparse.awd_lm import estimator, monitored
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import USER_KEYS, Params
from support.lm import TINY, one_error_line, ptb_with, script, write_ptb
from tf1_awd_sparse.base import compat as _compat
from support.lm_api import tree_bytes


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
# Issue 22: errors that name the split file and the flag to change.
# ---------------------------------------------------------------------------


def test_short_valid_split_names_file_and_flag(capsys, tmp_path):
    """Was: 'split of 2 tokens is too short for batch size 2'."""
    data_dir = ptb_with(tmp_path, valid="a\n")      # 'a <eos>': 2 tokens
    line = one_error_line(capsys, lambda: script.main(
        TINY + ["--data-dir", data_dir, "--out", str(tmp_path / "out")]))
    assert line == (
        "error: valid split (%s): 2 tokens are too short for "
        "--eval-batch-size 2 (need at least 2 tokens per stream: at most 1)"
        % os.path.join(data_dir, "valid.txt")), line
    assert not (tmp_path / "out").exists()


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
        params = Params.for_preset(args.preset or "demo", "awd", {
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
