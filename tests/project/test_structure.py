"""The shape that keeps the library easy to carry on (issue 43): no module
over 600 lines, the language model's parameters read as attributes of the
checked configuration outside its own package, and no module reaching into
another of the library's modules' private names."""
import ast
import os

import pytest

from support import LIBRARY, ROOT, library_files, relative

pytestmark = pytest.mark.per_python

MAX_LINES = 600
#: The package that owns the flat parameter dicts (config.json, flags).
CONFIG_PACKAGE = os.path.join(LIBRARY, "awd_lm", "config")
#: Names that hold a language model's parameters.
PARAM_NAMES = ("params", "float_params", "stage_params", "quant_params",
               "all_params", "model_params")


def _tree(path):
    with open(path) as f:
        return ast.parse(f.read())


def test_no_module_over_the_limit():
    long = {}
    for path in library_files():
        with open(path) as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            long[relative(path)] = n
    assert long == {}


def flat_param_reads(tree):
    """Lines that read a parameter dict by key: ``params[...]`` or
    ``params.get(...)`` on a name (or attribute) of `PARAM_NAMES`."""
    def holds_params(node):
        return (isinstance(node, ast.Name) and node.id in PARAM_NAMES) or (
            isinstance(node, ast.Attribute) and node.attr in PARAM_NAMES)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and holds_params(node.value):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "update", "pop", "setdefault")
              and holds_params(node.func.value)):
            lines.append(node.lineno)
    return sorted(lines)


#: The language model's package: ``params`` elsewhere (a layer's
#: variational parameters in ops/sparse) is another thing.
LM_PACKAGE = os.path.join(LIBRARY, "awd_lm")


def test_parameters_are_read_as_attributes():
    found = {}
    for path in library_files():
        name = relative(path)
        if not name.startswith(LM_PACKAGE) \
                or name.startswith(CONFIG_PACKAGE):
            continue
        lines = flat_param_reads(_tree(path))
        if lines:
            found[name] = lines
    assert found == {}


def test_the_reads_check_sees_each_form():
    source = ("params['lr']\nself.params.get('x')\nfloat_params.update(a=1)\n"
              "params.optimization.lr\nother['lr']\n")
    assert flat_param_reads(ast.parse(source)) == [1, 2, 3]


#: At most this many calls of ``as_params`` in the library (issue 56):
#: the parameters of the language model enter from outside in few places,
#: each made a checked `Params` once; below them every function takes it.
MAX_AS_PARAMS_CALLS = 5
#: At most this many other checks of flat parameters into a `Params`
#: outside config/params.py: ``Params.for_preset`` (the command lines'
#: `presets.params_for`) and ``Params.from_flat`` (a record read back).
MAX_OTHER_CONVERSIONS = 4
PARAMS_MODULE = os.path.join(LIBRARY, "awd_lm", "config", "params.py")
#: The public functions that take parameters from a caller (a dict of
#: flat keys or a `Params`), marked ``@takes_params`` (its one
#: ``as_params``): "module.function" -> why a caller hands it parameters.
PARAMETER_ENTRIES = {
    "graph.model.check_params": "a model's parameters checked",
    "graph.model.build_lm": "the model's graph (docs/awd_lm.md)",
    "graph.train_op.build_train_op": "the step (docs/awd_lm.md)",
    "graph.train_op.build_train_step": "the step every driver builds",
    "graph.distill.build_teacher": "the distillation teacher (graph table)",
    "training.train.run": "the training loop (docs/awd_lm.md)",
    "training.train.Trainer.__init__": "the loop step by step",
    "training.compression.pipeline.run_pipeline": "the compression",
    "inference.export.export_lm": "a checkpoint as a TFLite file",
    "inference.export.check_formats": "the formats a model allows",
    "distributed.model_fn.train_step": "the Estimator's step (its dict)",
    "distributed.model_fn.eval_xent": "the Estimator's evaluation",
}


def _is_named(node, name):
    return (isinstance(node, ast.Name) and node.id == name) or (
        isinstance(node, ast.Attribute) and node.attr == name)


def as_params_calls(tree, name="as_params"):
    """Lines calling ``name`` (by name or as an attribute)."""
    return sorted(node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Call)
                  and _is_named(node.func, name))


