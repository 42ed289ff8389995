"""Compatibility in one module (issue 56): at most one library module
defines a module-level ``__getattr__`` (a tombstone per module was the
0.3.0 way of keeping old names), no module re-exports more than half of
its ``__all__`` (a module that lists names it imports is a hub that
callers should bypass: they import from the module that defines a name),
and no module imports a name that it neither uses nor lists (a bridge for
callers that import the name from the wrong module).

A package's ``__init__`` that binds ``__getattr__`` from
``names.lazy_api`` defines none: its lazy table is one function, written
once in ``base/names.py``."""
import ast
import os

import pytest

from support import LIBRARY, ROOT, library_files, relative

pytestmark = pytest.mark.per_python

#: At most this many library modules define a module-level ``__getattr__``.
MAX_MODULE_GETATTR = 1

#: The modules that still import names only for callers that have not
#: moved to the defining module (those callers are in the language model's
#: packages and tests, being moved by issue 56's other items): module ->
#: the names. An entry only shrinks, and goes when its callers have moved.
BRIDGES_BEING_REMOVED = {
    "tf1_awd_sparse/base/checks.py": [
        "check_bool", "check_choice", "check_id_array", "check_int",
        "check_interval", "check_nonnegative_int", "check_num_bits",
        "check_number", "check_positive_int", "check_real",
        "check_writable_dir"],
    "tf1_awd_sparse/export/sparse_storage.py": [
        "KERNEL_LAYOUTS", "available", "available_or_raise", "encode",
        "encoded_bytes"],
    "tf1_awd_sparse/transforms/magnitude_pruning.py": [
        "block_scores", "exact_block_keep_masks", "exact_keep_masks",
        "expand_blocks"],
}


def _parse(path):
    with open(path) as f:
        return ast.parse(f.read())


def _top_level(tree):
    """The module's statements, those under a top-level ``if`` / ``try``
    included (``if __name__ == ...``, an optional import)."""
    pending, out = list(tree.body), []
    while pending:
        node = pending.pop(0)
        out.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            if isinstance(node, (ast.If, ast.Try, ast.ExceptHandler)):
                pending.extend(getattr(node, field, []))
    return out


def defines_module_getattr(tree):
    """Whether a module defines a module-level ``__getattr__`` (PEP 562): a
    ``def __getattr__`` among its top-level statements."""
    return any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
               for node in _top_level(tree))


def reexported(tree):
    """``(imported, listed)``: the names of the module's literal
    ``__all__`` that it binds by an import rather than defines, and all
    the names of its ``__all__``; ``(None, None)`` without a literal one."""
    listed = None
    imported = set()
    for node in _top_level(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__"
                for t in node.targets):
            try:
                listed = list(ast.literal_eval(node.value))
            except ValueError:
                return None, None   # a computed table (names.lazy_api)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            imported.discard(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    imported.discard(target.id)
    if listed is None:
        return None, None
    return sorted(n for n in listed if n in imported), listed


def bridged(tree):
    """The names a module imports at its top level (``from m import n``)
    but neither uses anywhere in it nor lists in its ``__all__``."""
    imported = set()
    listed = set()
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__"
                for t in node.targets):
            try:
                listed = set(ast.literal_eval(node.value))
            except ValueError:
                pass
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return sorted(imported - used - listed - {"*"})


def hubs(files):
    """{module: (imported, listed)} of the modules that re-export more
    than half of their ``__all__``."""
    out = {}
    for path in files:
        imported, listed = reexported(_parse(path))
        if listed and 2 * len(imported) > len(listed):
            out[relative(path)] = (len(imported), len(listed))
    return out


def test_at_most_one_module_defines_a_module_getattr():
    found = [relative(p) for p in library_files()
             if defines_module_getattr(_parse(p))]
    print("\nmodules with a module-level __getattr__: %d %s"
          % (len(found), found))
    assert len(found) <= MAX_MODULE_GETATTR, found


def test_no_module_reexports_most_of_its_all():
    """No exceptions: a module's old names that another module defines
    are `base.legacy.MOVED_NAMES`' (awd_lm.programs.estimator's were the
    last hub)."""
    found = hubs(library_files())
    print("\nmodules re-exporting most of __all__: %s" % found)
    assert found == {}


def test_no_module_imports_a_name_only_for_others():
    found = {}
    for path in library_files():
        if path.endswith("__init__.py"):
            continue   # a package's imports are its submodules
        names = bridged(_parse(path))
        if names:
            found[relative(path)] = names
    print("\nmodules importing names only for their callers: %d, %d names"
          % (len(found), sum(len(v) for v in found.values())))
    for module, names in sorted(found.items()):
        # Only the listed names, and every listed name still bridged (the
        # list shrinks as callers move).
        assert names == BRIDGES_BEING_REMOVED.get(module), module
    # A listed module that still exists is still a bridge (one that went
    # with the reorganisation leaves the list too, but fails nothing).
    assert [m for m in BRIDGES_BEING_REMOVED
            if m not in found and os.path.exists(os.path.join(ROOT, m))] == []


def test_the_checkers_find_a_violation():
    tombstone = ast.parse("import sys\n\ndef __getattr__(name):\n"
                          "    raise AttributeError(name)\n")
    lazy = ast.parse("from p import names as _names\n"
                     "__all__, __getattr__, __dir__ = _names.lazy_api("
                     "__name__, {})\n")
    method = ast.parse("class A(object):\n"
                       "    def __getattr__(self, name):\n"
                       "        return 1\n")
    guarded = ast.parse("import sys\nif sys.version_info >= (3, 7):\n"
                        "    def __getattr__(name):\n        return 1\n")
    assert defines_module_getattr(tombstone)
    assert defines_module_getattr(guarded)
    assert not defines_module_getattr(lazy)
    assert not defines_module_getattr(method)

    hub = ast.parse("from a import x, y\nfrom b import z as w\n"
                    "__all__ = ['x', 'y', 'v']\ndef v():\n    pass\n")
    assert reexported(hub) == (["x", "y"], ["x", "y", "v"])
    half = ast.parse("from a import x\n__all__ = ['x', 'v']\nv = 1\n")
    assert reexported(half) == (["x"], ["x", "v"])
    # A name imported and then redefined is the module's own.
    redefined = ast.parse("from a import x\n__all__ = ['x']\n"
                          "class x(object):\n    pass\n")
    assert reexported(redefined) == ([], ["x"])
    assert reexported(lazy) == (None, None)

    bridge = ast.parse("from a import x, y, z\nfrom b import w as v\n"
                       "__all__ = ['y']\ndef f():\n    return x\n")
    assert bridged(bridge) == ["v", "z"]
    assert bridged(ast.parse("from __future__ import division\n")) == []
