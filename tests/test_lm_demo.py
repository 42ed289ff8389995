"""`make demo`'s driver: both runs' epoch rows reach the screen and the one
closing table agrees with each run's own summary.json."""
import json
import os
import subprocess
import sys

import pytest

DEMO = os.path.join(os.path.dirname(__file__), "..", "examples", "demo.py")


@pytest.mark.slow
def test_demo_prints_both_runs_and_one_table(tmp_path):
    proc = subprocess.run(
        [sys.executable, DEMO, "--out", str(tmp_path), "--max-epochs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    rows = [[f.strip() for f in line.split("|")] for line in lines]
    for model in ("plain", "awd"):
        # Its epoch-1 row and its stopping line were forwarded as they came.
        assert [model, "1"] in [r[:2] for r in rows], proc.stdout
        assert any(r[0] == model and r[1].startswith("stopped")
                   for r in rows if len(r) > 1), proc.stdout
        with open(os.path.join(str(tmp_path), model, "summary.json")) as f:
            test_ppl = json.load(f)["models"][0]["test_ppl"]
        table_rows = [r for r in rows if r[0] == model and len(r) == 6
                      and not r[1].isdigit()]
        assert len(table_rows) == 1, proc.stdout   # one closing table only
        assert float(table_rows[0][1]) == pytest.approx(test_ppl, abs=0.01)
    assert os.path.exists(os.path.join(str(tmp_path), "valid_ppl.png"))
