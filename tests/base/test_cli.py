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
