"""What a written TFLite file computes, read from its flatbuffer (no
interpreter): each tensor's uint8 grid (:func:`tensor_grids`), the
operators left float (:func:`float_ops`), the 8-bit requantizations TF
2.15's converter puts before concatenations (:func:`requantizations`,
:func:`bypass_requantizations`) and the products it writes on a
concatenation's grid (:func:`merged_grids`).

`export_quantized_graph` reports and patches its files with these; each
takes the file's bytes or path.
"""
import collections
import struct

from tf1_awd_sparse.export import tflite_file
from tf1_awd_sparse.export.tflite_schema import (
    Op, TensorType, builtin_code, operator_name)

__all__ = ["FloatOp", "float_ops", "tensor_grids", "requantizations",
           "bypass_requantizations", "merged_grids"]

#: An operator of a written file that computes in float: its index in the
#: subgraph, its builtin name (``'FULLY_CONNECTED'``) and the names of its
#: output tensors.
FloatOp = collections.namedtuple("FloatOp", ["index", "op", "outputs"])

#: Tensor types that are float.
_FLOAT_TYPES = (TensorType.FLOAT32, TensorType.FLOAT16, TensorType.FLOAT64)


def _subgraph(buf):
    model = tflite_file.root(buf)
    graph = tflite_file.tables(buf, model, "Model", "subgraphs")[0]
    return model, graph, tflite_file.tables(buf, graph, "SubGraph",
                                            "tensors")


