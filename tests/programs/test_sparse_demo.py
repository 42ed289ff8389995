"""examples/sparse_demo.py's command line: --help prints the usage and
exits 0 without training (it ignored --help and ran the demo); bad flags
end in one named line, exit 2."""
import os
import subprocess
import sys

import pytest

from support import ROOT
DEMO = os.path.join(ROOT, "examples", "sparse_demo.py")


def _run(*argv):
    return subprocess.run([sys.executable, DEMO] + list(argv),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)


def test_help_prints_usage_and_trains_nothing():
    proc = _run("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: sparse_demo.py"), proc.stdout
    for flag in ("--steps", "--seed", "--threads"):
        assert flag in proc.stdout
    assert "held-out MSE" not in proc.stdout


@pytest.mark.parametrize("argv,flag", [
    (["--steps", "0"], "--steps"), (["--threads", "-1"], "--threads"),
    (["--seed", "x"], "--seed"), (["--nonsense"], "--nonsense")])
def test_bad_flags_exit_2_with_one_line(argv, flag):
    proc = _run(*argv)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and flag in err[0], \
        err
    assert proc.stdout == ""


def test_short_run_prints_both_techniques():
    proc = _run("--steps", "20")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("VD: held-out MSE ")
    assert "\nL0: held-out MSE " in proc.stdout
