"""The ``awd-lm`` command's programs (and `examples/awd_lm.py`): every
parser's --help shows its defaults."""
import argparse
import importlib.util
import os

import pytest

from tf1_awd_sparse.awd_lm import estimator
from support import ROOT


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
