"""A ``.tflite`` file's flatbuffer read with the standard library, on the
schema's tables as this library knows them (`tflite_schema.TABLES` and
`tflite_schema.UNIONS`, the one registry): readers of a table's fields
(:func:`root`, :func:`field`, :func:`scalar`, :func:`subtable`,
:func:`tables`, :func:`ints`, :func:`values`, :func:`string`) and
:func:`verify`, which checks every offset and length in a file before an
interpreter reads it. The readers take
bytes that :func:`verify` passed (on other bytes they may raise
``struct.error`` or read garbage); their ``kind`` and ``name`` are a table
and a field of `tflite_schema.TABLES` (a KeyError otherwise).

Why the check: the interpreters of TF 1.13, TF 1.15 and TF 2.x's
``tf.lite`` build a model from a file without verifying its flatbuffer, so
a truncated or damaged file makes them read outside it and the process
dies (a segmentation fault: the first 100,000 bytes of a language-model
file opened by TF 2.15's ``tf.lite.Interpreter``). LiteRT verifies the
flatbuffer itself; `tf1_awd_sparse.export.runner.open_interpreter` runs
:func:`verify` first on every interpreter, so a damaged file is one
`TFLiteFileError` everywhere.

The field layout follows TFLite's ``schema.fbs`` (field *i* of a table is
slot ``4 + 2 i`` of its vtable; a union field takes two slots, its
``_type`` byte and the table); fields a newer schema appends are checked
as fields of unknown type (inside their table). Works on every TensorFlow
version: it imports neither TensorFlow nor the ``flatbuffers`` package.
"""
import os
import struct

from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.export.tflite_schema import IDENTIFIER, TABLES, UNIONS

__all__ = ["TFLiteFileError", "verify", "model_bytes", "root", "field",
           "scalar", "subtable", "tables", "ints", "values", "string",
           "metadata"]

_SCALARS = {"bool": "<B", "byte": "<b", "ubyte": "<B", "short": "<h",
            "ushort": "<H", "int": "<i", "uint": "<I", "float": "<f",
            "long": "<q", "ulong": "<Q"}


def _parse_fields():
    """{table: [(name, kind, argument)]}: kind ``scalar`` (struct format),
    ``string``, ``table`` (its name), ``union`` (its name) or ``vector``
    (the element's (kind, argument))."""
    def kind_of(type_name):
        if type_name in _SCALARS:
            return "scalar", _SCALARS[type_name]
        if type_name == "string":
            return "string", None
        if type_name in UNIONS:
            return "union", type_name
        assert type_name in TABLES, type_name
        return "table", type_name
    parsed = {}
    for table, specs in TABLES.items():
        fields = []
        for spec in specs:
            name, type_name = spec.split(":")
            if type_name.startswith("["):
                element = kind_of(type_name[1:-1])
                assert element[0] != "union", spec
                fields.append((name, "vector", element))
            else:
                fields.append((name,) + kind_of(type_name))
        parsed[table] = fields
    return parsed


_FIELDS = _parse_fields()
_SLOTS = {(table, name): index for table, fields in _FIELDS.items()
          for index, (name, _, _) in enumerate(fields)}


class TFLiteFileError(ValueError, Error):
    """Bytes that are not a whole TFLite flatbuffer: too short, without
    the ``TFL3`` identifier, or an offset, length, string or index that
    points outside the file or its tables (a truncated or damaged file).
    The message names the file, the field (e.g.
    ``subgraphs[0].tensors[57].name``) and the bytes."""


def model_bytes(model):
    """A model's bytes, from bytes (returned as they are) or a path.

    Raises:
      OSError: a path that cannot be read.
    """
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as handle:
            return handle.read()
    return model


# --- reading (of bytes that verify passed) -------------------------------

def root(buf):
    """Position of the ``Model`` table of a file's bytes."""
    return struct.unpack_from("<I", buf, 0)[0]


