"""records.sparsity_series / plot_sparsity / sparsity_table and the
``python -m tf1_awd_sparse.awd_lm.training.records --sparsity-plot`` command, on
tiny hand-written compression summaries (no TensorFlow)."""
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.figure  # noqa: E402
import pytest  # noqa: E402

from tf1_awd_sparse.awd_lm.training import records  # noqa: E402
from support.lm_api import summary_json  # noqa: E402

FLOAT, REF = 100.0, 101.0


TOTAL = 1000


def _row(stage, technique, ppl, sparsity=0.0, target=0.5, reached=None):
    return {"stage": stage, "technique": technique, "test_ppl": ppl,
            "sparsity": sparsity, "target_sparsity": target,
            "reached_target": reached, "ratio_to_float": ppl / FLOAT,
            "ratio_to_reference": ppl / REF, "total_weights": TOTAL,
            "nonzero_weights": int(round((1 - sparsity) * TOTAL))}


def _summary(target, points):
    """points: {technique: (sparsity, test ppl)}; QAT and TFLite rows of
    the chosen technique as the pipeline writes them (not plotted)."""
    rows = [_row("float", "-", FLOAT, target=target),
            _row("reference", "-", REF, target=target)]
    rows += [_row("sparse", t, ppl, sp, target, sp >= target)
             for t, (sp, ppl) in sorted(points.items())]
    rows.append(_row("qat", "magnitude", 999.0, target, target, True))
    rows.append(_row("tflite_uint8", "magnitude", 998.0, target, target,
                     True))
    return {"stages": rows}


# Given in the order of the runs, not of sparsity: the series sorts.
SUMMARIES = [
    _summary(0.9, {"magnitude": (0.9, 120.0), "l0": (0.9, 125.0),
                   "variational_dropout": (0.85, 130.0)}),
    _summary(0.5, {"magnitude": (0.5, 102.0), "l0": (0.5, 103.0),
                   "variational_dropout": (0.5, 104.0)}),
]
EXPECTED = {"magnitude": [(50.0, 102.0), (90.0, 120.0)],
            "l0": [(50.0, 103.0), (90.0, 125.0)],
            "variational_dropout": [(50.0, 104.0), (85.0, 130.0)]}


def test_plot_draws_the_rows(tmp_path, monkeypatch):
    drawn = {}
    save = matplotlib.figure.Figure.savefig

    def capture(fig, *args, **kwargs):   # the lines as they are saved
        for line in fig.axes[0].get_lines():
            drawn[line.get_label()] = list(zip(line.get_xdata(),
                                               line.get_ydata()))
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", capture)
    path = tmp_path / "sparsity.png"
    series = records.plot_sparsity(SUMMARIES, str(path))
    with open(str(path), "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    for name, points in EXPECTED.items():
        assert drawn[name] == pytest.approx(points)
        assert [(100 * p["sparsity"], p["test_ppl"])
                for p in series["techniques"][name]] == pytest.approx(points)
    assert set(series["techniques"]) == set(EXPECTED)
    # The float and reference lines are horizontal at their perplexities.
    assert {y for _, y in drawn["float %.1f" % FLOAT]} == {FLOAT}
    ref = [k for k in drawn if k.startswith("fine-tuned reference")]
    assert ref == ["fine-tuned reference 101.0"]
    assert {y for _, y in drawn[ref[0]]} == {REF}
    assert series["reference_ppl"] == [REF, REF]
    mag_090 = series["techniques"]["magnitude"][1]
    assert mag_090 == pytest.approx({
        "target": 0.9, "sparsity": 0.9, "test_ppl": 120.0,
        "ratio_to_float": 1.2, "ratio_to_reference": 120.0 / 101.0,
        "reached": True, "nonzero": 100, "total": TOTAL,
        "target_zeros": 900})
    assert series["techniques"]["variational_dropout"][1]["reached"] is False


def test_references_that_differ_are_averaged(tmp_path, monkeypatch):
    labels = {}
    save = matplotlib.figure.Figure.savefig

    def capture(fig, *args, **kwargs):
        for line in fig.axes[0].get_lines():
            labels[line.get_label()] = sorted(set(line.get_ydata()))
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", capture)
    other = _summary(0.8, {"magnitude": (0.8, 110.0)})
    other["stages"][1]["test_ppl"] = 103.0
    records.plot_sparsity(SUMMARIES + [other], str(tmp_path / "r.png"))
    # (101 + 101 + 103) / 3
    assert labels["fine-tuned reference 101.7 (mean of 3)"] == \
        pytest.approx([305.0 / 3])


def test_command_prints_the_table(tmp_path, capsys):
    names = []
    for i, summary in enumerate(SUMMARIES):
        names.append(str(tmp_path / ("s%d.json" % i)))
        with open(names[-1], "w") as handle:
            json.dump(summary, handle)
    out = str(tmp_path / "out.png")
    assert records.main(["--sparsity-plot", out] + names) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split(" | ") == [
        "l0                 ", "  0.50", "  103.00", "  1.030", "1.020",
        "  50.00", "     500", "yes"]
    vd = [l for l in lines if l.startswith("variational_dropout")]
    # 150 non-zero where the target 0.9 of 1000 leaves 100.
    assert vd[1].split(" | ")[2:] == ["  130.00", "  1.300", "1.287",
                                      "  85.00", "     150", "no (50 short)"]
    assert lines[-2] == ("float test ppl 100.00; fine-tuned reference "
                         "101.00 101.00")
    assert lines[-1] == "wrote " + out


def test_bad_summaries_are_refused(tmp_path):
    path = str(tmp_path / "x.png")
    with pytest.raises(ValueError, match="summaries: expected at least one"):
        records.plot_sparsity([], path)
    other = _summary(0.8, {"magnitude": (0.8, 110.0)})
    other["stages"][0]["test_ppl"] = 90.0
    with pytest.raises(ValueError, match="one float model.*90.0, 100.0"):
        records.sparsity_series(SUMMARIES + [other])
    no_sparse = {"stages": SUMMARIES[0]["stages"][:2]}
    with pytest.raises(ValueError, match=r"summaries\[1\]: expected 'sparse'"):
        records.sparsity_series([SUMMARIES[0], no_sparse])
    with pytest.raises(ValueError, match="one 'float' row"):
        records.sparsity_series([{"stages": SUMMARIES[0]["stages"][1:]}])


def test_plots_are_skipped_with_one_line_without_matplotlib(tmp_path,
                                                            monkeypatch):
    # matplotlib is optional: its absence (an import that fails) skips
    # each plot with one line, writes nothing and raises nothing.
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named %r" % name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    lines = []
    curves = str(tmp_path / "curves.png")
    summary = summary_json("m", 5.0)
    assert records.plot_curves([summary], curves, log=lines.append) is False
    series = records.plot_sparsity(SUMMARIES, str(tmp_path / "s.png"),
                                   log=lines.append)
    assert series["written"] is False and "magnitude" in series["techniques"]
    assert lines == ["plot skipped: matplotlib is not installed (pip install "
                     "matplotlib); %s not written" % p
                     for p in (curves, str(tmp_path / "s.png"))]
    assert os.listdir(str(tmp_path)) == []


def test_an_unwritable_plot_is_skipped_with_one_line(tmp_path):
    lines = []
    path = str(tmp_path / "missing" / "curves.png")
    summary = summary_json("m", 5.0)
    assert records.plot_curves([summary], path, log=lines.append) is False
    assert len(lines) == 1 and lines[0].startswith(
        "plot skipped: %s not written (" % path)
