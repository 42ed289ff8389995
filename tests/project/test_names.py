"""One name for each thing (tf1_awd_sparse.base.names): the public names are
the floor modules themselves and the packages' tables (docs/api.md); the
old names that still import are base.legacy's (the flat awd_lm names, with
one warning that names the floor module, and the programs' old paths); the
names 0.3.0 deprecated are gone; and the project's own code and docs use
no old name."""
import ast
import glob
import importlib
import os
import re
import subprocess
import sys

import pytest

from tf1_awd_sparse.base import legacy, names

from support import ROOT
#: Where the project's Python lives (everything but the virtualenvs).
CODE_DIRS = ("tf1_awd_sparse", "sparse_layers", "tests", "examples",
             "benchmarks", "tools")
#: Markdown that may name old names: the history (the changelog and the
#: experiment log, whose runs keep the commands they ran), and the page that
#: holds the table's description.
HISTORY = ("CHANGELOG.md", os.path.join("docs", "log.md"),
           os.path.join("docs", "architecture.md"))


def _python_files():
    found = glob.glob(os.path.join(ROOT, "*.py"))
    for top in CODE_DIRS:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            found += [os.path.join(folder, f) for f in files
                      if f.endswith(".py")]
    return sorted(found)


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
    """The deprecated names a Python source uses: modules it imports, and
    ``from awd_lm import NAME`` of one (`legacy.FLAT_AWD_LM_MODULES`).

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
    return sorted(u for u in used if u in legacy.FLAT_AWD_LM_MODULES)


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


@pytest.mark.per_python
def test_the_project_imports_no_old_name():
    found = {}
    for path in _python_files():
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


def test_the_public_names_are_the_floor_modules():
    for public, module in sorted(names.PUBLIC.items()):
        assert importlib.import_module(public) is \
            importlib.import_module(module), public
    # Every facade file is in the table, and every table entry has its file.
    facades = set()
    for path in _python_files():
        if os.path.relpath(path, ROOT).startswith("tests" + os.sep):
            continue
        with open(path) as f:
            if "_names.public_module(__name__)" in f.read():
                facades.add(os.path.relpath(path, ROOT)[:-3].replace(
                    os.sep, "."))
    assert facades == set(names.PUBLIC)
    import variational_dropout
    from tf1_awd_sparse.layers import dropout
    from tf1_awd_sparse.transforms import held_mask
    assert variational_dropout.HeldMask is held_mask.HeldMask
    assert variational_dropout.locked_dropout is dropout.locked_dropout


_OLD_NAMES_RUN = r"""
import importlib, json, sys, warnings
from tf1_awd_sparse.base import legacy
out = {"modules": {}, "gone": {}, "programs": {}}
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


