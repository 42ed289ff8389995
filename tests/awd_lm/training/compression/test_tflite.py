"""The compression table's timing (`tflite.time_rows`) on
scripted runners, against numpy: each row's ms/token the median of its
rounds, the baseline the dense file of lowest median time (the int8 dense
file, the uint8 one or the float one), each ratio the median of the
per-round ratios; the line under the table names the baseline. The
streaming twins and the real files:
tests/awd_lm/training/compression/test_pipeline.py.
"""
import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.training.compression import rows as rows_, tflite


class _Scripted(object):
    """A runner whose `time_per_token` returns the next of ``times``."""

    def __init__(self, times):
        self.times = list(times)
        self.calls = []

    def time_per_token(self, repeats):
        self.calls.append(repeats)
        return self.times.pop(0)


#: Seconds per token in 3 rounds: the uint8 file is the fastest dense one
#: in ``uint8 fastest``, the int8 dense file in ``int8 fastest``.
TIMES = {
    "uint8 fastest": {tflite.FASTEST_DENSE: [3e-5, 5e-5, 4e-5],
                      "tflite_uint8": [2e-5, 4e-5, 3.5e-5],
                      "tflite_float": [9e-5, 9e-5, 9e-5],
                      "tflite_int8_fused": [1e-5, 2.4e-5, 1.1e-5]},
    "int8 fastest": {tflite.FASTEST_DENSE: [2e-5, 2e-5, 2e-5],
                     "tflite_uint8": [3e-5, 2.5e-5, 3e-5],
                     "tflite_int8_fused": [1e-5, 1.2e-5, 0.9e-5]},
}


@pytest.mark.parametrize("case", sorted(TIMES))
def test_rows_are_timed_against_the_fastest_dense_file(case):
    times = TIMES[case]
    runners = {stage: _Scripted(t) for stage, t in times.items()}
    rows = [{"stage": s} for s in times if s != tflite.FASTEST_DENSE]
    rows.append({"stage": "qat"})   # a TF stage: no runner, left alone
    tflite.time_rows(rows, runners, rounds=3, repeats=7)
    dense = [s for s in tflite.DENSE_STAGES if s in times]
    fastest = min(dense, key=lambda s: np.median(times[s]))
    assert fastest == {"uint8 fastest": "tflite_uint8",
                       "int8 fastest": tflite.FASTEST_DENSE}[case]
    for row in rows[:-1]:
        mine = np.array(times[row["stage"]])
        assert row["ms_per_token"] == pytest.approx(1e3 * np.median(mine))
        assert row["fastest_dense"] == fastest
        assert row["fastest_dense_ms"] == pytest.approx(
            1e3 * np.median(times[fastest]))
        assert row["x_fastest_dense"] == pytest.approx(
            np.median(mine / np.array(times[fastest])))
    assert rows[-1] == {"stage": "qat"}
    assert all(r.calls == [7, 7, 7] for r in runners.values())


def test_without_the_int8_dense_file_no_ratio():
    """TF 1.x writes no int8 file: ms/token only, no baseline."""
    rows = [{"stage": "tflite_uint8"}]
    tflite.time_rows(rows, {"tflite_uint8": _Scripted([2e-5] * 2)},
                     rounds=2)
    assert rows[0]["ms_per_token"] == pytest.approx(2e-2)
    assert "x_fastest_dense" not in rows[0]


def test_the_line_names_the_baseline():
    rows = [{"stage": s} for s in TIMES["uint8 fastest"]
            if s != tflite.FASTEST_DENSE]
    tflite.time_rows(rows, {
        s: _Scripted(t) for s, t in TIMES["uint8 fastest"].items()},
        rounds=3)
    for r in rows:
        r.update(technique="magnitude", test_ppl=100.0, ratio_to_float=1.0,
                 nonzero_weights=1, total_weights=2, bytes=3, gzip_bytes=2)
    line, = [l for l in rows_.format_table(rows)
             if l.startswith("ms/token:")]
    assert line.startswith(
        "ms/token: one thread, streaming (each file's model at batch 1, one "
        "token a call); against the fastest dense file (tflite_uint8, "
        "XNNPACK: %.4f ms/token): " % (1e3 * 3.5e-5))
    assert "tflite_int8_fused %.2f x" % rows[-1]["x_fastest_dense"] in line
