"""tf1_awd_sparse.base._cli: an OSError becomes one line naming the flag
whose path it concerns (issue 42), and the ImportErrors every program can
meet become one line; other ImportErrors keep their traceback."""
import errno
import os

import pytest

from tf1_awd_sparse.base import _cli


def _parsed(*argv):
    parser = _cli.ArgumentParser(prog="prog")
    parser.add_argument("--model")
    parser.add_argument("--out")
    parser.add_argument("--format", choices=["float", "uint8"])
    parser.add_argument("files", nargs="*")
    return parser.parse_args(list(argv))


def _error(code, filename=None):
    return OSError(code, os.strerror(code), filename)


def test_an_os_error_names_the_flag_of_its_path(tmp_path):
    model = str(tmp_path / "m")
    _parsed("--model", model, "--out", "/proc/x.tflite", "--format", "float",
            "a.txt")
    line = _cli.os_error_line
    assert line(_error(errno.ENOENT, "/proc/x.tflite")) == (
        "--out /proc/x.tflite: cannot write: No such file or directory")
    # A file inside a flag's folder: the flag, and the file.
    vocab = os.path.join(model, "vocab.txt")
    assert line(_error(errno.EACCES, vocab)) == (
        "--model %s: cannot read %s: Permission denied" % (model, vocab))
    # A folder above an output that could not be made.
    assert line(_error(errno.EROFS, "/proc")) == (
        "--out /proc/x.tflite: cannot write /proc: Read-only file system")
    # A positional argument: the path names itself.
    assert line(_error(errno.EISDIR, "a.txt")) == (
        "a.txt: cannot read: Is a directory")
    assert line(_error(errno.ENOENT, "/elsewhere")) == (
        "/elsewhere: No such file or directory")
    assert line(_error(errno.ENOSPC)) == "No space left on device"


def test_the_deepest_flag_is_named(tmp_path):
    out = str(tmp_path / "run")
    _parsed("--model", str(tmp_path), "--out", out)
    state = os.path.join(out, "awd", "state.json")
    assert _cli.os_error_line(_error(errno.EIO, state)).startswith(
        "--out %s: cannot write %s" % (out, state))


def test_fail_prints_an_os_error_as_one_line(capsys):
    _parsed("--out", "/proc/x.tflite")
    with pytest.raises(SystemExit) as stop:
        _cli.fail(_error(errno.ENOENT, "/proc/x.tflite"))
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        "error: --out /proc/x.tflite: cannot write: No such file or "
        "directory\n")


def test_the_import_errors_of_every_program_are_one_line():
    missing = ImportError("No module named 'tensorflow'", name="tensorflow")
    assert _cli.requirement_line(missing, "awd-lm score") == (
        "awd-lm score needs TensorFlow: No module named 'tensorflow'")
    refused = ImportError("tf1_awd_sparse needs Keras 2 on TensorFlow 2.21",
                          name="tf1_awd_sparse.base.compat")
    assert _cli.requirement_line(refused, "awd-lm score") == str(refused)
    # Any other (an optional package, a bug) keeps its traceback.
    assert _cli.requirement_line(ImportError("x", name="tqdm"), "p") is None
    assert _cli.requirement_line(ImportError("x"), "p") is None
