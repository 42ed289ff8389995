"""One description per parameter (issue 56, item 2): the language model's
hyper-parameters are described once, in the registry
(`awd_lm.config.registry.PARAMETERS`), and every other table of them is
made from it; a parameter's name appears in at most two module-level
tables of the library: its registry entry and the presets that override
it."""
import ast
import collections
import os

import pytest

from support import ROOT

from tf1_awd_sparse.awd_lm.config import presets

pytestmark = pytest.mark.per_python

LIBRARY = "tf1_awd_sparse"
#: At most this many module-level tables name a parameter.
MAX_TABLES = 2
#: Calls at module level that build a table from their keywords.
TABLE_CALLS = ("dict", "OrderedDict", "tuple", "list", "set", "frozenset")
#: Module-level tables (by name, wherever the module is) whose strings that
#: spell a parameter's name mean another thing, and why.
OTHER_MEANING = {
    "__all__": "function names (compression_ops.pruning_block)",
    "PROGRAMS": "program names (awd-lm compress)",
    "_AWD_LM_FLOORS": "module names (programs/compress.py)",
    "STAGES": "a pipeline's stage names (the small_dense row)",
    "_SHAPING": "awd-lm export's own flags (the file's --batch-size)",
    "_PRODUCED_KEYS": "fields of produced_by (the sparsity measured)",
    "_Math": "TensorFlow op names (clip)",
    "PHASES": "the phases' names (a run's compress phase)",
}
def named_in(statement, names):
    """The ``names`` a module-level statement lists in a table: a string
    that is a dict key, an item of a tuple / list / set literal, a
    positional argument of a call (an entry built by a call) or a keyword
    of a dict-building call (`TABLE_CALLS`). A lambda's body reads values
    and lists nothing; an index (``DEFAULTS["lr"]``) reads one."""
    found = set()

    def strings(nodes):
        return {n.s for n in nodes if isinstance(n, ast.Str)} & names

    def visit(node):
        if isinstance(node, (ast.Lambda, ast.Subscript)):
            return
        if isinstance(node, ast.Dict):
            found.update(strings([k for k in node.keys if k is not None]))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            found.update(strings(node.elts))
        elif isinstance(node, ast.Call):
            found.update(strings(node.args))
            func = node.func
            called = getattr(func, "id", None) or getattr(func, "attr", None)
            if called in TABLE_CALLS:
                found.update(k.arg for k in node.keywords
                             if k.arg in names)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(statement.value)
    return found


def module_tables(tree):
    """(name, statement) of each module-level assignment."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign) and statement.value:
            targets = [statement.target]
        else:
            continue
        target = targets[0]
        yield getattr(target, "id", None) or ast.dump(target), statement


def tables_naming(sources, names, skip=()):
    """{parameter: [module:table, ...]} of the module-level tables of
    ``sources`` (``{module: source text}``) that list each of ``names``;
    tables named in ``skip`` are left out."""
    found = collections.defaultdict(list)
    for module, text in sorted(sources.items()):
        for table, statement in module_tables(ast.parse(text)):
            if table in skip:
                continue
            for name in named_in(statement, set(names)):
                found[name].append("%s:%s" % (module, table))
    return found


def _library_sources():
    sources = {}
    for folder, _, files in os.walk(os.path.join(ROOT, LIBRARY)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path) as source:
                    sources[os.path.relpath(path, ROOT)] = source.read()
    return sources


def test_no_parameter_is_named_in_more_than_two_tables():
    names = list(presets.DEFAULTS)
    found = tables_naming(_library_sources(), names,
                          skip=OTHER_MEANING)
    over = dict((k, v) for k, v in found.items() if len(v) > MAX_TABLES)
    assert over == {}
    # Every parameter is in the registry (the counter sees it).
    assert all(any(t.endswith(":PARAMETERS") for t in found[k])
               for k in names)


def test_the_tables_left_out_exist():
    """An exception that no longer names a table would hide a new one."""
    tables = set(t for text in _library_sources().values()
                 for t, _ in module_tables(ast.parse(text)))
    assert set(OTHER_MEANING) <= tables


def test_the_counter_finds_a_second_description():
    """A parameter listed again in a phase tuple, a help dict and a
    keyword table is found in each; a read by index or in a lambda, and an
    entry of another name, are not."""
    sources = {"a.py": (
        "REGISTRY = (_p('lr', 1.0), _p('bptt', 70))\n"
        "PHASE_KEYS = ('lr', 'other')\n"
        "HELP = {'lr': 'the learning rate'}\n"
        "EXTRA = dict(lr=None)\n"
        "RULE = Rule(lambda v: v('bptt') > 1)\n"
        "DEFAULT_LR = DEFAULTS['lr']\n"
        "__all__ = ['bptt']\n")}
    found = tables_naming(sources, ["lr", "bptt"], skip=("__all__",))
    assert found["lr"] == ["a.py:REGISTRY", "a.py:PHASE_KEYS", "a.py:HELP",
                           "a.py:EXTRA"]
    assert found["bptt"] == ["a.py:REGISTRY"]


def average_tables_per_parameter():
    """The issue's figure: the mean number of module-level tables naming a
    parameter (presets.DEFAULTS' keys), exceptions left out."""
    names = list(presets.DEFAULTS)
    found = tables_naming(_library_sources(), names,
                          skip=OTHER_MEANING)
    return sum(len(found[k]) for k in names) / float(len(names))


if __name__ == "__main__":   # the figure of the report
    print("%d parameters, %.2f tables each" % (
        len(presets.DEFAULTS), average_tables_per_parameter()))
