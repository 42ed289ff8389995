"""One name for each thing (tf1_awd_sparse.base.names): the public names are
the floor modules themselves, the old names import with one warning that
names the new name, names that went say what replaces them, and the
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
#: Markdown that may name old names: the history, and the page that holds
#: the table's description.
HISTORY = ("CHANGELOG.md", os.path.join("docs", "architecture.md"))


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
    old_attributes = set(names.DEPRECATED_ATTRIBUTES) | set(
        names.REMOVED_ATTRIBUTES)
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
    # The flat awd_lm names stay public for users, but the project itself
    # uses the floor names.
    old = set(names.DEPRECATED_MODULES) | set(names.PUBLIC_MOVED_MODULES) \
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
        re.escape(n) for n in sorted(set(names.DEPRECATED_MODULES)
                                     | set(names.PUBLIC_MOVED_MODULES))))
    found = {}
    for path in [os.path.join(ROOT, "README.md")] + glob.glob(
            os.path.join(ROOT, "docs", "*.md")):
        if os.path.relpath(path, ROOT) in HISTORY:
            continue
        with open(path) as f:
            hits = sorted(set(pattern.findall(f.read())))
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
out = {"modules": {}, "attributes": {}, "removed": {}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for old, new in sorted(names.DEPRECATED_MODULES.items()):
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
    for (module, name), new in sorted(names.DEPRECATED_ATTRIBUTES.items()):
        del caught[:]
        value = getattr(importlib.import_module(module), name)
        first = [str(w.message) for w in caught]
        getattr(importlib.import_module(module), name)
        same = value is getattr(importlib.import_module(new), name)
        out["attributes"][module + "." + name] = [first, same,
                                                  len(caught) - len(first)]
for (module, name), new in sorted(names.REMOVED_ATTRIBUTES.items()):
    try:
        getattr(importlib.import_module(module), name)
        out["removed"][module + "." + name] = None
    except AttributeError as e:
        out["removed"][module + "." + name] = str(e)
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


@pytest.mark.parametrize("old", sorted(names.DEPRECATED_MODULES))
def test_an_old_module_name_warns_once_with_its_replacement(old,
                                                           old_names_run):
    first, same, again = old_names_run["modules"][old]
    assert same                     # the module it is now, not a copy
    assert len(first) == 1, first   # one warning the first time ...
    assert again == 0               # ... and none the second
    message, filename = first[0]
    assert message.startswith(old + " is deprecated")
    assert names.DEPRECATED_MODULES[old] in message
    assert names.REMOVED_IN in message
    # It points at the line that imported the old name, in the run's
    # __main__ (CPython 3.7 names it by sys.argv[0], later ones by the code).
    assert filename in ("<string>", "-c"), filename


def test_a_moved_name_warns_once_with_its_replacement(old_names_run):
    assert sorted(old_names_run["attributes"]) == sorted(
        "%s.%s" % k for k in names.DEPRECATED_ATTRIBUTES)
    for old, (first, same, again) in old_names_run["attributes"].items():
        module, _, name = old.rpartition(".")
        assert same and again == 0, old
        assert len(first) == 1 and first[0].startswith(old + " is deprec")
        assert names.DEPRECATED_ATTRIBUTES[(module, name)] in first[0]


@pytest.mark.parametrize("old", sorted("%s.%s" % k
                                       for k in names.REMOVED_ATTRIBUTES))
def test_a_removed_name_says_what_replaces_it(old, old_names_run):
    message = old_names_run["removed"][old]
    module, _, name = old.rpartition(".")
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
            "for old, new in sorted(names.PUBLIC_MOVED_MODULES.items()):\n"
            "    assert importlib.import_module(old) is \\\n"
            "        importlib.import_module(new), old\n"
            "from tf1_awd_sparse.awd_lm import train, presets, data, lm\n"
            "from tf1_awd_sparse.awd_lm import compress\n"
            "assert (train.run, data.read_ptb, lm.LanguageModel,\n"
            "        compress.run_pipeline, presets.PRESETS)\n"
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


def _public_library_modules():
    """(dotted name, path) of every public module of the library (no part
    of its name starts with an underscore; facades excluded)."""
    out = []
    for folder, _, files in os.walk(os.path.join(ROOT, "tf1_awd_sparse")):
        for f in files:
            if not f.endswith(".py"):
                continue
            dotted = os.path.relpath(os.path.join(folder, f), ROOT)[:-3]
            dotted = dotted.replace(os.sep, ".").replace(".__init__", "")
            if not any(p.startswith("_") for p in dotted.split(".")):
                out.append((dotted, os.path.join(folder, f)))
    return sorted(out)


def declared_and_defined(source):
    """``(__all__ or None, top-level public defs and classes, every
    top-level name, whether the module has a __getattr__)``."""
    tree = ast.parse(source)
    declared, public, defined = None, set(), set()
    body = list(tree.body)
    for node in body:   # names bound under a top-level if / try count too
        for field in ("body", "orelse", "finalbody", "handlers"):
            if isinstance(node, (ast.If, ast.Try, ast.ExceptHandler)):
                body.extend(getattr(node, field, []))
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
            if not node.name.startswith("_"):
                public.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    defined.add(t.id)
                    if t.id == "__all__":
                        declared = ast.literal_eval(node.value)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return declared, public, defined, "__getattr__" in defined


def test_every_public_module_declares_its_names():
    """Each public module has ``__all__``; it names only what the module
    has, and every public function or class the module defines."""
    missing, wrong = [], {}
    for dotted, path in _public_library_modules():
        with open(path) as f:
            source = f.read()
        declared, public, defined, lazy = declared_and_defined(source)
        if declared is None:
            if len(source) > 1000 or public:
                missing.append(dotted)
            continue
        unknown = [n for n in declared if n not in defined and not lazy]
        undeclared = sorted(public - set(declared))
        if unknown or undeclared:
            wrong[dotted] = {"not in the module": unknown,
                             "not in __all__": undeclared}
    assert missing == [] and wrong == {}


def test_the_declaration_check_sees_both_faults():
    declared, public, defined, lazy = declared_and_defined(
        "import os\n__all__ = ['a', 'os', 'gone']\ndef a(): pass\n"
        "def b(): pass\ndef _c(): pass\n")
    assert declared == ["a", "os", "gone"] and public == {"a", "b"}
    assert "gone" not in defined and not lazy


def test_the_version_is_the_changelogs_and_the_tables():
    """One version: the package's, the newest CHANGELOG entry's, and the
    one the old names were deprecated in."""
    import tf1_awd_sparse
    with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
        newest = re.search(r"^## \[(\d[^\]]*)\]", f.read(), re.M).group(1)
    assert tf1_awd_sparse.__version__ == newest
    assert names.DEPRECATED_SINCE.split()[0] == newest
    assert names.REMOVED_IN > newest