def field(buf, table, kind, name):
    """Absolute position of field ``name`` of the ``kind`` table at
    ``table`` (e.g. ``field(buf, t, "Tensor", "sparsity")``), or None where
    the table does not hold it."""
    vtable = table - struct.unpack_from("<i", buf, table)[0]
    slot = 4 + 2 * _SLOTS[(kind, name)]
    if slot >= struct.unpack_from("<H", buf, vtable)[0]:
        return None
    offset = struct.unpack_from("<H", buf, vtable + slot)[0]
    return table + offset if offset else None


def scalar(buf, table, kind, name, default=0):
    """The value of a scalar field, ``default`` (the schema's) where
    unset."""
    position = field(buf, table, kind, name)
    if position is None:
        return default
    _, _, fmt = _FIELDS[kind][_SLOTS[(kind, name)]]
    return struct.unpack_from(fmt, buf, position)[0]


def _target(buf, table, kind, name):
    position = field(buf, table, kind, name)
    if position is None:
        return None
    return position + struct.unpack_from("<I", buf, position)[0]


def subtable(buf, table, kind, name):
    """Position of the table a table field points to (None where
    unset)."""
    return _target(buf, table, kind, name)


def tables(buf, table, kind, name):
    """Positions of the tables of a vector-of-tables field (empty where
    unset)."""
    start = _target(buf, table, kind, name)
    if start is None:
        return []
    count = struct.unpack_from("<I", buf, start)[0]
    return [slot + struct.unpack_from("<I", buf, slot)[0]
            for slot in range(start + 4, start + 4 + 4 * count, 4)]


def ints(buf, table, kind, name):
    """The values of an ``[int]`` field (empty where unset)."""
    start = _target(buf, table, kind, name)
    if start is None:
        return ()
    count = struct.unpack_from("<I", buf, start)[0]
    return struct.unpack_from("<%di" % count, buf, start + 4)


def values(buf, table, kind, name):
    """The values of a vector-of-scalars field (``[float]``, ``[long]``...)
    in its type (empty where unset)."""
    start = _target(buf, table, kind, name)
    if start is None:
        return ()
    _, _, (_, fmt) = _FIELDS[kind][_SLOTS[(kind, name)]]
    count = struct.unpack_from("<I", buf, start)[0]
    return struct.unpack_from("<%d%s" % (count, fmt[1:]), buf, start + 4)


def string(buf, table, kind, name):
    """A string field, decoded as UTF-8 (``""`` where unset)."""
    start = _target(buf, table, kind, name)
    if start is None:
        return ""
    size = struct.unpack_from("<I", buf, start)[0]
    return bytes(buf[start + 4:start + 4 + size]).decode("utf-8", "replace")


def metadata(buf):
    """{name: bytes} of the model's metadata entries (of bytes that
    `verify` passed; an entry whose buffer holds no data maps to
    ``b""``)."""
    model = root(buf)
    buffers = tables(buf, model, "Model", "buffers")
    found = {}
    for entry in tables(buf, model, "Model", "metadata"):
        index = scalar(buf, entry, "Metadata", "buffer")
        data = b""
        if index < len(buffers):
            start = _target(buf, buffers[index], "Buffer", "data")
            if start is not None:
                size = struct.unpack_from("<I", buf, start)[0]
                data = bytes(buf[start + 4:start + 4 + size])
        found[string(buf, entry, "Metadata", "name")] = data
    return found


# --- the check -------------------------------------------------------------

