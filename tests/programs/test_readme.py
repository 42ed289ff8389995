"""Every ```python block of README.md and docs/*.md runs as written
(issue 10.5).

Each block runs on its own: in a fresh Python process (so a fresh default
graph), in a temporary working directory, with a time limit. A block that
is intentionally not runnable (a fragment) is marked by an HTML comment
``<!-- not-run -->`` on the line right before its fence; such blocks are
counted and skipped. Blocks that fail today are listed in ``KNOWN_FAILING``
by a digest of their text, with the reason, and run as expected failures:
the entry stops applying as soon as the block's text changes, so a
rewritten block is held to the rule.
"""
import glob
import hashlib
import math
import os
import re
import subprocess
import sys
import warnings

import pytest

from support import ROOT
README = os.path.join(ROOT, "README.md")
#: The Markdown files whose python blocks run: the README and the reference
#: pages.
FILES = [README] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
NOT_RUN = "<!-- not-run -->"
TIME_LIMIT = 180  # seconds per block
#: A reader meets an example at once (issue 56): the README's first code
#: block opens within its first FIRST_BLOCK_WITHIN lines, and the whole
#: README is read in five minutes: at most README_MAX_LINES lines.
FIRST_BLOCK_WITHIN = 40
README_MAX_LINES = 300
#: Turns the old names' warnings (tf1_awd_sparse.base.legacy) into errors.
DEPRECATIONS_AS_ERRORS = "error:tf1_awd_sparse:DeprecationWarning"

# digest (see _digest) -> why the block fails today; empty: every block
# runs. An entry is for a block that cannot be fixed at once, and it
# stops applying as soon as the block's text changes.
KNOWN_FAILING = {}


def _digest(code):
    return hashlib.sha1(code.encode("utf-8")).hexdigest()[:12]


def readme_blocks(path=README):
    """The ```python blocks of a Markdown file.

    Returns:
      list of dicts: line (1-based line of the opening fence), code (str),
      not_run (bool: marked ``<!-- not-run -->``), digest.

    Raises:
      ValueError: an unclosed fence, or a not-run marker that is not right
        before a python block.
    """
    with open(path) as f:
        lines = f.read().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == NOT_RUN:
            nxt = i + 1
            if nxt >= len(lines) or not re.match(r"^```python\s*$",
                                                 lines[nxt]):
                raise ValueError("%s:%d: %s is not right before a ```python "
                                 "fence" % (path, i + 1, NOT_RUN))
        if re.match(r"^```python\s*$", lines[i]):
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise ValueError("%s:%d: unclosed ```python fence"
                                 % (path, i + 1))
            code = "\n".join(lines[i + 1:end]) + "\n"
            blocks.append({"line": i + 1, "code": code,
                           "not_run": i > 0 and lines[i - 1].strip()
                           == NOT_RUN, "digest": _digest(code)})
            i = end
        i += 1
    return blocks


BLOCKS = [dict(block, file=os.path.relpath(path, ROOT))
          for path in FILES for block in readme_blocks(path)]


def _params():
    params = []
    for block in BLOCKS:
        marks = []
        if block["not_run"]:
            marks.append(pytest.mark.skip(reason="marked %s in %s"
                                          % (NOT_RUN, block["file"])))
        elif block["digest"] in KNOWN_FAILING:
            marks.append(pytest.mark.xfail(
                reason=KNOWN_FAILING[block["digest"]], strict=True))
        params.append(pytest.param(block, marks=marks,
                                   id="%s:%d-%s" % (block["file"],
                                                    block["line"],
                                                    block["digest"])))
    return params


