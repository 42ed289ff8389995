"""The file the compression pipeline recommends (issue 55, item 3): the
rule (`ship.recommend`) on hand-built rows, without numpy or
TensorFlow, against the rule written out here as a filter and a sort;
its line; the pipelines a folder holds; --ship-ppl-target refused without
--compress. The rule on a real pipeline's rows, ``awd-lm info`` and
``awd-lm export`` of the run:
tests/awd_lm/training/compression/test_pipeline.py."""
import itertools
import json
import os

import pytest

from tf1_awd_sparse.awd_lm.training.compression import ship

from support.lm import one_error_line


def _file(stage, ratio, ms, size, ppl_scale=100.0):
    """A scored file's row (`tokens_scored`), ms None: not timed."""
    row = {"stage": stage, "technique": "magnitude",
           "test_ppl": ratio * ppl_scale, "ratio_to_reference": ratio,
           "bytes": size, "gzip_bytes": size // 2, "tokens_scored": 600}
    if ms is not None:
        row["ms_per_token"] = ms
        row["x_fastest_dense"] = ms / 2.0
    return row


#: Rows of a TF stage (no file): never a candidate, however good.
TF_ROWS = [{"stage": "reference", "technique": "-", "test_ppl": 90.0,
            "ratio_to_reference": 0.9, "bytes": 10},
           {"stage": "qat", "technique": "magnitude", "test_ppl": 95.0,
            "ratio_to_reference": 0.95, "bytes": 20}]


def _expected(rows, target):
    """The rule as the docs state it, by brute force: every ordering of
    the candidates, the first one that no other beats."""
    files = [r for r in rows if "tokens_scored" in r]
    within = [r for r in files if r["ratio_to_reference"] <= target]
    uint8 = [r["bytes"] for r in files if r["stage"] == "tflite_uint8"]
    # outside the target: the files smaller than the dense uint8 one and
    # faster than the fastest dense one, if any
    worth = [r for r in files
             if (not uint8 or r["bytes"] < uint8[0])
             and r.get("x_fastest_dense", 0.0) < 1.0]
    pool = within or worth or files

    def beats(a, b):   # does a come before b?
        if not within and a["test_ppl"] != b["test_ppl"]:
            return a["test_ppl"] < b["test_ppl"]
        ta, tb = a.get("ms_per_token"), b.get("ms_per_token")
        if (ta is None) != (tb is None):
            return ta is not None
        if ta is not None and ta != tb:
            return ta < tb
        if a["bytes"] != b["bytes"]:
            return a["bytes"] < b["bytes"]
        return files.index(a) < files.index(b)
    for a in pool:
        if all(a is b or beats(a, b) for b in pool):
            return a, bool(within)
    raise AssertionError("no first row")


CASES = {
    # the fused file: faster and within 1.05 although bigger than int8's
    "fastest within": [_file("tflite_float", 1.00, 0.9, 4000),
                       _file("tflite_uint8", 1.02, 0.5, 1200),
                       _file("tflite_int8", 1.03, 0.4, 300),
                       _file("tflite_int8_fused", 1.04, 0.2, 320)],
    # the fastest file is out of the target: the next fastest within
    "fastest is out": [_file("tflite_float", 1.00, 0.9, 4000),
                       _file("tflite_int8", 1.04, 0.4, 300),
                       _file("tflite_int8_fused", 1.09, 0.2, 320)],
    "none within": [_file("tflite_float", 1.07, 0.9, 4000),
                    _file("tflite_uint8", 1.06, 0.5, 1200),
                    _file("tflite_int8", 1.08, 0.2, 300)],
    "equal times": [_file("tflite_uint8", 1.01, 0.3, 1200),
                    _file("tflite_int8", 1.02, 0.3, 300),
                    _file("tflite_int8_fused", 1.03, 0.3, 320)],
    "no times": [_file("tflite_float", 1.00, None, 4000),
                 _file("tflite_uint8", 1.01, None, 1200)],
    "a timed file first": [_file("tflite_uint8", 1.01, None, 1200),
                           _file("tflite_float", 1.00, 0.9, 4000)],
    "equal ppl none within": [_file("tflite_float", 1.2, 0.9, 4000),
                              _file("tflite_uint8", 1.2, 0.5, 1200)],
    # none within, and none both smaller than the uint8 file and faster
    # than the fastest dense file (x = ms / 2): the lowest of all
    "none worth shipping": [_file("tflite_uint8", 1.06, 0.5, 1200),
                            _file("tflite_float", 1.07, 2.4, 1000),
                            _file("tflite_int8", 1.08, 2.0, 300)],
    # the smaller, faster file has the worse perplexity, yet is picked
    # over the float file (bigger) and the pruned fused one (slower)
    "worth shipping": [_file("tflite_float", 1.06, 0.9, 4000),
                       _file("tflite_uint8", 1.08, 0.5, 1200),
                       _file("tflite_int8_fused_pruned", 1.061, 2.2, 320),
                       _file("tflite_int8_fused", 1.09, 0.2, 330)],
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("target", [1.05, 1.0, 1.5])
def test_the_rule_picks_what_the_docs_say(name, target):
    for rows in itertools.permutations(CASES[name]):
        rows = TF_ROWS + list(rows)
        want, within = _expected(rows, target)
        got = ship.recommend(rows, target)
        assert got["stage"] == want["stage"], (name, target)
        assert got["within_target"] is within
        assert got["ship_ppl_target"] == target
        for key in ("bytes", "test_ppl", "ratio_to_reference",
                    "ms_per_token", "x_fastest_dense"):
            assert got[key] == want.get(key)
        assert got["path"] == want["stage"] + ".tflite"


def test_what_each_case_exercises():
    """The cases above pick what their names say (so that the brute force
    and the rule cannot agree on a case that tests nothing)."""
    pick = {name: ship.recommend(rows, 1.05)
            for name, rows in CASES.items()}
    assert pick["fastest within"]["stage"] == "tflite_int8_fused"
    assert pick["fastest is out"]["stage"] == "tflite_int8"
    assert pick["none within"]["stage"] == "tflite_int8"
    assert pick["none within"]["within_target"] is False
    assert pick["none within"]["fallback"] == ship.WORTH_SHIPPING
    assert pick["none worth shipping"]["stage"] == "tflite_uint8"
    assert pick["none worth shipping"]["fallback"] == \
        ship.ALL_FILES
    assert pick["worth shipping"]["stage"] == "tflite_int8_fused"
    assert pick["fastest within"]["fallback"] is None
    assert pick["equal times"]["stage"] == "tflite_int8"
    assert pick["no times"]["stage"] == "tflite_uint8"
    assert pick["a timed file first"]["stage"] == "tflite_float"
    assert pick["equal ppl none within"]["stage"] == "tflite_uint8"


def test_the_entry_describes_the_file():
    rows = CASES["fastest within"]
    got = ship.recommend(rows, 1.05)
    assert got["x_uint8_bytes"] == pytest.approx(320 / 1200.0)
    assert (got["format"], got["storage"], got["lstm"], got["model_dir"]) \
        == ("int8", "sparse", "fused", "qat")
    assert got["compressed_model"] is True
    float_only = ship.recommend(rows[:1], 1.05)
    assert float_only["x_uint8_bytes"] is None
    assert float_only["model_dir"] == "pruned"
    pruned = ship.recommend(CASES["worth shipping"][2:3], 1.1)
    assert (pruned["format"], pruned["storage"], pruned["lstm"],
            pruned["model_dir"]) == ("int8", "sparse", "fused", "pruned")


def test_a_file_of_another_model_competes_marked():
    """A scored file of another model in the table (the small-dense one):
    a candidate, marked, with no model directory to export again."""
    rows = CASES["fastest within"] + [
        _file("small_dense_uint8", 1.01, 0.1, 310)]
    got = ship.recommend(rows, 1.05)
    assert got["stage"] == "small_dense_uint8"
    assert got["compressed_model"] is False
    assert got["model_dir"] is None and got["format"] is None
    assert "another model" in ship.recommended_line(got)


def test_no_scored_file_no_recommendation():
    assert ship.recommend(TF_ROWS, 1.05) is None
    assert ship.recommended_line(None).startswith(
        "recommended: none")


@pytest.mark.parametrize("bad", [0, -1.0, True, "1.05", None])
def test_a_target_that_is_no_positive_ratio_is_refused(bad):
    with pytest.raises(ValueError, match="target"):
        ship.recommend(CASES["no times"], bad)


def test_the_line_states_the_entrys_figures():
    within = ship.recommend(CASES["fastest within"], 1.05)
    line = ship.recommended_line(within)
    assert line == (
        "recommended: tflite_int8_fused.tflite  320 bytes (%.2f x uint8)  "
        "%.2f x the fastest dense file's ms/token  ppl %.3f x ref (%.2f; "
        "the fastest within the 1.05 x ref target)" % (
            320 / 1200.0, within["x_fastest_dense"],
            within["ratio_to_reference"], within["test_ppl"]))
    missed = ship.recommend(CASES["none within"], 1.05)
    line = ship.recommended_line(missed)
    assert line.endswith(
        "NO file within the 1.05 x ref target: the lowest perplexity of "
        "the files smaller than the uint8 file and faster than the fastest "
        "dense file)")
    missed = ship.recommend(CASES["none worth shipping"], 1.05)
    assert ship.recommended_line(missed).endswith(
        "NO file within the 1.05 x ref target: the lowest perplexity)")
    untimed = ship.recommend(CASES["no times"], 1.05)
    assert "not timed" in ship.recommended_line(untimed)
    del untimed["x_fastest_dense"]
    untimed["ms_per_token"] = 0.25
    assert "0.2500 ms/token" in ship.recommended_line(untimed)


def test_the_pipelines_a_folder_holds(tmp_path):
    """A pipeline's folder (pipeline.json and a summary.json of rows), at
    the path or directly inside it; a summary without ``recommended``
    reads as None; anything else is no pipeline."""
    def pipeline(folder, summary):
        folder.mkdir(parents=True)
        (folder / "pipeline.json").write_text("{}")
        (folder / "summary.json").write_text(json.dumps(summary))
        return str(folder)
    entry = ship.recommend(CASES["no times"], 1.05)
    first = pipeline(tmp_path / "run" / "awd_compress",
                     {"stages": [], "recommended": entry})
    second = pipeline(tmp_path / "run" / "plain_compress", {"stages": []})
    (tmp_path / "run" / "awd").mkdir()
    (tmp_path / "run" / "awd" / "summary.json").write_text('{"a": 1}')
    run = str(tmp_path / "run")
    assert ship.pipeline_dirs(run) == [first, second]
    assert ship.pipeline_dirs(first) == [first]
    assert ship.pipeline_dirs(str(tmp_path / "none")) == []
    assert ship.read_recommendation(first) == entry
    assert ship.read_recommendation(second) is None
    with pytest.raises(ValueError, match="no compression pipeline"):
        ship.read_recommendation(run)
    with open(os.path.join(second, "summary.json"), "w") as handle:
        handle.write("{not json")
    with pytest.raises(ValueError, match="cannot read"):
        ship.pipeline_dirs(run)


def test_the_target_flag_is_refused_without_compress(tmp_path, capsys):
    from tf1_awd_sparse.awd_lm.programs import train as train_program
    out = tmp_path / "out"
    line = one_error_line(capsys, lambda: train_program.main(
        ["--ship-ppl-target", "1.1", "--out", str(out)]))
    assert line.startswith("error: --ship-ppl-target has no effect here")
    assert "--compress" in line
    assert not out.exists()
    line = one_error_line(capsys, lambda: train_program.main(
        ["--compress", "magnitude", "--ship-ppl-target", "0",
         "--out", str(out)]))
    assert "--ship-ppl-target" in line and not out.exists()


def test_the_target_flag_reaches_the_pipelines_parameters():
    from tf1_awd_sparse.awd_lm.config import presets
    from tf1_awd_sparse.awd_lm.config.params import as_params
    assert presets.DEFAULTS["ship_ppl_target"] == 1.05
    params = presets.params_for("demo", "awd", {"compress": "magnitude",
                                                "ship_ppl_target": 1.2})
    assert as_params(params).compression.ship_ppl_target == 1.2
    assert "ship_ppl_target" in presets.COMPRESS_KEYS
    assert "ship_ppl_target" not in presets.split_quant(
        as_params(params))[0].to_flat()
