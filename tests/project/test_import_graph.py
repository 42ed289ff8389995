"""The library's import graph goes only down its floors and has no circle,
counting imports inside functions too (a lazy import that closes a circle
still ties two modules together), and building a float cell does not load
the TFLite exporter."""
import ast
import os
import subprocess
import sys

import pytest

from support import ROOT
PACKAGES = ("sparse_layers", "tf1_awd_sparse")
TOP_MODULES = ("weight_drop_lstm", "variational_dropout")


def _modules():
    """{dotted name: path} of the library's modules."""
    found = {name: os.path.join(ROOT, name + ".py") for name in TOP_MODULES}
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    dotted = os.path.relpath(path, ROOT)[:-3].replace(
                        os.sep, ".")
                    if dotted.endswith(".__init__"):
                        dotted = dotted[:-len(".__init__")]
                    found[dotted] = path
    return found


def _imported(names, modules):
    """The library modules that importing each of ``names`` runs (the
    longest known prefix, and its packages' ``__init__``)."""
    out = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        while name:
            if name in modules:
                out.add(name)
            name = name.rpartition(".")[0]
    return out


def import_edges():
    """{module: set of library modules it imports}, without a module's own
    parent packages (``from package import sibling`` runs them anyway)."""
    modules = _modules()
    edges = {}
    for name, path in modules.items():
        with open(path) as f:
            tree = ast.parse(f.read())
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets |= _imported([a.name for a in node.names], modules)
            elif isinstance(node, ast.ImportFrom) and node.module:
                assert not node.level, "%s: relative import" % path
                targets |= _imported([node.module + "." + a.name
                                      for a in node.names] + [node.module],
                                     modules)
        edges[name] = {t for t in targets
                       if t != name and not name.startswith(t + ".")}
    return edges


def _circles(edges):
    """Strongly connected components of more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


#: The floors, bottom up: each is one folder of tf1_awd_sparse
#: (docs/architecture.md). A module may import its own floor and those below.
FLOORS = ("base", "ops", "transforms", "layers", "export", "awd_lm")


def floor_of(module):
    """The floor index of a library module, or None for the names above the
    floors (the facades users import: ``weight_drop_lstm``,
    ``variational_dropout``, ``sparse_layers.*``, the packages' roots and the
    old names of moved modules)."""
    parts = module.split(".")
    if parts[0] == "tf1_awd_sparse" and len(parts) > 1 and parts[1] in FLOORS:
        return FLOORS.index(parts[1])
    return None


def upward_edges(edges):
    """[(module, imported)] where a floor module imports a higher floor or a
    facade (which would tie it to everything the facade loads)."""
    out = []
    for module, targets in sorted(edges.items()):
        here = floor_of(module)
        if here is None:
            continue
        for target in sorted(targets):
            there = floor_of(target)
            if target == "tf1_awd_sparse":
                continue   # the empty root package every import runs
            if there is None or there > here:
                out.append((module, target))
    return out


@pytest.mark.per_python
def test_imports_only_go_down_the_floors():
    edges = import_edges()
    floors = {floor_of(m) for m in edges}
    assert floors >= set(range(len(FLOORS)))   # every floor has modules
    assert upward_edges(edges) == []


@pytest.mark.per_python
def test_the_floor_check_finds_a_climb_and_a_facade():
    edges = {"tf1_awd_sparse.ops.a": {"tf1_awd_sparse.layers.b"},
             "tf1_awd_sparse.layers.b": {"tf1_awd_sparse.ops.a",
                                         "tf1_awd_sparse.layers.c"},
             "tf1_awd_sparse.layers.c": {"weight_drop_lstm"},
             "weight_drop_lstm": {"tf1_awd_sparse.layers.b"}}
    assert upward_edges(edges) == [
        ("tf1_awd_sparse.layers.c", "weight_drop_lstm"),
        ("tf1_awd_sparse.ops.a", "tf1_awd_sparse.layers.b")]


#: awd_lm's floors, bottom up (docs/architecture.md): each is one folder of
#: tf1_awd_sparse/awd_lm, and the programs are the modules at its top (and
#: any folder not named here, e.g. programs/). A module may import its own
#: floor and those below.
AWD_LM = "tf1_awd_sparse.awd_lm"
AWD_LM_FLOORS = ("corpus", "config", "graph", "inference", "training",
                 "distributed", "programs")


def awd_lm_floor_of(module):
    """The awd_lm floor index of a module, or None outside awd_lm (and for
    the package's root, whose lazy ``LanguageModel`` any floor may run)."""
    parts = module.split(".")
    if module == AWD_LM or parts[:2] != AWD_LM.split("."):
        return None
    if parts[2] in AWD_LM_FLOORS[:-1]:
        return AWD_LM_FLOORS.index(parts[2])
    return len(AWD_LM_FLOORS) - 1


def awd_lm_upward_edges(edges):
    """[(module, imported)] where an awd_lm module imports a higher awd_lm
    floor (function-level imports count)."""
    out = []
    for module, targets in sorted(edges.items()):
        here = awd_lm_floor_of(module)
        if here is None:
            continue
        for target in sorted(targets):
            there = awd_lm_floor_of(target)
            if there is not None and there > here:
                out.append((module, target))
    return out


@pytest.mark.per_python
def test_awd_lm_imports_only_go_down_its_floors():
    edges = import_edges()
    floors = {awd_lm_floor_of(m) for m in edges}
    assert floors >= set(range(len(AWD_LM_FLOORS)))   # each floor has modules
    assert awd_lm_upward_edges(edges) == []


@pytest.mark.per_python
def test_the_distributed_programs_share_a_command_line_not_each_other():
    """estimator and monitored both use distributed.cli; neither imports the
    other (a TF 2.16+ run of monitored must not depend on the estimator
    program's module)."""
    edges = import_edges()
    estimator = AWD_LM + ".programs.estimator"
    monitored = AWD_LM + ".programs.monitored"
    assert estimator not in edges[monitored]
    assert monitored not in edges[estimator]
    shared = AWD_LM + ".distributed.cli"
    assert shared in edges[monitored] and shared in edges[estimator]


@pytest.mark.per_python
def test_the_awd_lm_floor_check_finds_a_climb():
    lm = AWD_LM + ".inference.lm"
    edges = {AWD_LM + ".corpus.data": {AWD_LM + ".graph.model"},
             AWD_LM + ".graph.model": {AWD_LM + ".corpus.data",
                                       AWD_LM + ".graph.losses"},
             AWD_LM + ".graph.losses": {AWD_LM},
             lm: {AWD_LM + ".score"},
             AWD_LM + ".score": {lm, AWD_LM + ".training.train"}}
    assert awd_lm_upward_edges(edges) == [
        (AWD_LM + ".corpus.data", AWD_LM + ".graph.model"),
        (lm, AWD_LM + ".score")]


@pytest.mark.per_python
def test_no_import_circle():
    edges = import_edges()
    assert len(edges) > 40   # the walk found the library
    assert _circles(edges) == []


@pytest.mark.per_python
def test_the_circle_check_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_a_float_cell_does_not_load_the_exporter():
    """Neither a float cell nor the language model's graph code
    (``awd_lm.graph.model``) loads any module of the TFLite exporter."""
    code = ("import sys, tf1_awd_sparse.base._quiet, weight_drop_lstm\n"
            "import tf1_awd_sparse.awd_lm.graph.model\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m.startswith('tf1_awd_sparse.export')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=300).stdout
    assert out.strip().splitlines()[-1] == "[]"
