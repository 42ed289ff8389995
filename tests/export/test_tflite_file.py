"""`export.tflite_file.verify` (issue 42): an exported file passes and
reads as the interpreter reads it; a truncated file (at any cut) or one
with a damaged offset, length, string or index is a `TFLiteFileError`
naming the field, before any interpreter reads it; and opening such files
through `TFLiteRunner` and `open_interpreter` on every interpreter ends in
that error, never in a signal (they run in a child process, so a crash
shows as a failure here instead of ending pytest)."""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

import tf1_awd_sparse
from support import ROOT
from support.lm import untrained_lm_file
from support.versions import IS_TF2
from tf1_awd_sparse.export import sparse_storage, tflite_file
from tf1_awd_sparse.export.runner import open_interpreter


@pytest.fixture(scope="module")
def lm_file(tmp_path_factory):
    """The bytes of a tiny language model exported with export_lm
    (untrained: only the file's structure matters here)."""
    path = untrained_lm_file(tmp_path_factory.mktemp("tflite_file"), 3)
    with open(path, "rb") as handle:
        return handle.read()


def _cuts(size):
    """Truncation points: inside the header, the root table, the tables
    and the weights, and one byte short."""
    return sorted({0, 4, 7, 8, 12, 64, size // 8, size // 4, size // 2,
                   3 * size // 4, size - 16, size - 1})


def _put(data, position, fmt, value):
    damaged = bytearray(data)
    struct.pack_into(fmt, damaged, position, value)
    return bytes(damaged)


def _damaged(data):
    """{what: (bytes, the field path the error must name)}: one fault
    each, written where the reader finds the field."""
    read = tflite_file
    root = read.root(data)
    graph, = read.tables(data, root, "Model", "subgraphs")
    tensors = read.tables(data, graph, "SubGraph", "tensors")
    buffers = read.tables(data, root, "Model", "buffers")
    ops = read.tables(data, graph, "SubGraph", "operators")
    name = read.field(data, tensors[3], "Tensor", "name")
    name_start = name + struct.unpack_from("<I", data, name)[0]
    with_data = [b for b in buffers
                 if read.field(data, b, "Buffer", "data") is not None]
    data_field = read.field(data, with_data[0], "Buffer", "data")
    data_start = data_field + struct.unpack_from("<I", data, data_field)[0]
    op_inputs = read.field(data, ops[0], "Operator", "inputs")
    op_inputs = op_inputs + struct.unpack_from("<I", data, op_inputs)[0]
    def vtable(table):
        return table - struct.unpack_from("<i", data, table)[0]
    # Tables of one layout share a vtable: the first one names it.
    first = [vtable(t) for t in tensors].index(vtable(tensors[5]))
    huge = 0x7ffffff0
    return {
        "root offset": (_put(data, 0, "<I", huge), "root"),
        "subgraphs offset": (_put(data, read.field(
            data, root, "Model", "subgraphs"), "<I", huge), "subgraphs"),
        "name length": (_put(data, name_start, "<I", huge),
                        "subgraphs[0].tensors[3].name"),
        "name terminator": (_put(data, name_start + 4 + struct.unpack_from(
            "<I", data, name_start)[0], "<B", 65),
            "subgraphs[0].tensors[3].name"),
        "buffer data length": (_put(data, data_start, "<I", huge),
                               "buffers[%d].data"
                               % buffers.index(with_data[0])),
        "odd vtable size": (_put(data, vtable(tensors[5]), "<H", 7),
                            "subgraphs[0].tensors[%d]" % first),
        "vtable outside": (_put(data, tensors[5], "<i", -huge),
                           "subgraphs[0].tensors[5]"),
        "tensor's buffer index": (_put(data, read.field(
            data, tensors[2], "Tensor", "buffer"), "<I", len(buffers) + 5),
            "subgraphs[0].tensors[2].buffer"),
        "operator's input index": (_put(data, op_inputs + 4, "<i",
                                        len(tensors)),
                                   "subgraphs[0].operators[0].inputs[0]"),
    }


def test_an_exported_file_passes_and_reads_as_the_interpreter_reads_it(
        lm_file):
    assert tflite_file.verify(lm_file) is lm_file
    buf = lm_file
    graph, = tflite_file.tables(buf, tflite_file.root(buf), "Model",
                                "subgraphs")
    names = [tflite_file.string(buf, t, "Tensor", "name")
             for t in tflite_file.tables(buf, graph, "SubGraph", "tensors")]
    interpreter = tf.lite.Interpreter(model_content=lm_file)
    by_index = {d["index"]: d["name"]
                for d in interpreter.get_tensor_details()}
    assert {i: names[i] for i in by_index} == by_index
    inputs = tflite_file.ints(buf, graph, "SubGraph", "inputs")
    assert sorted(names[i] for i in inputs) == sorted(
        d["name"] for d in interpreter.get_input_details())
    assert sparse_storage.sparse_tensors(lm_file) == []


@pytest.mark.skipif(not IS_TF2, reason="sparse files are written on TF 2.x")
def test_a_sparse_file_passes(lm_file):
    sparse, report = sparse_storage.store_sparse(lm_file, min_zeros=0.0)
    assert tflite_file.verify(sparse) is sparse
    assert sparse_storage.sparse_tensors(sparse) == [r["name"]
                                                     for r in report]


def test_a_truncated_file_is_refused_at_every_cut(lm_file):
    for cut in _cuts(len(lm_file)):
        with pytest.raises(tflite_file.TFLiteFileError) as error:
            tflite_file.verify(lm_file[:cut])
        message = str(error.value)
        assert isinstance(error.value, tf1_awd_sparse.Error)
        assert "\n" not in message
        if cut < 8:
            assert "no 'TFL3' identifier" in message, (cut, message)
        else:
            assert "not a whole TFLite file (truncated or damaged)" in \
                message and "(%d bytes)" % cut in message, (cut, message)


def test_a_damaged_offset_length_string_or_index_is_named(lm_file):
    for what, (data, path) in _damaged(lm_file).items():
        assert len(data) == len(lm_file)
        with pytest.raises(tflite_file.TFLiteFileError) as error:
            tflite_file.verify(data)
        print(what, "->", error.value)
        assert ": %s: " % path in str(error.value), (what, error.value)
    with pytest.raises(tflite_file.TFLiteFileError, match="found b'XXXX'"):
        tflite_file.verify(lm_file[:4] + b"XXXX" + lm_file[8:])
    with pytest.raises(tflite_file.TFLiteFileError, match="bytes or a path"):
        tflite_file.verify(12)


_OPEN_ALL = """
import json, sys
from tf1_awd_sparse.export.runner import TFLiteRunner, open_interpreter
for path in json.loads(sys.argv[1]):
    for interpreter in json.loads(sys.argv[2]):
        for opener in (TFLiteRunner, open_interpreter):
            try:
                opener(path, interpreter)
                result = "opened"
            except Exception as error:
                result = "%s: %s" % (type(error).__name__, error)
            print(json.dumps([path, interpreter, result]), flush=True)
"""


def test_opening_damaged_files_is_an_error_on_every_interpreter_never_a_signal(
        lm_file, tmp_path):
    paths = []
    for cut in _cuts(len(lm_file)):
        paths.append(str(tmp_path / ("cut_%d.tflite" % cut)))
        with open(paths[-1], "wb") as handle:
            handle.write(lm_file[:cut])
    for i, (data, _) in enumerate(_damaged(lm_file).values()):
        paths.append(str(tmp_path / ("damaged_%d.tflite" % i)))
        with open(paths[-1], "wb") as handle:
            handle.write(data)
    interpreters = ["tf"] + (["litert"] if IS_TF2 and __import__(
        "importlib").util.find_spec("ai_edge_litert") else [])
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_ALL, json.dumps(paths),
         json.dumps(interpreters)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    # A signal ends the child (returncode -11 for a segmentation fault)
    # after the files it opened.
    assert done.returncode == 0, (done.returncode, lines[-1:],
                                  done.stderr[-2000:])
    assert len(lines) == 2 * len(paths) * len(interpreters)
    for path, interpreter, result in lines:
        assert result.startswith("TFLiteFileError: %r is not " % path), (
            path, interpreter, result)


def test_metadata_reads_the_entries_a_writer_put():
    """`tflite_file.metadata` against the schema module's own writer: every
    entry's name and bytes (TF 2.x writes; any version reads)."""
    from tf1_awd_sparse.export import sparse_format
    if not sparse_format.available():
        pytest.skip("the flatbuffer is written with TF 2.x's schema module")
    schema, flatbuffers = sparse_format.schema_modules()
    model = schema.ModelT()
    model.version, model.subgraphs = 3, [schema.SubGraphT()]
    model.buffers, model.metadata = [schema.BufferT()], []
    for name, data in (("a", b"{}"), ("b", b"\x00\x01 bytes")):
        buffer = schema.BufferT()
        buffer.data = list(data)
        model.buffers.append(buffer)
        entry = schema.MetadataT()
        entry.name, entry.buffer = name, len(model.buffers) - 1
        model.metadata.append(entry)
    builder = flatbuffers.Builder(256)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    data = bytes(builder.Output())
    assert tflite_file.metadata(tflite_file.verify(data)) == {
        "a": b"{}", "b": b"\x00\x01 bytes"}


def _scalar_vectors(data):
    """[(start, item size, path)] of every vector of scalars `verify`
    checks in ``data`` (a spy on the check itself: the vectors it reads)."""
    seen = []
    original = tflite_file._Checker.items

    def items(self, start, element, path):
        if element[0] == "scalar":
            seen.append((start, struct.calcsize(element[1]), path))
        return original(self, start, element, path)
    tflite_file._Checker.items = items
    try:
        tflite_file.verify(data)
    finally:
        tflite_file._Checker.items = original
    return seen


def _with_count(data, start, count):
    return _put(data, start, "<I", count)


def test_a_vector_overrunning_the_file_by_less_than_an_item_is_refused(
        lm_file):
    """Each vector's bound counts its 4-byte length and its items' size:
    a length that puts the vector's end 1 to 4 bytes past the file's end
    (an [int] shape, a [ubyte] buffer, a [float] or [long] quantization
    where the file has one) is refused naming the vector."""
    vectors = _scalar_vectors(lm_file)
    size = len(lm_file)
    kinds = {}
    for start, item, path in vectors:
        kinds.setdefault((item, path[-1]), (start, item, path))
    assert {4, 1} <= {item for item, _ in kinds}, sorted(kinds)
    for start, item, path in kinds.values():
        count = (size - start - 4) // item + 1   # ends 1..item bytes past
        assert 0 < start + 4 + count * item - size <= item
        with pytest.raises(tflite_file.TFLiteFileError) as error:
            tflite_file.verify(_with_count(lm_file, start, count))
        assert ": %s: " % _where(path) in str(error.value), (path, error)


def _where(path):
    return tflite_file._where(path)


def _moved_to_the_end(data, table, kind, name, item):
    """``data`` with the vector of field ``name`` of the ``kind`` table at
    ``table`` copied to the end of the file (4-byte aligned) and the field
    pointed at the copy: the file's last bytes are that vector's.
    Returns (the bytes, the copy's start)."""
    position = tflite_file.field(data, table, kind, name)
    old = position + struct.unpack_from("<I", data, position)[0]
    count = struct.unpack_from("<I", data, old)[0]
    padded = data + b"\0" * (-len(data) % 4)
    start = len(padded)
    moved = padded + data[old:old + 4 + count * item]
    return _put(moved, position, "<I", start - position), start


def test_a_file_cut_inside_its_last_vector_is_refused(lm_file):
    """A file whose last bytes are a vector (an [int] tensor shape, a
    [ubyte] buffer's data), cut inside that vector's last item (1 byte
    short: less than its 4-byte length) and one item short: each cut is
    refused naming the vector, and the uncut file passes."""
    root = tflite_file.root(lm_file)
    graph, = tflite_file.tables(lm_file, root, "Model", "subgraphs")
    shaped = [t for t in tflite_file.tables(lm_file, graph, "SubGraph",
                                            "tensors")
              if len(tflite_file.ints(lm_file, t, "Tensor", "shape")) >= 2]
    buffers = tflite_file.tables(lm_file, root, "Model", "buffers")
    tensor = tflite_file.tables(lm_file, graph, "SubGraph",
                                "tensors").index(shaped[0])
    with_data = [(i, b) for i, b in enumerate(buffers) if tflite_file.field(
        lm_file, b, "Buffer", "data") is not None]
    cases = [((shaped[0], "Tensor", "shape", 4),
              "subgraphs[0].tensors[%d].shape" % tensor),
             ((with_data[0][1], "Buffer", "data", 1),
              "buffers[%d].data" % with_data[0][0])]
    for (table, kind, name, item), where in cases:
        data, start = _moved_to_the_end(lm_file, table, kind, name, item)
        assert tflite_file.verify(data) is data
        count = struct.unpack_from("<I", data, start)[0]
        assert count >= 2 and len(data) == start + 4 + count * item
        for cut in sorted({len(data) - 1, len(data) - item}):
            with pytest.raises(tflite_file.TFLiteFileError) as error:
                tflite_file.verify(data[:cut])
            assert ": %s: " % where in str(error.value), (cut, error.value)
