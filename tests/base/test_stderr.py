"""`base._stderr`: what native code writes to file descriptor 2 is
filtered there (the bytes a child process or C++ writes, read back with
pytest's ``capfd``), the converter's summary goes and every other line
stays, and ``TF1_AWD_QUIET=0`` keeps the summary."""
import os

import pytest

from tf1_awd_sparse.base import _stderr

#: What TF 2.15.1's converter wrote at the conversion of a uint8 language
#: model (an `awd-lm export`): about 20 lines per conversion.
SUMMARY = [
    "Summary on the non-converted ops:",
    "---------------------------------",
    " * Accepted dialects: tfl, builtin, func",
    " * Non-Converted Ops: 13, Total Ops 324, % non-converted = 4.01 %",
    " * 13 ARITH ops", "",
    "- arith.constant:   13 occurrences  (i32: 13)", "", "", "",
    "  (uq_8: 20)", "  (uq_8: 21)", "  (uq_8: 3, uq_32: 21)", "  (f32: 40)",
]
#: Lines that are no part of a summary: a real converter error, Python's
#: own, lines of a summary's shape after another line (not in one).
REAL = [
    "2026-12-01 10:02:49.151366: E tensorflow/lite/toco/toco_tooling.cc:"
    "1] Unsupported op: Foo",
    "Traceback (most recent call last):",
    "- not.a.summary:   2 occurrences  (i32: 2)",
    "",
    "UserWarning: something the program should see",
]


def test_the_converter_summary_goes_other_lines_stay(capfd):
    text = "\n".join(REAL[:1] + SUMMARY + REAL[1:] + SUMMARY) + "\n"
    assert _stderr.drop_converter_summary(text).splitlines() == REAL
    # Around a conversion, at the file descriptor (where the converter's
    # C++ writes): this process imported _quiet (conftest.py).
    with _stderr.converter_output():
        os.write(2, text.encode())
    assert capfd.readouterr().err.splitlines() == REAL


def test_without_a_summary_the_text_is_unchanged():
    text = "\r\n".join(REAL) + "\r\n"
    assert _stderr.drop_converter_summary(text) == text


@pytest.mark.parametrize("quiet,kept", [("0", True), ("1", False),
                                        (None, False)])
def test_tf1_awd_quiet_0_keeps_the_summary(capfd, monkeypatch, quiet, kept):
    monkeypatch.setitem(_stderr._SETTINGS, "quiet_converter", False)
    if quiet is None:
        monkeypatch.delenv("TF1_AWD_QUIET", raising=False)
    else:
        monkeypatch.setenv("TF1_AWD_QUIET", quiet)
    _stderr.quiet_converter()
    text = "\n".join(SUMMARY + REAL) + "\n"
    with _stderr.converter_output():
        os.write(2, text.encode())
    assert capfd.readouterr().err == (text if kept else
                                      "\n".join(REAL) + "\n")


def test_the_filter_writes_what_keep_returns_also_when_the_block_raises(
        capfd):
    seen = []

    def keep(text):
        seen.append(text)
        return text.upper()

    with pytest.raises(KeyError):
        with _stderr.filtered_fd2(keep):
            os.write(2, b"native line\n")
            raise KeyError("raised inside")
    assert seen == ["native line\n"]
    assert capfd.readouterr().err == "NATIVE LINE\n"
    # Descriptor 2 is the real one again: a write after the block is not
    # filtered.
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"
    with _stderr.filtered_fd2(lambda text: ""):
        os.write(2, b"dropped\n")
    assert capfd.readouterr().err == ""