def _run_block(block, tmp_path):
    """Runs one block as a script; returns the finished process."""
    script = tmp_path / ("block_line%d.py" % block["line"])
    script.write_text(block["code"])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join(
                   [ROOT] + [p for p in os.environ.get(
                       "PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("TF_CONFIG", None)
    try:
        # This package's deprecation warnings are errors: the documented
        # names are the current ones (tests/base/test_legacy.py).
        proc = subprocess.run([sys.executable, "-W", DEPRECATIONS_AS_ERRORS,
                               str(script)], cwd=str(tmp_path),
                              env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True,
                              timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail("%s line %d: still running after %d s"
                    % (block["file"], block["line"], TIME_LIMIT))
    assert proc.returncode == 0, "%s line %d:\n%s" % (
        block["file"], block["line"], proc.stderr[-3000:])
    return proc


@pytest.mark.parametrize("block", _params())
def test_readme_block_runs(block, tmp_path):
    _run_block(block, tmp_path)


def test_readme_program_1_visibly_learns(tmp_path):
    """The first program prints its training loss per step: on data that
    can be learned it falls well below ln(vocab) within those few steps
    (on random ids it stayed at 6.908, as if nothing learned)."""
    block = [b for b in BLOCKS if b["file"] == "README.md"
             and "training loss" in b["code"]][0]
    out = _run_block(block, tmp_path).stdout
    losses = [float(x) for x in re.findall(r"training loss ([0-9.]+)", out)]
    evaluated = float(re.search(r"eval loss ([0-9.]+)", out).group(1))
    print(losses, evaluated)
    assert len(losses) >= 3
    assert losses[0] == pytest.approx(math.log(1000), abs=0.05)  # uniform
    assert losses[-1] < losses[0] - 1.0 and evaluated < losses[0] - 1.0


def test_readme_block_census():
    """Counts the blocks: run, marked not-run, expected to fail; a
    KNOWN_FAILING entry whose block is gone is reported."""
    digests = {b["digest"] for b in BLOCKS}
    counts = {"blocks": len(BLOCKS),
              "not_run": sum(b["not_run"] for b in BLOCKS),
              "known_failing": sum(not b["not_run"]
                                   and b["digest"] in KNOWN_FAILING
                                   for b in BLOCKS)}
    counts["run"] = counts["blocks"] - counts["not_run"] - counts[
        "known_failing"]
    print("python blocks of README.md and docs/: %(blocks)d; run %(run)d, "
          "not-run %(not_run)d, known failing %(known_failing)d" % counts)
    stale = sorted(set(KNOWN_FAILING) - digests)
    if stale:
        warnings.warn("tests/programs/test_readme.py: KNOWN_FAILING entries match no "
                      "block any more, delete them: %s" % stale)
    assert any(b["file"] == "README.md" for b in BLOCKS)


def test_block_parser(tmp_path):
    """The parser against a small Markdown file written here."""
    md = tmp_path / "x.md"
    md.write_text("text\n```python\na = 1\n```\n\n<!-- not-run -->\n"
                  "```python\nb = (\n```\n```bash\nls\n```\n")
    blocks = readme_blocks(str(md))
    assert [(b["line"], b["code"], b["not_run"]) for b in blocks] == [
        (2, "a = 1\n", False), (7, "b = (\n", True)]
    md.write_text("<!-- not-run -->\ntext\n```python\nx\n```\n")
    with pytest.raises(ValueError, match="not right before"):
        readme_blocks(str(md))
    md.write_text("```python\nx\n")
    with pytest.raises(ValueError, match="unclosed"):
        readme_blocks(str(md))


def first_block_line(path, within=FIRST_BLOCK_WITHIN):
    """The 1-based line of a Markdown file's first code fence (```, any
    language).

    Raises:
      ValueError: the file has no code block, or its first one opens after
        line ``within``.
    """
    with open(path) as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            if number > within:
                raise ValueError(
                    "%s: the first code block opens at line %d, after line "
                    "%d: open with a pitch and an example" % (path, number,
                                                              within))
            return number
    raise ValueError("%s: no code block" % path)


def test_the_readme_opens_with_an_example():
    """The README's first code block is within its first 40 lines, and the
    README is at most 300 lines (issue 56: the first was at line 28 only
    after a 22-line paragraph of figures, now figures live in
    docs/results.md)."""
    line = first_block_line(README)
    with open(README) as f:
        length = len(f.read().splitlines())
    print("README.md: first code block at line %d (at most %d); %d lines "
          "(at most %d)" % (line, FIRST_BLOCK_WITHIN, length,
                            README_MAX_LINES))
    assert length <= README_MAX_LINES


def test_the_first_block_check_refuses_a_late_example(tmp_path):
    """The floor's check against READMEs written here: a block at line 40
    passes, one at line 41 (or none) fails."""
    md = tmp_path / "README.md"
    md.write_text("# x\n" + "text\n" * 38 + "```bash\nls\n```\n")
    assert first_block_line(str(md)) == 40
    md.write_text("# x\n" + "text\n" * 39 + "```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="line 41, after line 40"):
        first_block_line(str(md))
    md.write_text("# x\ntext\n")
    with pytest.raises(ValueError, match="no code block"):
        first_block_line(str(md))
