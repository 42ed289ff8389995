"""What ``awd-lm`` says when a path or TensorFlow fails it (issue 42):
one line, exit status 2, never a traceback; ``info`` reads its JSON files
without TensorFlow. On a model directory written by hand (no training):
each test runs in well under 5 s (a subprocess here imports TensorFlow
only in the TF 2.16+ test)."""
import errno
import os
import subprocess
import sys

import pytest

from support import ROOT
from tf1_awd_sparse.awd_lm.config.params import as_params
from support.lm_api import tiny_params
from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.programs import export, main as awd_lm_main
from tf1_awd_sparse.base import compat as _compat

WORDS = ["<eos>", "<unk>", "the", "cat", "sat"]
NO_TENSORFLOW = "import sys; sys.modules['tensorflow'] = None\n"


@pytest.fixture
def model_dir(tmp_path):
    """A float model directory's config.json and vocab.txt (its checkpoint
    is never read here)."""
    directory = tmp_path / "model"
    directory.mkdir()
    params = as_params(dict(tiny_params(), model="awd",
                            vocab_size=len(WORDS)))
    modeldir.write_run_dir(str(directory), params, WORDS)
    return str(directory)


def _awd_lm(args, prelude="", env=None):
    """``python -m tf1_awd_sparse.awd_lm ARGS`` after ``prelude``."""
    code = (prelude + "import runpy, sys\nsys.argv = ['awd-lm'] + %r\n"
            "runpy.run_module('tf1_awd_sparse.awd_lm', run_name='__main__',"
            " alter_sys=True)\n" % (list(args),))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120,
                          env=env or dict(os.environ, PYTHONPATH=ROOT))


def test_info_imports_no_tensorflow(model_dir):
    # TensorFlow made unimportable: info reads config.json without it, and
    # of the checkpoint its files' sizes and its index's table: here one
    # that records no tensor (an empty block, its trailer, the footer).
    prefix = os.path.join(model_dir, "best", "model.ckpt")
    os.makedirs(os.path.dirname(prefix))
    block = b"\0\0\0\0\1\0\0\0" + b"\0" * 5   # no entry, 1 restart
    handles = bytes([0, 8, 0, 8])   # the metaindex and index blocks
    with open(prefix + ".index", "wb") as handle:
        handle.write(block + handles.ljust(40, b"\0")
                     + (0xdb4775248b80fb57).to_bytes(8, "little"))
    with open(prefix + ".data-00000-of-00001", "wb") as handle:
        handle.write(b"stand-in")
    done = _awd_lm(["info", model_dir], NO_TENSORFLOW)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "%s: model directory" % model_dir, "  stage: float"]
    done = _awd_lm(["info", os.path.dirname(model_dir)], NO_TENSORFLOW)
    assert done.returncode == 0, done.stderr
    assert "1 model directories" in done.stdout


def test_the_sparsity_choices_a_config_reads_are_the_cells():
    from tf1_awd_sparse.transforms.kernel import SPARSITY_CHOICES
    assert presets.SPARSITY_CHOICES == SPARSITY_CHOICES


def test_a_missing_tensorflow_is_one_line(model_dir):
    done = _awd_lm(["score", "--model", model_dir, "x.txt"], NO_TENSORFLOW)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "error: awd-lm score needs TensorFlow: import of tensorflow halted; "
        "None in sys.modules"]


@pytest.mark.skipif(_compat.TF_VERSION < (2, 16),
                    reason="Keras 3 is tf.keras only from TF 2.16")
def test_keras_3_is_one_line(model_dir):
    # TF 2.21 without tf-keras (hidden as tests/base/test_compat.py does)
    # and without TF_USE_LEGACY_KERAS: the library's refusal, one line.
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    env["PYTHONPATH"] = ROOT
    text = os.path.join(model_dir, "vocab.txt")   # words to score
    done = _awd_lm(["score", "--model", model_dir, text],
                   "import sys; sys.modules['tf_keras'] = None\n", env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: tf1_awd_sparse needs Keras 2 on TensorFlow 2."), lines
    assert "pip install tf-keras~=" in lines[0]


def _one_line(capsys, call):
    with pytest.raises(SystemExit) as stop:
        call()
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="no /proc")
def test_export_to_proc_is_refused_before_any_conversion(
        model_dir, capsys, monkeypatch):
    # /proc takes no new file, even from root, whom os.access allows it.
    from tf1_awd_sparse.awd_lm.inference import lm
    monkeypatch.setattr(lm, "export_model", _never)
    line = _one_line(capsys, lambda: export.main(
        ["--model", model_dir, "--format", "float", "--out",
         "/proc/x.tflite"]))
    assert line == ("error: --out /proc/x.tflite: cannot write: No such "
                    "file or directory")


