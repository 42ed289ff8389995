"""The docs name only modules that exist: every library path
(``tf1_awd_sparse/export/tflite_schema.py``), every dotted name
(``tf1_awd_sparse.awd_lm.inference.export_lm``) and every backticked
awd_lm name (`awd_lm.graph.distill`) in README.md and docs/*.md resolves in
the tree as it is, so that a reorganisation that moves a module also moves
what the docs say about it (issue 56: architecture.md named a module that
had become another)."""
import glob
import importlib
import os
import re
import warnings

import pytest

from support import LIBRARY, ROOT

from tf1_awd_sparse.base import legacy

pytestmark = pytest.mark.per_python

#: The experiment log keeps the commands and module names of its runs.
HISTORY = (os.path.join("docs", "log.md"),)
#: Names that do not resolve on purpose, and why.
NOT_MODULES = {
    "tf1_awd_sparse._checks": "architecture.md: a name 0.4.0 removed",
    "tf1_awd_sparse.awd_lm.programs.NAME": "awd_lm.md: NAME, a placeholder",
}

PATH = re.compile(r"\b%s/[\w/]*\w(?:\.py)?" % LIBRARY)
DOTTED = re.compile(r"\b%s(?:\.\w+)+" % LIBRARY)
#: awd_lm's names written from the package down (``awd_lm.graph.model``);
#: names relative to a floor (``export.export_lm`` in awd_lm.md's table)
#: are not read.
AWD_LM = re.compile(r"`(awd_lm(?:\.\w+)+)")


def docs():
    """{relative path: text} of README.md and docs/*.md, history left out."""
    paths = [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))
    out = {}
    for path in paths:
        name = os.path.relpath(path, ROOT)
        if name not in HISTORY:
            with open(path) as f:
                out[name] = f.read()
    return out


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


def test_the_allowed_names_still_do_not_resolve():
    """An exception that resolves again is not needed any more."""
    assert [n for n in NOT_MODULES if resolves(n)] == []


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
