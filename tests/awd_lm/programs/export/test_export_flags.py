"""``awd-lm export`` refuses a flag that would do nothing (issue 54, item
6): one line naming the flag and what it needs, and only flags export has."""
from tf1_awd_sparse.awd_lm.programs import export
from support.lm import names_only_its_flags, one_error_line


def test_export_refuses_a_layout_of_a_dense_file(capsys):
    base = ["--model", "m", "--format", "int8", "--out", "x.tflite"]
    line = one_error_line(capsys, lambda: export.parse_args(
        base + ["--layout", "1x16"]))
    assert line.startswith("error: --layout has no effect here: it needs "
                           "--storage sparse")
    names_only_its_flags(line, export)
    assert export.parse_args(base).layout == "auto"
    assert export.parse_args(base + ["--storage", "sparse", "--layout",
                                     "1x16"]).layout == "1x16"