def _never(*args, **kwargs):
    raise AssertionError("work began before the paths were checked")


def test_an_os_error_while_exporting_names_the_flag(
        model_dir, tmp_path, capsys, monkeypatch):
    # What the file system says when the file is written (after the
    # conversion): here a full disk.
    from tf1_awd_sparse.awd_lm.inference import lm
    out = str(tmp_path / "x.tflite")

    def full(model, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(lm, "export_model", full)
    line = _one_line(capsys, lambda: export.main(
        ["--model", model_dir, "--format", "float", "--out", out]))
    assert line == ("error: --out %s: cannot write: No space left on device"
                    % out)


def test_an_os_error_no_program_caught_is_one_line(model_dir, capsys,
                                                   monkeypatch):
    # Any subcommand: awd-lm's own handling (programs/main.py).
    from tf1_awd_sparse.awd_lm.programs import info
    config = os.path.join(model_dir, "config.json")

    def unreadable(path):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), config)

    monkeypatch.setattr(info, "info_lines", unreadable)
    line = _one_line(capsys, lambda: awd_lm_main.main(["info", model_dir]))
    assert line == "error: %s: cannot read %s: Permission denied" % (
        model_dir, config)


def test_train_refuses_an_out_under_a_file_before_reading_the_corpus(
        model_dir, capsys, monkeypatch):
    # --out names a model directory's config.json (a file): refused
    # before the corpus is read (a real one, here, would be read first).
    from tf1_awd_sparse.awd_lm.corpus import runtime
    from tf1_awd_sparse.awd_lm.programs import train
    monkeypatch.setattr(runtime, "load_corpus", _never)
    config = os.path.join(model_dir, "config.json")
    line = _one_line(capsys, lambda: train.main(
        ["--out", config, "--data-dir", model_dir, "--max-epochs", "1"]))
    assert line == "error: --out %s: %s is a file, not a directory" % (
        config, config)
    out = os.path.join(config, "runs")
    line = _one_line(capsys, lambda: train.main(["--out", out]))
    assert line == "error: --out %s: %s is a file, not a directory" % (
        out, config)


def test_info_names_a_bad_config_in_a_run_directory(model_dir, capsys):
    # A run's --out listed through the one config reader: a model
    # directory whose config.json is not JSON is named (it was a bare
    # "Expecting value: line 1 column 1 (char 0)").
    from tf1_awd_sparse.awd_lm.programs import info
    broken = os.path.join(os.path.dirname(model_dir), "broken")
    os.mkdir(broken)
    with open(os.path.join(broken, "config.json"), "w") as handle:
        handle.write("{")
    line = _one_line(capsys, lambda: info.main([os.path.dirname(model_dir)]))
    assert line.startswith("error: %s: not JSON" % os.path.join(
        broken, "config.json")), line


def test_train_flags_are_the_user_keys(capsys):
    # Only what users set is a flag (params.USER_KEYS); the stage keys,
    # which the pipeline sets, are none.
    from tf1_awd_sparse.awd_lm.config import params
    from tf1_awd_sparse.awd_lm.programs import train
    with pytest.raises(SystemExit) as stop:
        train.parse_args(["--help"])
    assert stop.value.code == 0
    shown = capsys.readouterr().out
    for key in params.USER_KEYS:
        assert "--" + key.replace("_", "-") in shown, key
    for key in params.STAGE_KEYS:
        assert "--" + key.replace("_", "-") not in shown, key


@pytest.mark.parametrize("argv", [["--average-from-start", "true"],
                                  ["--select-min-sparsity=0.5"]])
def test_train_refuses_a_stage_flag(capsys, argv):
    from tf1_awd_sparse.awd_lm.programs import train
    line = _one_line(capsys, lambda: train.parse_args(argv))
    flag = argv[0].partition("=")[0]
    assert line == ("error: %s is not a flag: the pipeline sets %s for a "
                    "stage of a run (see --help for the flags)"
                    % (flag, flag[2:].replace("-", "_")))


def test_hparams_refuse_a_stage_key():
    from tf1_awd_sparse.awd_lm.distributed import cli
    with pytest.raises(ValueError, match="^--hparams: 'sparsity_controller' "
                       "is no parameter to give: the pipeline sets it"):
        cli.parse_hparams("lr=1,sparsity_controller=2")
    assert cli.parse_hparams("select_from_epoch=2") == {
        "select_from_epoch": 2}
