"""One name for each thing (tf1_awd_sparse.base.names): the public names are
the floor modules themselves and the packages' tables (docs/api.md), the
flat awd_lm names import with one warning that names the floor module,
names that went say what replaces them (or no longer import), and the
project's own code and docs use no old name."""
import ast
import glob
import importlib
import os
import re
import subprocess
import sys

import pytest

from tf1_awd_sparse.base import names

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


def old_names_used(source):
    """The old names a Python source uses: modules it imports, names it
    imports from a module, and ``alias.name`` of a module it imported.

    Returns:
      sorted list of dotted names that are in the tables of old names.
    """
    old_attributes = set(names.REMOVED_ATTRIBUTES)
    aliases, used = {}, set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                used.add(a.name)
                if a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            used.add(node.module)
            for a in node.names:
                used.add(node.module + "." + a.name)
                aliases[a.asname or a.name] = node.module + "." + a.name
                if (node.module, a.name) in old_attributes:
                    used.add("%s.%s" % (node.module, a.name))
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases):
            used.add(aliases[node.value.id] + "." + node.attr)
    old = set(names.REMOVED_MODULES) | set(names.FLAT_AWD_LM_MODULES) \
        | {"%s.%s" % k for k in old_attributes}
    return sorted(u for u in used if u in old)


@pytest.mark.per_python
def test_the_checker_finds_old_names():
    some_module, some_attr = sorted(names.REMOVED_ATTRIBUTES)[0]
    source = ("import tf1_awd_sparse.mask_placement\n"
              "from tf1_awd_sparse.quantization import lstm\n"
              "from %s import %s\n"
              "from tf1_awd_sparse.ops import fake_quant as fq\n"
              "fq.check_num_bits('a', 8)\n" % (some_module, some_attr))
    assert old_names_used(source) == sorted({
        "tf1_awd_sparse.mask_placement", "tf1_awd_sparse.quantization.lstm",
        "%s.%s" % (some_module, some_attr),
        "tf1_awd_sparse.ops.fake_quant.check_num_bits"})
    assert old_names_used("from tf1_awd_sparse.ops import mask_placement\n"
                          "mask_placement.mask_variables()\n") == []


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
        re.escape(n) for n in sorted(set(names.REMOVED_MODULES)
                                     | set(names.FLAT_AWD_LM_MODULES))))
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
from tf1_awd_sparse.base import names
out = {"modules": {}, "gone": {}, "removed": {}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for old, new in sorted(names.FLAT_AWD_LM_MODULES.items()):
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
def error_of(statement, kind):
    try:
        exec(statement)
    except kind as e:
        return [isinstance(e, ModuleNotFoundError), str(e)]
for old in sorted(names.REMOVED_MODULES):
    parent, _, leaf = old.rpartition(".")
    out["gone"][old] = [error_of("import %s" % old, ImportError),
                        error_of("from %s import %s" % (parent, leaf),
                                 ImportError)]
for (module, name), new in sorted(names.REMOVED_ATTRIBUTES.items()):
    out["removed"][module + "." + name] = [
        error_of("getattr(importlib.import_module(%r), %r)" % (module, name),
                 AttributeError)[1],
        error_of("from %s import %s" % (module, name), ImportError)[1]]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def old_names_run():
    """What a fresh interpreter sees when it uses every old name twice."""
    import json
    proc = subprocess.run([sys.executable, "-c", _OLD_NAMES_RUN], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("old", sorted(names.FLAT_AWD_LM_MODULES))
def test_a_flat_awd_lm_name_warns_once_with_its_floor_module(old,
                                                              old_names_run):
    first, same, again = old_names_run["modules"][old]
    assert same                     # the module it is now, not a copy
    assert len(first) == 1, first   # one warning the first time ...
    assert again == 0               # ... and none the second
    message, filename = first[0]
    assert message.startswith(old + " is deprecated")
    assert names.FLAT_AWD_LM_MODULES[old] in message
    assert names.REMOVED_IN in message
    # It points at the line that imported the old name, in the run's
    # __main__ (CPython 3.7 names it by sys.argv[0], later ones by the code).
    assert filename in ("<string>", "-c"), filename


@pytest.mark.parametrize("old", sorted(names.REMOVED_MODULES))
def test_the_names_deprecated_in_0_3_0_are_gone(old, old_names_run):
    """The old module names no longer import (0.4.0, as 0.3.0 announced),
    and both ``import old`` and ``from parent import leaf`` say what
    replaces them (issue 54: a bare ModuleNotFoundError did not)."""
    for found in old_names_run["gone"][old]:
        assert found is not None, "%s still imports" % old
        is_module_error, message = found
        assert is_module_error, message
        assert "removed" in message and names.REMOVED_MODULES[old] in message


@pytest.mark.parametrize("old", sorted("%s.%s" % k
                                       for k in names.REMOVED_ATTRIBUTES))
def test_a_removed_name_says_what_replaces_it(old, old_names_run):
    """Through attribute access and through ``from module import name``
    (issue 54: that said only "cannot import name")."""
    module, _, name = old.rpartition(".")
    for message in old_names_run["removed"][old]:
        assert message is not None, "%s still exists" % old
        assert "removed" in message
        assert names.REMOVED_ATTRIBUTES[(module, name)] in message


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
#: ``sparse_layers`` facades (docs/api.md), or they are the command.
WITHOUT_TABLE = (
    "tf1_awd_sparse.ops.sparse", "tf1_awd_sparse.layers.sparse",
    "tf1_awd_sparse.layers.sparse.variational_dropout",
    "tf1_awd_sparse.layers.sparse.l0_regularization",
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
    assert names.DEPRECATED_SINCE == tf1_awd_sparse.__version__
    assert _version(names.REMOVED_IN) > _version(names.DEPRECATED_SINCE)
