"""`awd_lm.__main__`: ``python -m tf1_awd_sparse.awd_lm`` is the
``awd-lm`` command (`programs.main.main`): the same output and exit
status, in a fresh interpreter, as the function gives in this one."""
import os
import subprocess
import sys

import pytest

from tf1_awd_sparse.awd_lm.programs import main

from support import ROOT


def _python_m(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    ran = subprocess.run([sys.executable, "-m", "tf1_awd_sparse.awd_lm"]
                         + list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True,
                         env=env, cwd=ROOT, timeout=300)
    return ran.returncode, ran.stdout, ran.stderr


def _in_process(args, capsys, monkeypatch):
    """(status, stdout, stderr) of `main.main` here (a program's refusal
    exits with its status)."""
    monkeypatch.setattr(sys, "argv", ["awd-lm"] + list(args))
    try:
        status = main.main(list(args))
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


# No subcommand, --help, an unknown one (answered without TensorFlow), and
# a subcommand's own refusal of its argument.
@pytest.mark.parametrize("args", [(), ("--help",), ("no-such-command",),
                                  ("info", "no/such/model")])
def test_python_m_is_the_awd_lm_command(args, capsys, monkeypatch):
    here = _in_process(args, capsys, monkeypatch)
    assert _python_m(*args) == here
    assert here[0] == (0 if args == ("--help",) else 2)
    if args[:1] == ("info",):
        assert "no/such/model" in here[2]