def parameter_entries(tree):
    """The qualified names (``Class.method`` inside a class) of the
    functions decorated ``@takes_params(...)``."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.FunctionDef):
                if any(isinstance(d, ast.Call)
                       and _is_named(d.func, "takes_params")
                       for d in child.decorator_list):
                    found.append(prefix + child.name)
    visit(tree, "")
    return found


def _module_name(path):
    """``graph.model`` of tf1_awd_sparse/awd_lm/graph/model.py."""
    name = relative(path)[len(LM_PACKAGE) + 1:-len(".py")]
    return name.replace(os.sep, ".")


def test_parameters_enter_in_few_places():
    """Issue 56: ``as_params`` is called where parameters enter from
    outside (``-s`` prints where), at most `MAX_AS_PARAMS_CALLS` times;
    the public functions that take them are `PARAMETER_ENTRIES`, one
    shared decorator each."""
    calls, others, entries = [], [], set()
    for path in library_files():
        if not relative(path).startswith(LM_PACKAGE):
            continue
        tree = _tree(path)
        calls += ["%s:%d" % (relative(path), line)
                  for line in as_params_calls(tree)]
        if relative(path) != PARAMS_MODULE:
            others += ["%s:%d %s" % (relative(path), line, name)
                       for name in ("from_flat", "for_preset")
                       for line in as_params_calls(tree, name)]
        entries.update("%s.%s" % (_module_name(path), name)
                       for name in parameter_entries(tree))
    print("\nas_params is called at (parameters enter there):\n  "
          + "\n  ".join(calls))
    print("flat parameters checked elsewhere:\n  " + "\n  ".join(others))
    print("public entries (@takes_params):\n  "
          + "\n  ".join(sorted(entries)))
    assert len(calls) <= MAX_AS_PARAMS_CALLS, calls
    assert len(others) <= MAX_OTHER_CONVERSIONS, others
    assert entries == set(PARAMETER_ENTRIES)


def test_the_entry_counters_see_each_form():
    source = ("as_params(d)\nP.as_params(d)\nx = as_params\n"
              "@takes_params()\ndef f(params): pass\n"
              "class C:\n    @P.takes_params('p')\n"
              "    def m(self, p): pass\n"
              "@other()\ndef g(params): pass\n")
    tree = ast.parse(source)
    assert as_params_calls(tree) == [1, 2]
    assert as_params_calls(ast.parse("Params.from_flat(d)\n"),
                           "from_flat") == [1]
    assert parameter_entries(tree) == ["f", "C.m"]


def _library_module_of(dotted):
    return dotted.startswith(LIBRARY + ".") or dotted == LIBRARY


#: The shared floor: its underscore modules (``base._cli``, ``base._docs``,
#: ...) are the library's own helpers, not API, and every floor uses them.
SHARED_FLOOR = LIBRARY + ".base"


def _is_module(dotted):
    path = os.path.join(ROOT, *dotted.split("."))
    return os.path.isfile(path + ".py") or os.path.isdir(path)


def _private_module_allowed(dotted, own_module):
    """A private module is used by its own package's subtree, or is one of
    the shared floor's."""
    parent = dotted.rpartition(".")[0]
    return parent == SHARED_FLOOR or own_module.startswith(parent + ".")