def test_the_public_names_raise_no_deprecation_warning():
    """With this package's deprecation warnings as errors, the README's
    names import and a cell builds (the README's programs run the same way
    in tests/programs/test_readme.py)."""
    code = ("import weight_drop_lstm, variational_dropout, sparse_layers\n"
            "import tf1_awd_sparse, tf1_awd_sparse.quantization\n"
            "import tf1_awd_sparse.awd_lm, tf1_awd_sparse.transforms\n"
            "import importlib\n"
            "from tf1_awd_sparse.base import names\n"
            "for public in sorted(names.PUBLIC):\n"
            "    importlib.import_module(public)\n"
            "for package in %r:\n"
            "    table = importlib.import_module(package)\n"
            "    for name in table.__all__:\n"
            "        getattr(table, name)\n" % (TABLES,) +
            "from tf1_awd_sparse.base.compat import tf\n"
            "if hasattr(tf, 'disable_v2_behavior'):\n"
            "    tf.disable_v2_behavior()\n"
            "with tf.Graph().as_default():\n"
            "    cell = weight_drop_lstm.WeightDropLSTMCell(\n"
            "        4, weight_drop_kr=0.5)\n"
            "    tf.nn.dynamic_rnn(cell, tf.zeros([2, 3, 4]), dtype=tf.float32)\n"
            "print('ok')\n")
    proc = subprocess.run(
        [sys.executable, "-W", "error:tf1_awd_sparse:DeprecationWarning",
         "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "ok"


#: The public tables (docs/api.md): each package's ``__all__``, and the
#: ``variational_dropout`` facade's. A module's own ``__all__`` is not the
#: API (it may name its helpers for ``import *``).
TABLES = (
    "tf1_awd_sparse", "tf1_awd_sparse.base", "tf1_awd_sparse.ops",
    "tf1_awd_sparse.transforms", "tf1_awd_sparse.transforms.graph_quantize",
    "tf1_awd_sparse.layers", "tf1_awd_sparse.export",
    "tf1_awd_sparse.quantization", "tf1_awd_sparse.awd_lm",
    "tf1_awd_sparse.awd_lm.corpus", "tf1_awd_sparse.awd_lm.config",
    "tf1_awd_sparse.awd_lm.graph", "tf1_awd_sparse.awd_lm.inference",
    "tf1_awd_sparse.awd_lm.training", "tf1_awd_sparse.awd_lm.distributed",
    "variational_dropout")
#: The packages without a table: their names are public through the
#: ``sparse_layers`` facades or their floor's table (the compression's, in
#: ``awd_lm.training``'s; docs/api.md), or they are the command.
WITHOUT_TABLE = (
    "tf1_awd_sparse.ops.sparse", "tf1_awd_sparse.layers.sparse",
    "tf1_awd_sparse.layers.sparse.variational_dropout",
    "tf1_awd_sparse.layers.sparse.l0_regularization",
    "tf1_awd_sparse.awd_lm.training.compression",
    "tf1_awd_sparse.awd_lm.programs")
#: At most this many names in all the tables (issue 43).
MAX_PUBLIC_NAMES = 200
API_DOC = os.path.join(ROOT, "docs", "api.md")


def _packages():
    """Dotted names of the library's packages (none private)."""
    out = []
    for folder, _, files in os.walk(os.path.join(ROOT, "tf1_awd_sparse")):
        dotted = os.path.relpath(folder, ROOT).replace(os.sep, ".")
        if "__init__.py" in files and not any(
                p.startswith("_") for p in dotted.split(".")):
            out.append(dotted)
    return sorted(out)


def _documented_tables(text):
    """{table: [names]} from docs/api.md: a ``## `package``` heading, then
    one ``- `name` - what it is`` line per name."""
    tables, current = {}, None
    for line in text.splitlines():
        heading = re.match(r"^## `([\w.]+)`", line)
        if heading:
            current = tables.setdefault(heading.group(1), [])
            continue
        item = re.match(r"^- `(\w+)` - \S", line)
        if item and current is not None:
            current.append(item.group(1))
    return tables


def test_every_package_has_a_table():
    assert sorted(set(_packages()) - set(WITHOUT_TABLE)) == sorted(
        t for t in TABLES if t.startswith("tf1_awd_sparse"))


def test_the_tables_resolve_and_have_docstrings(record_property):
    """Each name of a table is there (a package's imports on first use),
    a function's or class's has a docstring of its own, and no name hides a
    submodule of its package; all of them are at most MAX_PUBLIC_NAMES."""
    total, faults = 0, []
    for table in TABLES:
        module = importlib.import_module(table)
        total += len(module.__all__)
        assert len(set(module.__all__)) == len(module.__all__), table
        folder = os.path.dirname(getattr(module, "__file__"))
        for name in module.__all__:
            value = getattr(module, name)
            if (callable(value) and not isinstance(value, type(sys))
                    and not (getattr(value, "__doc__", None) or "").strip()):
                faults.append("%s.%s: no docstring" % (table, name))
            if hasattr(module, "__path__") and (
                    os.path.exists(os.path.join(folder, name + ".py"))
                    or os.path.isdir(os.path.join(folder, name))):
                faults.append("%s.%s: a submodule's name" % (table, name))
    record_property("public_names", total)
    print("\npublic names in %d tables: %d (at most %d)"
          % (len(TABLES), total, MAX_PUBLIC_NAMES))
    assert faults == []
    assert total <= MAX_PUBLIC_NAMES


def test_the_tables_are_documented_one_line_each():
    with open(API_DOC) as f:
        documented = _documented_tables(f.read())
    assert sorted(documented) == sorted(TABLES)
    for table in TABLES:
        assert documented[table] == list(
            importlib.import_module(table).__all__), table


def test_a_table_names_only_its_own_floor():
    """A package's table imports from the package's own modules (so the
    floors hold): only ``quantization`` (a public name of its own, above
    the floors) and the root's ``__version__`` reach elsewhere."""
    for table in TABLES:
        module = importlib.import_module(table)
        if table in ("variational_dropout", "tf1_awd_sparse.quantization",
                     "tf1_awd_sparse"):
            continue
        for name in module.__all__:
            home = getattr(getattr(module, name), "__module__", None)
            if home is None or not home.startswith("tf1_awd_sparse"):
                continue   # a constant, or TensorFlow's ``tf``
            assert home.startswith(table + "."), (table, name, home)


def test_the_light_packages_import_no_tensorflow():
    """``import tf1_awd_sparse`` and the packages a command reads without
    TensorFlow (``awd-lm info``) import none: their tables are lazy."""
    code = ("import sys\n"
            "import tf1_awd_sparse, tf1_awd_sparse.base\n"
            "import tf1_awd_sparse.awd_lm, tf1_awd_sparse.awd_lm.config\n"
            "import tf1_awd_sparse.awd_lm.corpus\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m.split('.')[0] == 'tensorflow'))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=300).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_an_unknown_package_name_is_an_attribute_error():
    import tf1_awd_sparse.layers
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'$"):
        tf1_awd_sparse.layers.no_such_name  # pylint: disable=pointless-statement
    from tf1_awd_sparse.layers import dropout   # a submodule still imports
    assert dropout.locked_dropout is tf1_awd_sparse.layers.locked_dropout


def test_the_lazy_table_refuses_a_name_twice():
    with pytest.raises(ValueError, match="twice"):
        names.lazy_api("p", {"p.a": ["x"], "p.b": ["x"]})


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
