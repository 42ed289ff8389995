"""Filters what native code writes to the process's standard error (file
descriptor 2), which Python's ``sys.stderr`` and TensorFlow's log level
do not reach:

* TensorFlow's start-up lines (`base._quiet` filters its import through
  `filtered_fd2`);
* the TFLite converter's "Summary on the non-converted ops" (TF 2.15's
  MLIR converter writes it with ``llvm::errs()`` at every conversion,
  about 20 lines: the ``arith.constant`` ops it leaves to be folded, no
  error), dropped by `converter_output` around each conversion
  (``export.graphdef.convert``).

The converter's summary is dropped only once `quiet_converter` has been
called, which importing `base._quiet` does (the command lines, examples,
benchmarks and tests): like the rest of TensorFlow's chatter, the
library's modules never silence it by themselves. ``TF1_AWD_QUIET=0``
keeps it. Every other line written meanwhile is written out unchanged at
the end of the block. This module imports no TensorFlow.
"""
import contextlib
import os
import re
import sys
import tempfile

__all__ = ["filtered_fd2", "drop_converter_summary", "quiet_converter",
           "converter_output"]

_SETTINGS = {"quiet_converter": False}
_SUMMARY_START = "Summary on the non-converted ops:"
# The summary's other lines: its rule, its " * " figures, one "- op: N
# occurrences (types)" line per op, "  (types)" lines, and blank lines.
_SUMMARY_LINE = re.compile(
    r"^(?:-+| \* .*|- \S+: +\d+ occurrences.*| +\(.*\)|)$")


@contextlib.contextmanager
def filtered_fd2(keep):
    """Within the block, file descriptor 2 goes to a temporary file; at its
    end (also when the block raises) ``keep(text)`` of what was written is
    written to the real one. Where there is no descriptor 2 to capture,
    nothing is filtered.

    Args:
      keep: function ``str -> str``, the text to write out.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no fd 2 to capture
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            capture.seek(0)
            kept = keep(capture.read().decode("utf-8", "replace"))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


def drop_converter_summary(text):
    """``text`` without the converter's "Summary on the non-converted ops"
    blocks (each from its first line through the lines of its shape that
    follow); every other line kept."""
    kept, inside = [], False
    for line in text.splitlines(True):
        bare = line.rstrip("\r\n")
        if bare == _SUMMARY_START:
            inside = True
        elif not (inside and _SUMMARY_LINE.match(bare)):
            inside = False
            kept.append(line)
    return "".join(kept)


def quiet_converter():
    """From now on `converter_output` drops the converter's summary
    (unless ``TF1_AWD_QUIET=0``); `base._quiet` calls it."""
    _SETTINGS["quiet_converter"] = os.environ.get("TF1_AWD_QUIET") != "0"


def converter_output():
    """The context a TFLite conversion runs in: its summary of the
    non-converted ops dropped after `quiet_converter`, else nothing."""
    if _SETTINGS["quiet_converter"]:
        return filtered_fd2(drop_converter_summary)
    return contextlib.nullcontext()