def private_reaches(tree, own_module):
    """``(line, name)`` of each use of another library module's private
    name: ``from lib.mod import _name``, a private module imported from
    outside its package (`_private_module_allowed`), and ``alias._name``
    where ``alias`` is a library module imported here."""
    aliases, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module \
                and _library_module_of(node.module):
            parts = node.module.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not _private_module_allowed(
                        ".".join(parts[:i + 1]), own_module):
                    found.append((node.lineno, node.module))
            for a in node.names:
                full = node.module + "." + a.name
                if a.name.startswith("_") and node.module != own_module:
                    if not (_is_module(full) and _private_module_allowed(
                            full, own_module)):
                        found.append((node.lineno, full))
                elif not a.name.startswith("_"):
                    aliases[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if _library_module_of(a.name) and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value,
                                                           ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            found.append((node.lineno, aliases[node.value.id] + "."
                          + node.attr))
    return sorted(set(found))


def _dotted(path):
    dotted = relative(path)[:-3].replace(os.sep, ".")
    return dotted[:-len(".__init__")] if dotted.endswith(".__init__") \
        else dotted


def test_no_module_reaches_into_anothers_private_names():
    found = {}
    for path in library_files():
        reaches = private_reaches(_tree(path), _dotted(path))
        if reaches:
            found[relative(path)] = reaches
    assert found == {}


def test_the_reach_check_sees_each_form():
    source = ("from tf1_awd_sparse.awd_lm.training import train\n"
              "from tf1_awd_sparse.transforms import _checkpoint\n"
              "from tf1_awd_sparse.graph.losses import _ar\n"
              "from tf1_awd_sparse.base import _cli\n"
              "train._clear_run('x')\ntrain.run()\n")
    assert private_reaches(ast.parse(source), "tf1_awd_sparse.export.strip") \
        == [(2, "tf1_awd_sparse.transforms._checkpoint"),
            (3, "tf1_awd_sparse.graph.losses._ar"),
            (5, "tf1_awd_sparse.awd_lm.training.train._clear_run")]


#: The language model's programs (the ``awd-lm`` command).
PROGRAMS = os.path.join(LIBRARY, "awd_lm", "programs")
#: What a program may import whole, every name of it: the shared floor
#: (``base``: ``_cli``, ``_progress``, ``_quiet``, ``compat``, ``checks``,
#: ...), the programs' own modules, and the command line that the
#: ``estimator`` and ``monitored`` programs share (``distributed.cli``:
#: program code, kept on the distributed floor so that neither program
#: imports the other).
PROGRAM_IMPORTS = (SHARED_FLOOR, LIBRARY + ".awd_lm.programs",
                   LIBRARY + ".awd_lm.distributed.cli",
                   # The Estimator's model_fn: no table can list it, its
                   # name being its module's (``distributed.model_fn``).
                   LIBRARY + ".awd_lm.distributed.model_fn.model_fn")


def _under(dotted, prefixes):
    return any(dotted == p or dotted.startswith(p + ".") for p in prefixes)


def public_tables():
    """``{dotted module: its public names}`` from every package's table
    (the ``names.lazy_api`` dict of its ``__init__``, read without
    importing it): a package maps to its whole table (``__all__``), a
    module to the names the table lists from it."""
    tables = {}
    for path in library_files():
        if os.path.basename(path) != "__init__.py":
            continue
        package = _dotted(path)
        for node in ast.walk(_tree(path)):
            if (isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "lazy_api"):
                table = ast.literal_eval(node.args[1])
                for module, names in table.items():
                    tables.setdefault(module, set()).update(names)
                    tables.setdefault(package, set()).update(names)
    return tables


def non_public_uses(tree, tables, allowed=PROGRAM_IMPORTS):
    """``(line, name)`` of each library name a program uses that no public
    table lists (`public_tables`) and that is not (in) one of ``allowed``.

    A name is used by ``from P import N`` (or ``from P.M import N``), or
    as ``alias.N`` where ``alias`` is a library module or package imported
    here (``from P import M``, ``import P.M as alias``): N must be in P's
    (P.M's) table. Imports inside functions count."""
    aliases, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module \
                and _library_module_of(node.module):
            for a in node.names:
                full = node.module + "." + a.name
                if _under(node.module, allowed) or _under(full, allowed) \
                        or a.name in tables.get(node.module, ()):
                    continue
                if _is_module(full):
                    aliases[a.asname or a.name] = full
                else:
                    found.append((node.lineno, full))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if not _library_module_of(a.name) or _under(a.name,
                                                             allowed):
                    continue
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    found.append((node.lineno, a.name))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value,
                                                           ast.Name)
                and node.value.id in aliases and node.attr
                not in tables.get(aliases[node.value.id], ())):
            found.append((node.lineno, aliases[node.value.id] + "."
                          + node.attr))
    return sorted(set(found))


def test_the_programs_use_only_public_names():
    """`programs/` holds the command lines, no pipeline decision: it uses
    the library's public tables (docs/api.md), the shared floor and its
    own modules (`PROGRAM_IMPORTS`) only."""
    tables, found = public_tables(), {}
    for path in library_files():
        if os.path.dirname(relative(path)) == PROGRAMS:
            uses = non_public_uses(_tree(path), tables)
            if uses:
                found[relative(path)] = uses
    assert found == {}


def test_the_public_use_check_sees_each_form():
    tables = {"tf1_awd_sparse.awd_lm.training": {"run"},
              "tf1_awd_sparse.awd_lm.training.train": {"run"}}
    source = ("from tf1_awd_sparse.awd_lm.training import run, records\n"
              "from tf1_awd_sparse.awd_lm.training.train import run, ppl\n"
              "from tf1_awd_sparse.awd_lm.training import train as t\n"
              "import tf1_awd_sparse.awd_lm.training.plan as p\n"
              "from tf1_awd_sparse.base import _cli, compat\n"
              "from tf1_awd_sparse.base.checks import check_real\n"
              "t.run()\nt.Trainer()\np.plan_run()\nrecords.TableLog\n"
              "def f():\n    from tf1_awd_sparse.awd_lm.config import x\n")
    assert non_public_uses(ast.parse(source), tables) == [
        (2, "tf1_awd_sparse.awd_lm.training.train.ppl"),
        (8, "tf1_awd_sparse.awd_lm.training.train.Trainer"),
        (9, "tf1_awd_sparse.awd_lm.training.plan.plan_run"),
        (10, "tf1_awd_sparse.awd_lm.training.records.TableLog"),
        (12, "tf1_awd_sparse.awd_lm.config.x")]
