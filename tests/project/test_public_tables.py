"""The public tables (docs/api.md): every package has one (built with
`base.names.lazy_api`), each name resolves and has a docstring, the page
documents exactly them, a table names only its own floor, at most
`MAX_PUBLIC_NAMES` names in all, and none raises a deprecation warning."""
import importlib
import os
import re
import subprocess
import sys

from tf1_awd_sparse.base import names

from support import ROOT


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
