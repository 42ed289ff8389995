"""`make demo`'s driver: both runs' epoch rows reach the screen, read from
the runs' JSON files (not from their output), the one closing table is
the one the runs' summaries make, and the compression table is the one its
summary.json holds."""
import json
import os
import subprocess
import sys

import pytest

from support import EXAMPLES
from tf1_awd_sparse.awd_lm.training import records

DEMO = os.path.join(EXAMPLES, "demo.py")


def _index(lines, block):
    """Where the consecutive lines ``block`` start in ``lines`` (every
    occurrence)."""
    return [i for i in range(len(lines) - len(block) + 1)
            if lines[i:i + len(block)] == block]


# Slow (about 60 s, the demo's processes): runs on the default version,
# `make demo`'s own (docs/testing.md); the pipeline it drives runs on every
# version (compression/test_pipeline.py), the driver is Python that prints.
@pytest.mark.slow
def test_demo_prints_both_runs_and_one_table(tmp_path):
    proc = subprocess.run(
        [sys.executable, DEMO, "--out", str(tmp_path), "--max-epochs", "1",
         "--finetune-epochs", "1", "--quant-epochs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=420)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    summaries = []
    for model in ("plain", "awd"):
        with open(os.path.join(str(tmp_path), model, "summary.json")) as f:
            summary = json.load(f)["models"][0]
        assert summary["model"] == model
        assert summary["epochs_run"] == len(summary["epochs"]) == 1
        # Each epoch row and the closing line, as the records format them.
        for record in summary["epochs"]:
            assert records.epoch_row(record) in lines, proc.stdout
        for line in records.end_lines(summary):
            assert lines.count(line) == 1, proc.stdout
        summaries.append(summary)
    assert lines.count(records.header("model")) == 1, proc.stdout
    table = records.results_table(summaries, summaries[0]["floor_ppl"])
    assert len(_index(lines, table)) == 1, proc.stdout  # one closing table
    with open(os.path.join(str(tmp_path), "summary.json")) as f:
        assert json.load(f)["table"] == table
    assert os.path.exists(os.path.join(str(tmp_path), "valid_ppl.png"))
    # The compression of the awd model: its table, as written to JSON.
    with open(os.path.join(str(tmp_path), "compress", "summary.json")) as f:
        compressed = json.load(f)
    stages = [row["stage"] for row in compressed["stages"]]
    for stage in ("float", "reference", "sparse", "qat", "tflite_float",
                  "tflite_uint8"):
        assert stage in stages
    assert len(_index(lines, compressed["table"])) == 1, proc.stdout
    # The corpus as text, and sentences drawn from the uint8 model.
    for split in ("train", "valid", "test"):
        assert os.path.getsize(os.path.join(str(tmp_path), "data",
                                            split + ".txt")) > 1000
    samples = [i for i, line in enumerate(lines)
               if line.startswith("sentences from the uint8 model")]
    assert len(samples) == 1 and lines[samples[0] + 1].startswith("  w")
    # What the tables say, read back from the screen: the JSON figures.
    for summary in summaries:
        cells = _row(lines, summary["model"])
        assert float(cells[1]) == pytest.approx(summary["test_ppl"],
                                                abs=0.006)
        assert int(cells[3]) == summary["best_epoch"]
    ratio = [l for l in lines if l.startswith("awd / plain test perplexity")]
    assert float(ratio[0].split()[-1]) == pytest.approx(
        summaries[1]["test_ppl"] / summaries[0]["test_ppl"], abs=6e-4)
    for row in compressed["stages"]:
        cells = _row(lines, row["stage"], row["technique"])
        assert float(cells[2]) == pytest.approx(row["test_ppl"], abs=0.006)
        assert float(cells[3]) == pytest.approx(row["ratio_to_float"],
                                                abs=6e-4)
        assert float(cells[4]) == pytest.approx(row["ratio_to_reference"],
                                                abs=6e-4)
        assert int(cells[5].split("/")[0]) == row["nonzero_weights"]
        assert cells[6] == {None: "-", True: "yes", False: "NO"}[
            row["reached_target"]]
        assert int(cells[7]) == row["bytes"]
        assert int(cells[8]) == row["gzip_bytes"]


def _row(lines, *first_cells):
    """The cells of the one printed table row starting with
    ``first_cells``."""
    rows = [[c.strip() for c in l.split("|")] for l in lines if "|" in l]
    found = [r for r in rows if r[:len(first_cells)] == list(first_cells)]
    assert len(found) >= 1, first_cells
    return found[-1]
