"""TFLite's schema is described once (issue 56): outside
``export/tflite_schema.py`` no module of the library binds an operator
code or a tensor type to a name of the schema's, names the fields of the
object API's operator codes (``builtinCode``, ``deprecatedBuiltinCode``,
``OperatorCodeT``: registering and reading a code are
`tflite_schema.opcode_index` and `operator_code`), spells the file
identifier, or divides by the symmetric int8 grid's 127
(`tflite_schema.symmetric_int8`)."""
import ast
import os
import sys

import pytest

from support import ROOT
from tf1_awd_sparse.export.tflite_schema import Op, TensorType

pytestmark = pytest.mark.per_python

LIBRARY = "tf1_awd_sparse"
SCHEMA_MODULE = os.path.join(LIBRARY, "export", "tflite_schema.py")
#: Names of the schema's operators and tensor types (upper case).
SCHEMA_NAMES = {m.name for m in Op} | {t.name for t in TensorType}
OBJECT_API = {"builtinCode", "deprecatedBuiltinCode", "OperatorCodeT"}


def _constant(node):
    """The value of a literal node (None for anything else); Python 3.7
    parses literals to ``Num``, ``Str`` and ``Bytes``."""
    if isinstance(node, ast.Constant):
        return node.value
    if sys.version_info < (3, 8):
        for kind, field in (("Num", "n"), ("Str", "s"), ("Bytes", "s")):
            if isinstance(node, getattr(ast, kind)):
                return getattr(node, field)
    return None


def _is_int(node):
    return type(_constant(node)) is int


def _ints(node):
    """Whether ``node`` is an int literal or a tuple of int literals (or of
    such tuples)."""
    if isinstance(node, ast.Tuple):
        return all(_ints(e) for e in node.elts)
    return _is_int(node)


def schema_sites(source):
    """``[(line, what)]``: the places of ``source`` (a module's text) that
    describe TFLite's schema a second time."""
    tree = ast.parse(source)
    found = []
    for node in tree.body:   # module-level tables of codes
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) \
                else [target]
            values = node.value.elts if isinstance(target, ast.Tuple) \
                and isinstance(node.value, ast.Tuple) else [node.value]
            for name, value in zip(names, values):
                if isinstance(name, ast.Name) and \
                        name.id.lstrip("_") in SCHEMA_NAMES and _ints(value):
                    found.append((node.lineno, "code " + name.id))
        if isinstance(node.value, ast.Dict) and node.value.keys and all(
                _is_int(k) for k in node.value.keys) and all(
                    str(_constant(v)).upper() in SCHEMA_NAMES
                    for v in node.value.values):
            found.append((node.lineno, "table of codes"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in OBJECT_API:
            found.append((node.lineno, node.attr))
        if _constant(node) == b"TFL3":
            found.append((node.lineno, "identifier"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) \
                and _constant(node.right) in (127, 127.0):
            found.append((node.lineno, "127"))   # a scale max|w| / 127
    return sorted(found)


def _library_sources():
    for folder, _, files in os.walk(os.path.join(ROOT, LIBRARY)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(".py"):
                with open(path) as handle:
                    yield os.path.relpath(path, ROOT), handle.read()


def test_the_schema_is_described_once(record_property):
    found = {path: sites for path, text in _library_sources()
             if path != SCHEMA_MODULE
             for sites in [schema_sites(text)] if sites}
    record_property("schema_sites", sum(map(len, found.values())))
    assert found == {}


def test_the_schema_module_holds_what_the_check_looks_for():
    """The module the check exempts holds each kind of site (so the check
    looks for the right things)."""
    with open(os.path.join(ROOT, SCHEMA_MODULE)) as handle:
        kinds = {what for _, what in schema_sites(handle.read())}
    assert {"builtinCode", "OperatorCodeT", "127"} <= kinds


def test_the_check_finds_each_form():
    source = '\n'.join([
        "_LSTM = 16",
        "ADD, CONCATENATION, RESHAPE = 0, 2, 22",
        "_QUANTIZE, _EIGHT_BITS = 114, (3, 9)",
        "_NAMES = {0: 'ADD', 9: 'FULLY_CONNECTED'}",
        "_TYPES = {0: 'float32', 9: 'int8'}",
        "def f(code, b):",
        "    b.Finish(m, file_identifier=b'TFL3')",
        "    return max(code.builtinCode, code.deprecatedBuiltinCode)",
        "def g(schema, v):",
        "    code = schema.OperatorCodeT()",
        "    return v / (abs(v).max() / 127.0)",
        "WIDTH = 16",
        "_ARITHMETIC = (Op.ADD, Op.MUL)",
        "BLOCK_NAMES = {1: 'one'}",
    ])
    assert schema_sites(source) == [
        (1, "code _LSTM"), (2, "code ADD"), (2, "code CONCATENATION"),
        (2, "code RESHAPE"), (3, "code _QUANTIZE"), (4, "table of codes"),
        (5, "table of codes"), (7, "identifier"), (8, "builtinCode"),
        (8, "deprecatedBuiltinCode"), (10, "OperatorCodeT"), (11, "127")]