def verify(model):
    """Checks that ``model`` is a whole TFLite flatbuffer, before an
    interpreter that does not verify one reads it.

    Checks, reading only the flatbuffer's tables (never the weights):
      * the header: at least 8 bytes, the ``TFL3`` identifier at bytes 4-8,
        the root offset inside the file;
      * every offset (4-byte aligned, not 0, below 2**31, pointing inside
        the file) and every table (its vtable inside the file, 2-byte
        aligned, of even size; each field inside the file at its alignment
        and inside the table);
      * every vector (length and elements inside the file) and string
        (length, bytes and terminating NUL inside the file) of the
        registry's tables: subgraphs, tensors, operators, operator codes,
        buffers (their data too), quantization and sparsity parameters,
        metadata, signatures; the tables of unions by their type;
      * the indices between tables: a tensor's buffer, an operator's code
        and tensors (-1: an optional one), a subgraph's inputs and
        outputs, metadata buffers, a signature's subgraph and tensors; a
        buffer's or custom options' data stored after the flatbuffer
        (``offset``, ``size``) inside the file.

    Args:
      model: the file's bytes, or a path to it.

    Returns:
      the file's bytes.

    Raises:
      TFLiteFileError: the first fault found (the message names the file,
        the field and the bytes); OSError: a path that cannot be read.
    """
    label = ("%r" % os.fspath(model) if isinstance(model, (str, os.PathLike))
             else "model")
    buf = model_bytes(model)
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TFLiteFileError("model must be bytes or a path, got %r"
                              % (type(model).__name__,))
    size = len(buf)
    if size < 8 or bytes(buf[4:8]) != IDENTIFIER:
        raise TFLiteFileError(
            "%s is not a TFLite file: no %r identifier at bytes 4-8 (%d "
            "bytes%s)" % (label, IDENTIFIER.decode(), size,
                          ", found %r" % bytes(buf[4:8]) if size >= 8
                          else ""))
    checker = _Checker(buf, label)
    checker.table(checker.offset(0, ("root",)), "Model", ())
    _check_indices(checker, root(buf))
    return buf


def _where(path):
    """``subgraphs[0].tensors[57].name`` of a path tuple."""
    text = ""
    for part in path:
        text += "[%d]" % part if isinstance(part, int) else (
            "." + part if text else part)
    return text or "the root table"


_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from


