"""`base.legacy`: the old names that still import - the flat awd_lm
names, with one warning that names the floor module, the programs' old
paths, and a module's moved names, with one warning that names their
module -, the names 0.3.0 deprecated gone, the version they are counted
from, and the project's own code and docs using no old name."""
import ast
import glob
import importlib
import os
import re
import subprocess
import sys

import pytest

from tf1_awd_sparse.base import legacy

from support import ROOT, project_python_files


#: Markdown that may name old names: the history (the changelog and the
#: experiment log, whose runs keep the commands they ran), and the page that
#: holds the table's description.
HISTORY = ("CHANGELOG.md", os.path.join("docs", "log.md"),
           os.path.join("docs", "architecture.md"))


#: What 0.3.0 deprecated and 0.4.0 removed, as CHANGELOG.md lists it
#: (0.3.0, Deprecated and Removed): old module names, and names that moved
#: out of a module that still exists (a sample of the 34, one per module).
REMOVED_0_4_MODULES = (
    "tf1_awd_sparse._checks", "tf1_awd_sparse._compat",
    "tf1_awd_sparse.magnitude_pruning", "tf1_awd_sparse.mask_placement",
    "tf1_awd_sparse.quantization.export",
    "tf1_awd_sparse.quantization.fake_quant",
    "tf1_awd_sparse.quantization.lstm")
REMOVED_0_4_NAMES = (
    ("tf1_awd_sparse.base.checks", "smart_cond"),
    ("tf1_awd_sparse.base.checks", "derived_seed"),
    ("tf1_awd_sparse.base.checks", "check_checkpoint"),
    ("tf1_awd_sparse.ops.sparse.layer_utils", "check_training"),
    ("tf1_awd_sparse.ops.fake_quant", "check_num_bits"),
    ("tf1_awd_sparse.ops.mask_placement", "restorable_variables"),
    ("tf1_awd_sparse.transforms.techniques", "add_to_collection"),
    ("tf1_awd_sparse.export.tflite", "TFLiteRunner"),
    ("tf1_awd_sparse.layers.weight_drop_lstm", "DropConnect"),
    ("weight_drop_lstm", "LSTMStateTuple"),
    ("tf1_awd_sparse.awd_lm.estimator", "MaskUpdateHook"))


def old_names_used(source):
    """The deprecated names a Python source uses: modules it imports,
    ``from awd_lm import NAME`` of one (`legacy.FLAT_AWD_LM_MODULES`), and
    ``from MODULE import NAME`` of a moved name (`legacy.MOVED_NAMES`).

    Returns:
      sorted list of dotted names that are in the table of old names.
    """
    used = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            used.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            used.add(node.module)
            used.update(node.module + "." + a.name for a in node.names)
    moved = set("%s.%s" % (module, name) for module, names_ in
                legacy.MOVED_NAMES.items() for name in names_)
    return sorted(u for u in used
                  if u in legacy.FLAT_AWD_LM_MODULES or u in moved)


@pytest.mark.per_python
def test_the_checker_finds_old_names():
    source = ("import tf1_awd_sparse.awd_lm.train\n"
              "from tf1_awd_sparse.awd_lm import presets\n"
              "from tf1_awd_sparse.awd_lm.data import read_ptb as rp\n")
    assert old_names_used(source) == [
        "tf1_awd_sparse.awd_lm.data", "tf1_awd_sparse.awd_lm.presets",
        "tf1_awd_sparse.awd_lm.train"]
    assert old_names_used("from tf1_awd_sparse.awd_lm.training import train\n"
                          "from tf1_awd_sparse.awd_lm import estimator\n"
                          ) == []
    assert old_names_used(
        "from tf1_awd_sparse.awd_lm.programs.estimator import (FLAGS,\n"
        "    main)\n") == ["tf1_awd_sparse.awd_lm.programs.estimator.FLAGS"]


@pytest.mark.per_python
def test_the_project_imports_no_old_name():
    found = {}
    for path in project_python_files():
        with open(path) as f:
            used = old_names_used(f.read())
        if used:
            found[os.path.relpath(path, ROOT)] = used
    assert found == {}


