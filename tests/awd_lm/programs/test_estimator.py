"""The Estimator program: its entry without tf.estimator."""
import os
import re
import subprocess
import sys

import pytest

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.awd_lm.programs import estimator
from support import ROOT


@pytest.mark.skipif(_compat.estimator_available(),
                    reason="tf.estimator exists on this TensorFlow: the "
                           "Estimator command line runs")
def test_estimator_entry_without_tf_estimator_names_the_alternative(
        capsys, tmp_path):
    argv = ["--model-dir", str(tmp_path), "--train-steps", "1"]
    with pytest.raises(SystemExit) as stop:
        estimator.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "python -m tf1_awd_sparse.awd_lm.monitored" in err[0]
    assert "2.16" in err[0]
    with pytest.raises(estimator.EstimatorUnavailableError,
                       match="awd_lm.monitored"):
        estimator.run(argv)
    # The real process: status 2, the same one line, no traceback.
    proc = subprocess.run(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm.estimator"] + argv,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 2, proc.stderr
    assert _own_lines(proc.stderr) == err, proc.stderr
    assert not list(tmp_path.iterdir())


def _own_lines(stderr):
    """stderr without what TensorFlow 2.21's C++ runtime writes there at
    import, before any program can set a log level (absl's 'WARNING: All
    log messages before absl::InitializeLog()...' and its 'I0000 ...'
    lines)."""
    return [line for line in stderr.strip().splitlines()
            if not re.match(r"[IWEF]\d{4} |WARNING: All log messages before "
                            r"absl::InitializeLog", line)]