class _Checker(object):
    """The structural check of one buffer: each table once, each vtable's
    layout once."""

    def __init__(self, buf, label):
        self.buf, self.size, self.label = buf, len(buf), label
        self.done = set()
        self.layouts = {}

    def fail(self, path, message):
        raise TFLiteFileError(
            "%s is not a whole TFLite file (truncated or damaged): %s: %s"
            % (self.label, _where(path), message))

    def inside(self, position, length, path, what):
        if position < 0 or position + length > self.size:
            self.fail(path, "%s (%d bytes at byte %d) runs past the end "
                      "of the file (%d bytes)" % (what, length, position,
                                                  self.size))

    def aligned(self, position, alignment, path, what):
        if position % alignment:
            self.fail(path, "%s at byte %d is not %d-byte aligned"
                      % (what, position, alignment))

    def offset(self, position, path):
        """The position an offset at ``position`` points to."""
        if position % 4 or position < 0 or position + 4 > self.size:
            self.aligned(position, 4, path, "an offset")
            self.inside(position, 4, path, "an offset")
        value = _U32(self.buf, position)[0]
        target = position + value
        if value == 0 or value >= 1 << 31 or target >= self.size:
            self.fail(path, "the offset at byte %d points to byte %d, "
                      "outside the file (%d bytes)"
                      % (position, target, self.size))
        return target

    def vector(self, start, item_size, path, what="a vector"):
        """The element count of the vector (or string) at ``start``."""
        if start % 4 or start + 4 > self.size:
            self.aligned(start, 4, path, what)
            self.inside(start, 4, path, what + "'s length")
        count = _U32(self.buf, start)[0]
        if start + 4 + count * item_size > self.size:
            self.inside(start + 4, count * item_size, path,
                        "%s of %d %s" % (what, count, "bytes"
                                         if what == "a string" else "items"))
        return count

    def string(self, start, path):
        end = start + 4 + self.vector(start, 1, path, "a string")
        self.inside(end, 1, path, "a string's terminating NUL")
        if self.buf[end] != 0:
            self.fail(path, "the string of %d bytes at byte %d does not "
                      "end in a NUL byte" % (end - start - 4, start))

    def layout(self, vtable, kind, path):
        """``(inline size, [(offset, name, kind, argument, width)],
        {scalar or vector name: (offset, format or element)})`` of the
        fields a vtable sets,
        checked: the vtable inside the file, each field inside the table's
        inline size (width 1 for a field of unknown type)."""
        self.aligned(vtable, 2, path, "a vtable")
        self.inside(vtable, 4, path, "a vtable")
        vsize, inline = struct.unpack_from("<HH", self.buf, vtable)
        if vsize < 4 or vsize % 2:
            self.fail(path, "the vtable at byte %d has size %d (even, at "
                      "least 4 expected)" % (vtable, vsize))
        self.inside(vtable, vsize, path, "a vtable")
        fields = _FIELDS.get(kind, ())
        present = []
        slots = struct.unpack_from("<%dH" % ((vsize - 4) // 2), self.buf,
                                   vtable + 4)
        for index, offset in enumerate(slots):
            if not offset:
                continue
            if index < len(fields):
                name, field_kind, argument = fields[index]
                width = struct.calcsize(argument) \
                    if field_kind == "scalar" else 4
            else:   # a field of a newer schema, or of an unlisted table
                name, field_kind, argument, width = index, None, None, 1
            if offset + width > inline:
                self.fail(path + (name,), "a field of %d bytes at offset %d "
                          "lies outside its table (%d bytes)"
                          % (width, offset, inline))
            present.append((offset, name, field_kind, argument, width))
        named = {name: (offset, argument) for offset, name, field_kind,
                 argument, _ in present if field_kind in ("scalar",
                                                          "vector")}
        self.layouts[vtable, kind] = inline, present, named
        return self.layouts[vtable, kind]

    def value(self, table, kind, name):
        """A scalar field of a checked table (0, the schema's default for
        every field read here, where unset)."""
        vtable = table - _I32(self.buf, table)[0]
        found = self.layouts[vtable, kind][2].get(name)
        if found is None:
            return 0
        return struct.unpack_from(found[1], self.buf, table + found[0])[0]

    def ints(self, table, kind, name):
        """The values of an ``[int]`` field of a checked table (empty
        where unset)."""
        vtable = table - _I32(self.buf, table)[0]
        found = self.layouts[vtable, kind][2].get(name)
        if found is None:
            return ()
        start = table + found[0]
        start += _U32(self.buf, start)[0]
        count = _U32(self.buf, start)[0]
        return struct.unpack_from("<%di" % count, self.buf, start + 4)

    def table(self, position, kind, path):
        """Checks the table at ``position`` (``kind`` of `TABLES`, or None:
        fields of unknown type) and every table it points to."""
        if (kind, position) in self.done:
            return
        self.done.add((kind, position))
        if position % 4 or position < 0 or position + 4 > self.size:
            self.aligned(position, 4, path, "a table")
            self.inside(position, 4, path, "a table")
        vtable = position - _I32(self.buf, position)[0]
        inline, present, _ = self.layouts.get((vtable, kind)) or \
            self.layout(vtable, kind, path)
        self.inside(position, inline, path, "a table")
        for offset, name, field_kind, argument, width in present:
            at = position + offset
            if at % width:
                self.aligned(at, width, path + (name,), "a field")
            if field_kind in ("scalar", None):
                continue   # inside the table, which is inside the file
            target = self.offset(at, path + (name,))
            if field_kind == "vector":
                self.items(target, argument, path + (name,))
            elif field_kind == "string":
                self.string(target, path + (name,))
            elif field_kind == "table":
                self.table(target, argument, path + (name,))
            else:   # a union: its type is the byte field before it
                code = self.value(position, kind, name + "_type")
                self.table(target, UNIONS[argument].get(code),
                           path + (name,))

    def items(self, start, element, path):
        """A vector's elements: scalars by size, strings and tables each."""
        kind, argument = element
        if kind == "scalar":
            self.vector(start, struct.calcsize(argument), path)
            return
        count = self.vector(start, 4, path)
        for i in range(count):
            target = self.offset(start + 4 + 4 * i, path + (i,))
            if kind == "string":
                self.string(target, path + (i,))
            else:
                self.table(target, argument, path + (i,))


def _check_indices(checker, model):
    """The indices between a structurally sound model's tables, and the
    data stored after the flatbuffer."""
    buf, value = checker.buf, checker.value
    buffers = tables(buf, model, "Model", "buffers")
    codes = len(tables(buf, model, "Model", "operator_codes"))
    subgraphs = tables(buf, model, "Model", "subgraphs")

    def indices(values, limit, path, what, optional=False):
        """Each of ``values`` in [0, limit) (or -1 where optional); the
        path of the first that is not gets ``[i]``, or names it (a list of
        one value per table: ``path`` is then ``(prefix, name)``)."""
        low = -1 if optional else 0
        if not values or (min(values) >= low and max(values) < limit):
            return
        i = [low <= v < limit for v in values].index(False)
        where = (path[0] + (i, path[1]) if isinstance(path[0], tuple)
                 else path + (i,))
        checker.fail(where, "%s %d is not in [0, %d)%s" % (
            what, values[i], limit, " (or -1: none)" if optional else ""))

    def outside(table, kind, names, path):
        """Data that a table stores after the flatbuffer (offset, size)."""
        offset, length = value(table, kind, names[0]), value(table, kind,
                                                             names[1])
        if offset > 1 and offset + length > checker.size:
            checker.fail(path, "%d bytes at byte %d run past the end of "
                         "the file (%d bytes)"
                         % (length, offset, checker.size))

    for i, table in enumerate(buffers):
        outside(table, "Buffer", ("offset", "size"), ("buffers", i))
    indices(ints(buf, model, "Model", "metadata_buffer"), len(buffers),
            ("metadata_buffer",), "buffer")
    indices([value(t, "Metadata", "buffer") for t in tables(
        buf, model, "Model", "metadata")], len(buffers),
        (("metadata",), "buffer"), "buffer")
    sizes = []
    for g, graph in enumerate(subgraphs):
        path = ("subgraphs", g)
        tensors = tables(buf, graph, "SubGraph", "tensors")
        sizes.append(len(tensors))
        indices([value(t, "Tensor", "buffer") for t in tensors],
                len(buffers), (path + ("tensors",), "buffer"), "buffer")
        for name in ("inputs", "outputs"):
            indices(ints(buf, graph, "SubGraph", name), len(tensors),
                    path + (name,), "tensor", optional=True)
        ops = tables(buf, graph, "SubGraph", "operators")
        indices([value(op, "Operator", "opcode_index") for op in ops],
                codes, (path + ("operators",), "opcode_index"),
                "operator code")
        for o, op in enumerate(ops):
            where = path + ("operators", o)
            for name in ("inputs", "outputs", "intermediates"):
                indices(checker.ints(op, "Operator", name), len(tensors),
                        where + (name,), "tensor", optional=True)
            outside(op, "Operator", ("large_custom_options_offset",
                                     "large_custom_options_size"), where)
    for s, signature in enumerate(tables(buf, model, "Model",
                                         "signature_defs")):
        path = ("signature_defs", s)
        graph = value(signature, "SignatureDef", "subgraph_index")
        if not 0 <= graph < len(subgraphs):
            checker.fail(path + ("subgraph_index",), "subgraph %d is not in "
                         "[0, %d)" % (graph, len(subgraphs)))
        for name in ("inputs", "outputs"):
            indices([value(entry, "TensorMap", "tensor_index") for entry in
                     tables(buf, signature, "SignatureDef", name)],
                    sizes[graph], (path + (name,), "tensor_index"),
                    "tensor")
