"""The docs name only modules that exist: every library path
(``tf1_awd_sparse/export/tflite_schema.py``), every dotted name
(``tf1_awd_sparse.awd_lm.inference.export_lm``) and every backticked
awd_lm name (`awd_lm.graph.distill`) in README.md and docs/*.md, and in the
docstrings and comments of the library, examples, benchmarks and tools,
resolves in the tree as it is, so that a reorganisation that moves a module
also moves what is said about it (issue 56: architecture.md named a module
that had become another)."""
import glob
import importlib
import os
import re
import warnings

import pytest

from support import BENCHMARKS, EXAMPLES, LIBRARY, ROOT, library_files

from tf1_awd_sparse.base import legacy

pytestmark = pytest.mark.per_python

#: The experiment log keeps the commands and module names of its runs.
HISTORY = (os.path.join("docs", "log.md"),)
#: Names that do not resolve on purpose, and why.
NOT_MODULES = {
    "tf1_awd_sparse._checks": "architecture.md: a name 0.4.0 removed",
    "tf1_awd_sparse.awd_lm.programs.NAME": "awd_lm.md: NAME, a placeholder",
    "tf1_awd_sparse.awd_lm.NAME": "programs/__init__.py: a placeholder",
    "tf1_awd_sparse.state_widths": "fused_lstm.py: a metadata entry's name",
}
#: Source files that name old modules on purpose.
OLD_NAMES_ON_PURPOSE = {
    os.path.join(LIBRARY, "base", "legacy.py"): "the old names' table",
}

PATH = re.compile(r"\b%s/[\w/]*\w(?:\.py)?" % LIBRARY)
DOTTED = re.compile(r"\b%s(?:\.\w+)+" % LIBRARY)
#: awd_lm's names written from the package down (``awd_lm.graph.model``);
#: names relative to a floor (``export.export_lm`` in awd_lm.md's table)
#: are not read.
AWD_LM = re.compile(r"`(awd_lm(?:\.\w+)+)")


def _texts(paths, leave_out):
    """{path relative to the root: text} of ``paths``, but ``leave_out``."""
    out = {}
    for path in paths:
        name = os.path.relpath(path, ROOT)
        if name not in leave_out:
            with open(path) as f:
                out[name] = f.read()
    return out


def docs():
    """{relative path: text} of README.md and docs/*.md, history left out."""
    return _texts([os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md"))), HISTORY)


def sources():
    """{relative path: text} of the library's, the examples', the
    benchmarks' and the tools' Python files (`OLD_NAMES_ON_PURPOSE` left
    out)."""
    return _texts(library_files() + sorted(
        glob.glob(os.path.join(EXAMPLES, "*.py"))
        + glob.glob(os.path.join(BENCHMARKS, "*.py"))
        + glob.glob(os.path.join(ROOT, "tools", "*.py"))),
        OLD_NAMES_ON_PURPOSE)


def resolves(dotted):
    """Whether ``dotted`` is a module, or a module's attribute (of an
    attribute ...): the longest prefix that imports, then attributes. An
    old name of `base.legacy` imports (with its warning, not shown)."""
    parts = dotted.split(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for i in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for part in parts[i:]:
                if not hasattr(found, part):
                    return False
                found = getattr(found, part)
            return True
    return False


def through_flat_name(dotted):
    """Whether ``dotted`` resolves only through a deprecated flat awd_lm
    name (``awd_lm.train.run``): stale in the docs."""
    parts = dotted.split(".")
    return any(".".join(parts[:i]) in legacy.FLAT_AWD_LM_MODULES
               for i in range(1, len(parts) + 1))


def unresolved(texts):
    """{doc: sorted names it mentions that do not resolve}."""
    found = {}
    for doc, text in sorted(texts.items()):
        bad = set()
        for path in PATH.findall(text):
            full = os.path.join(ROOT, path)
            if not (os.path.exists(full) or os.path.exists(full + ".py")):
                bad.add(path)
        for name in DOTTED.findall(text):
            if name not in NOT_MODULES and not resolves(name):
                bad.add(name)
        for short in AWD_LM.findall(text):
            name = LIBRARY + "." + short
            if through_flat_name(name) or not resolves(name):
                bad.add(short)
        if bad:
            found[doc] = sorted(bad)
    return found


def test_the_docs_name_only_modules_that_exist():
    assert unresolved(docs()) == {}


def test_the_code_names_only_modules_that_exist():
    assert unresolved(sources()) == {}


def test_the_allowed_names_still_do_not_resolve():
    """An exception that resolves again is not needed any more, and a
    file named as an exception exists."""
    assert [n for n in NOT_MODULES if resolves(n)] == []
    assert all(os.path.exists(os.path.join(ROOT, p))
               for p in OLD_NAMES_ON_PURPOSE)


def test_the_check_finds_each_kind_of_stale_name():
    text = ("`tf1_awd_sparse/export/tflite_schema.py` and "
            "tf1_awd_sparse/export/no_such.py, the folder tf1_awd_sparse/"
            "awd_lm/training/compression/, `tf1_awd_sparse.export.tflite_file`"
            ", tf1_awd_sparse.export.tflite_file.no_such_reader, "
            "tf1_awd_sparse.awd_lm.nothing; `awd_lm.graph.distill`, "
            "`awd_lm.distill` (the flat name), `awd_lm.corpus.gone`, "
            "`export.export_lm` (relative), tf1_awd_sparse.awd_lm.score "
            "(a program's old path)")
    assert unresolved({"a.md": text}) == {"a.md": [
        "awd_lm.corpus.gone", "awd_lm.distill",
        "tf1_awd_sparse.awd_lm.nothing",
        "tf1_awd_sparse.export.tflite_file.no_such_reader",
        "tf1_awd_sparse/export/no_such.py"]}