def tensor_grids(model):
    """{tensor name: (scale, zero_point)} of a TFLite file's tensors
    (``(0.0, 0)`` for a tensor without quantization parameters; the
    first channel's of a per-channel one).

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = tflite_file.verify(model)
    _, _, tensors = _subgraph(buf)
    grids = {}
    for tensor in tensors:
        params = tflite_file.subtable(buf, tensor, "Tensor",
                                            "quantization")
        scales = zeros = ()
        if params is not None:
            scales = tflite_file.values(buf, params, "QuantizationParameters",
                                        "scale")
            zeros = tflite_file.values(buf, params, "QuantizationParameters",
                                       "zero_point")
        grids[tflite_file.string(buf, tensor, "Tensor", "name")] = (
            float(scales[0]) if scales else 0.0,
            int(zeros[0]) if zeros else 0)
    return grids


#: The 8-bit tensor types.
_EIGHT_BITS = (TensorType.UINT8, TensorType.INT8)


def requantizations(model):
    """The output names of a file's QUANTIZE ops from an 8-bit tensor to
    an 8-bit tensor whose scale is more than twice the input's, and whose
    output is read (by an operator, or as the file's output).

    TFLite's Requantize kernel multiplies the difference of the codes by
    a fixed-point multiplier and, for a ratio of scales below 1/2, shifts
    right after the multiplication has already rounded: two roundings,
    the output one code off for about one value in eight. (A
    CONCATENATION rescales its inputs itself, in one rounding.)

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = tflite_file.verify(model)
    root, graph, tensors = _subgraph(buf)
    grids = tensor_grids(buf)
    codes = _codes(buf, root)
    operators = tflite_file.tables(buf, graph, "SubGraph", "operators")
    read = set(tflite_file.ints(buf, graph, "SubGraph", "outputs"))
    for op in operators:
        read.update(tflite_file.ints(buf, op, "Operator", "inputs"))
    found = []
    for op in operators:
        if codes[tflite_file.scalar(buf, op, "Operator",
                                    "opcode_index")] != Op.QUANTIZE:
            continue
        (source,), (target,) = [tflite_file.ints(buf, op, "Operator", name)
                                for name in ("inputs", "outputs")]
        if target not in read:
            continue    # bypassed (`bypass_requantizations`)
        names = [tflite_file.string(buf, tensors[i], "Tensor", "name")
                 for i in (source, target)]
        if all(tflite_file.scalar(buf, tensors[i], "Tensor", "type")
               in _EIGHT_BITS for i in (source, target)) and \
                grids[names[0]][0] < 0.5 * grids[names[1]][0]:
            found.append(names[1])
    return found


def bypass_requantizations(model):
    """The file with each uint8 -> uint8 QUANTIZE op that only feeds
    CONCATENATION ops bypassed: each concatenation reads the QUANTIZE's
    input instead of its output (the QUANTIZE is left, unread).

    A uint8 CONCATENATION rescales each input from the input's grid to
    its output's in one rounding (TOCO's files, TF 1.x's, rely on it);
    the QUANTIZE ops TF 2.15's converter puts before it round twice
    (`requantizations`). The patch rewrites operator input indices in
    place, so the file keeps its layout. int8 concatenations are left as
    they are: their kernel requires every input on the output's grid.

    Args:
      model: the file's bytes or path.

    Returns:
      ``(bytes, names)``: the patched file and the names of the QUANTIZE
      outputs bypassed (empty, and the bytes unchanged, where none).

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = bytearray(tflite_file.verify(model))
    root, graph, tensors = _subgraph(bytes(buf))
    codes = _codes(buf, root)
    operators = tflite_file.tables(buf, graph, "SubGraph", "operators")
    graph_outputs = set(tflite_file.ints(buf, graph, "SubGraph", "outputs"))

    def code(op):
        return codes[tflite_file.scalar(buf, op, "Operator", "opcode_index")]

    def uint8(index):
        return tflite_file.scalar(buf, tensors[index], "Tensor",
                                  "type") == TensorType.UINT8

    readers = collections.defaultdict(list)
    for op in operators:
        for slot, index in enumerate(
                tflite_file.ints(buf, op, "Operator", "inputs")):
            readers[index].append((op, slot))
    bypassed = []
    for op in operators:
        if code(op) != Op.QUANTIZE:
            continue
        (source,), (target,) = [tflite_file.ints(buf, op, "Operator", name)
                                for name in ("inputs", "outputs")]
        reads = readers[target]
        if (target in graph_outputs or not reads or not uint8(source)
                or not uint8(target)
                or any(code(reader) != Op.CONCATENATION
                       for reader, _ in reads)):
            continue
        for reader, slot in reads:
            start = tflite_file.subtable(buf, reader, "Operator", "inputs")
            struct.pack_into("<i", buf, start + 4 + 4 * slot, source)
        bypassed.append(tflite_file.string(buf, tensors[target], "Tensor",
                                           "name"))
    return bytes(buf), bypassed


def merged_grids(model):
    """The output names of a file's arithmetic ops (not QUANTIZE, not a
    move) read only by CONCATENATION ops and written directly on the
    concatenation's grid.

    An eval graph rounds such a value twice: on its own FakeQuant's grid,
    then on the concatenation's. TF 2.15's converter gives the op the
    concatenation's grid instead (one rounding), so its file can differ
    from the graph by a code there, which a recurrent state amplifies
    (a GRU's ``r * h``: docs/quantization.md). TOCO and TF >= 2.16 keep
    the op's own grid, and the concatenation rescales.

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = tflite_file.verify(model)
    root, graph, tensors = _subgraph(buf)
    codes = _codes(buf, root)
    grids = tensor_grids(buf)
    operators = tflite_file.tables(buf, graph, "SubGraph", "operators")
    readers = collections.defaultdict(list)
    for op in operators:
        for index in tflite_file.ints(buf, op, "Operator", "inputs"):
            readers[index].append(op)
    outputs = set(tflite_file.ints(buf, graph, "SubGraph", "outputs"))

    def code(op):
        return codes[tflite_file.scalar(buf, op, "Operator", "opcode_index")]

    def name(index):
        return tflite_file.string(buf, tensors[index], "Tensor", "name")

    found = []
    for op in operators:
        if code(op) not in _ARITHMETIC:
            continue
        for index in tflite_file.ints(buf, op, "Operator", "outputs"):
            reads = readers[index]
            if index in outputs or not reads or any(
                    code(r) != Op.CONCATENATION for r in reads):
                continue
            if all(grids[name(index)] == grids[name(
                    tflite_file.ints(buf, r, "Operator", "outputs")[0])]
                   for r in reads):
                found.append(name(index))
    return found


#: Ops that compute a value on a grid of their own (a move, a
#: concatenation or a QUANTIZE only re-grids).
_ARITHMETIC = (Op.ADD, Op.MUL, Op.SUB)


def _codes(buf, root):
    """The builtin code of each of a file's operator codes."""
    return [builtin_code(tflite_file.scalar(buf, c, "OperatorCode",
                                            "deprecated_builtin_code"),
                         tflite_file.scalar(buf, c, "OperatorCode",
                                            "builtin_code"))
            for c in tflite_file.tables(buf, root, "Model",
                                        "operator_codes")]


def float_ops(model):
    """The operators of a TFLite file that compute in float: each with a
    float32 / float16 / float64 tensor among its inputs or outputs (a
    fully 8-bit file has none), in the subgraph's order.

    Args:
      model: the file's bytes or path.

    Returns:
      a list of :data:`FloatOp` (index, operator name, output tensors'
      names).

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file; OSError: a
        path that cannot be read.
    """
    buf = tflite_file.verify(model)
    root, graph, tensors = _subgraph(buf)
    codes = _codes(buf, root)
    found = []
    for index, op in enumerate(tflite_file.tables(buf, graph, "SubGraph",
                                                  "operators")):
        ins = [i for i in tflite_file.ints(buf, op, "Operator", "inputs")
               if i >= 0]
        outs = [i for i in tflite_file.ints(buf, op, "Operator", "outputs")
                if i >= 0]
        if any(tflite_file.scalar(buf, tensors[i], "Tensor", "type")
               in _FLOAT_TYPES for i in ins + outs):
            found.append(FloatOp(index, operator_name(codes[tflite_file.scalar(
                buf, op, "Operator", "opcode_index")]), tuple(
                    tflite_file.string(buf, tensors[i], "Tensor", "name")
                    for i in outs)))
    return found