@pytest.mark.per_python
def test_the_docs_name_no_old_name():
    pattern = re.compile(r"\b(%s)\b(?!\.\w)" % "|".join(
        re.escape(n) for n in sorted(set(REMOVED_0_4_MODULES)
                                     | set(legacy.FLAT_AWD_LM_MODULES))))
    found = {}
    for path in [os.path.join(ROOT, "README.md")] + glob.glob(
            os.path.join(ROOT, "docs", "*.md")):
        if os.path.relpath(path, ROOT) in HISTORY:
            continue
        with open(path) as f:
            text = f.read()
        hits = set(pattern.findall(text))
        for block in re.findall(r"^```python\n(.*?)^```", text, re.M | re.S):
            hits |= set(old_names_used(block))   # ``from awd_lm import lm``
        hits = sorted(hits)
        if hits:
            found[os.path.relpath(path, ROOT)] = hits
    assert found == {}

_OLD_NAMES_RUN = r"""
import importlib, json, sys, warnings
from tf1_awd_sparse.base import legacy
out = {"modules": {}, "gone": {}, "programs": {}, "moved": {}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for old, new in sorted(legacy.FLAT_AWD_LM_MODULES.items()):
        del caught[:]
        exec("import %s" % old)
        first = [(str(w.message), w.filename) for w in caught
                 if issubclass(w.category, DeprecationWarning)
                 and str(w.message).startswith("tf1_awd_sparse")]
        same = importlib.import_module(old) is importlib.import_module(new)
        del caught[:]
        exec("import %s" % old)
        again = [w for w in caught if str(w.message).startswith(old)]
        out["modules"][old] = [first, same, len(again)]
    for old, name in sorted(legacy.PROGRAM_PATHS.items()):
        del caught[:]
        exec("from tf1_awd_sparse.awd_lm import %s as imported" % name)
        same = imported is importlib.import_module(
            "tf1_awd_sparse.awd_lm.programs." + name)
        out["programs"][old] = [same, len(caught)]
    for module, moved in sorted(legacy.MOVED_NAMES.items()):
        # A program's old path is the same module: the names take turns
        # at being first used from it, so that both paths are seen warning.
        paths = [module] + sorted(
            old for old, name in legacy.PROGRAM_PATHS.items()
            if module == "tf1_awd_sparse.awd_lm.programs." + name)
        for i, (name, home) in enumerate(sorted(moved.items())):
            path = paths[i % len(paths)]
            del caught[:]
            exec("from %s import %s as imported" % (path, name))
            first = [(str(w.message), w.filename) for w in caught
                     if issubclass(w.category, DeprecationWarning)
                     and str(w.message).startswith("tf1_awd_sparse")]
            home_object = getattr(importlib.import_module(home), name)
            same = [imported is home_object]
            del caught[:]
            for other in paths:
                exec("from %s import %s as imported" % (other, name))
                same.append(imported is home_object)
                same.append(getattr(importlib.import_module(other), name)
                            is home_object)
            out["moved"][module + "." + name] = [first, path, same,
                                                 len(caught)]
def error_of(statement):
    try:
        exec(statement)
    except ImportError as e:
        return type(e).__name__
    except AttributeError as e:
        return type(e).__name__
for old in REMOVED_MODULES:
    parent, _, leaf = old.rpartition(".")
    out["gone"][old] = [error_of("import %s" % old),
                        error_of("from %s import %s" % (parent, leaf))]
for module, name in REMOVED_NAMES:
    out["gone"][module + "." + name] = [
        error_of("getattr(importlib.import_module(%r), %r)" % (module, name)),
        error_of("from %s import %s" % (module, name))]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def old_names_run():
    """What a fresh interpreter sees when it uses every old name twice."""
    import json
    code = ("REMOVED_MODULES = %r\nREMOVED_NAMES = %r\n"
            % (REMOVED_0_4_MODULES, REMOVED_0_4_NAMES)) + _OLD_NAMES_RUN
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("old", sorted(legacy.FLAT_AWD_LM_MODULES))
def test_a_flat_awd_lm_name_warns_once_with_its_floor_module(old,
                                                              old_names_run):
    first, same, again = old_names_run["modules"][old]
    assert same                     # the module it is now, not a copy
    assert len(first) == 1, first   # one warning the first time ...
    assert again == 0               # ... and none the second
    message, filename = first[0]
    assert message.startswith(old + " is deprecated")
    assert legacy.FLAT_AWD_LM_MODULES[old] in message
    assert legacy.REMOVED_IN in message
    # It points at the line that imported the old name, in the run's
    # __main__ (CPython 3.7 names it by sys.argv[0], later ones by the code).
    assert filename in ("<string>", "-c"), filename


@pytest.mark.parametrize("old", sorted(legacy.PROGRAM_PATHS))
def test_a_programs_old_path_is_its_module_without_a_warning(old,
                                                              old_names_run):
    assert old_names_run["programs"][old] == [True, 0]


MOVED = sorted("%s.%s" % (module, name) for module, moved in
               legacy.MOVED_NAMES.items() for name in moved)


@pytest.mark.parametrize("old", MOVED)
def test_a_moved_name_is_its_object_and_warns_once_naming_its_module(
        old, old_names_run):
    """``from tf1_awd_sparse.awd_lm.programs.estimator import FLAGS`` (or
    from the program's old path, ``awd_lm.estimator``) is
    ``distributed.cli.FLAGS``, warned about once."""
    first, path, same, again = old_names_run["moved"][old]
    module, _, name = old.rpartition(".")
    assert all(same), same      # the defining module's object, by any path
    assert len(first) == 1, (path, first)
    message, filename = first[0]
    # 0.4.0 exported them without a warning: deprecated by the next
    # release, gone one later.
    assert message.startswith(old + " is deprecated since %s and goes in %s"
                              % (legacy.NEXT_DEPRECATED_SINCE,
                                 legacy.NEXT_REMOVED_IN)), message
    assert message.endswith("use %s.%s" % (legacy.MOVED_NAMES[module][name],
                                           name)), message
    assert filename in ("<string>", "-c"), filename   # the importing line
    assert again == 0


def test_a_moved_name_is_not_listed_where_it_no_longer_lives():
    """The module lists what it defines: ``import *`` takes no moved name,
    and its moved names are no attributes until asked for."""
    for module, moved in legacy.MOVED_NAMES.items():
        imported = importlib.import_module(module)
        assert not set(moved) & set(imported.__all__), module
        assert not set(moved) & set(vars(imported)), module


def test_a_programs_old_path_runs_the_program():
    """``python -m tf1_awd_sparse.awd_lm.score`` is ``awd-lm score``."""
    proc = subprocess.run(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm.score", "--help"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("usage: awd-lm score"), proc.stdout[:200]


@pytest.mark.parametrize("old", sorted(
    REMOVED_0_4_MODULES + tuple("%s.%s" % k for k in REMOVED_0_4_NAMES)))
def test_the_names_deprecated_in_0_3_0_are_gone(old, old_names_run):
    """0.4.0 drops them, as 0.3.0 announced: a module name no longer
    imports, a moved name is no attribute of its old module (Python's own
    errors: CHANGELOG.md says where each went)."""
    kinds = old_names_run["gone"][old]
    assert None not in kinds, "%s still imports" % old
    if old in REMOVED_0_4_MODULES:
        assert kinds == ["ModuleNotFoundError", "ImportError"], kinds
    else:
        assert kinds == ["AttributeError", "ImportError"], kinds


def test_an_unknown_name_is_a_plain_attribute_error():
    from tf1_awd_sparse.ops import fake_quant
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'$"):
        fake_quant.no_such_name  # pylint: disable=pointless-statement

def _version(text):
    return tuple(int(p) for p in text.split("."))


def test_the_version_is_the_changelogs_and_the_tables():
    """One version (issue 54): the package's is the newest released
    CHANGELOG entry (0.4.0, released with the removals 0.3.0 announced;
    what comes next collects under ``## [Unreleased]`` above it, issue 56);
    the warnings' "deprecated since" is that version, and the flat awd_lm
    names go in a later one."""
    import tf1_awd_sparse
    with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
        newest = re.search(r"^## \[(\d[^\]]*)\]", f.read(), re.M).group(1)
    assert _version(tf1_awd_sparse.__version__) == _version(newest)
    assert legacy.DEPRECATED_SINCE == tf1_awd_sparse.__version__
    assert _version(legacy.REMOVED_IN) > _version(legacy.DEPRECATED_SINCE)
