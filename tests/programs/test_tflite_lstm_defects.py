"""tools/tflite_lstm_defects.py (docs/sparse_tflite.md cites it) runs on
the library's present modules: on each interpreter, the library's layout
of the fused LSTM op matches numpy's model of the hybrid arithmetic, and
the unfolded op matches one of the two models the tool compares it with
(the kernel as documented, or with defect 1), so the tool still tells
which one TFLite computes. TF 2.x only (the flatbuffer schema)."""
import os
import re
import subprocess
import sys

import pytest

from support import ROOT
from tf1_awd_sparse.export import sparse_format

TOOL = os.path.join(ROOT, "tools", "tflite_lstm_defects.py")
#: numpy's float64 model against the kernel's float32 arithmetic on
#: states of |h| < 1 (the tool's 6 steps of 64 units; rounding only).
ATOL = 1e-5


def _steps(line):
    """The per-step maxima a line of the tool ends with."""
    tail = line.rsplit(":", 1)[1].replace("max |h diff| per step", "")
    return [float(v) for v in tail.split()]


@pytest.mark.skipif(not sparse_format.available(),
                    reason="the TFLite schema module needs TensorFlow 2.x")
def test_the_tool_runs_and_its_models_explain_the_kernel():
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, TOOL], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    library = [l for l in lines if "the library's layout" in l]
    unfolded = [l for l in lines if "8 sparse matrices" in l]
    assert library and len(unfolded) == 2 * len(library), proc.stdout
    for line in library:
        assert max(_steps(line)) < ATOL, line
    for documented, defect in zip(unfolded[::2], unfolded[1::2]):
        assert min(max(_steps(documented)), max(_steps(defect))) < ATOL, \
            (documented, defect)
    assert re.search(r"^sparse op without a projection \(defect 2\), in a "
                     r"child process: exit status -?\d+", proc.stdout,
                     re.M), proc.stdout
