"""The rewrite behind `sparse_storage.store_sparse`: a float TFLite
model's fully-connected weights stored sparse (and int8) in place, and
each reader pointed at what reads the stored layout (the tensor itself, a
DENSIFY copy, gathered int8 rows dequantized, a PAD before / a SLICE after
a tensor padded to whole 1 x 16 blocks). It works on the schema's object
API (``ModelT``, from `sparse_format.schema_modules`); `rewrite_weights`
is the entry."""
import numpy as np

from tf1_awd_sparse.export.sparse_format import (
    KERNEL_LAYOUTS, SparseStorageError, check_ledger, encode, fast_layout,
    layout_for)
from tf1_awd_sparse.export.tflite_schema import (
    Op, TensorType, opcode_index, operator_code, symmetric_int8, type_name)

__all__ = ["rewrite_weights"]


def rewrite_weights(schema, model, weights, layout, min_zeros):
    """Rewrites, in place, every constant fully-connected weight of
    ``model`` (a one-subgraph ``ModelT`` of ``schema``): stored sparse
    where it has at least ``min_zeros`` zeros, as int8 with ``weights=
    "int8"``, its readers re-pointed and the new operators put in an order
    that runs. The arguments are `sparse_storage.store_sparse`'s, checked
    there.

    Raises:
      SparseStorageError: a fully-connected weight that is not float32 or
        not finite, or one that the int8 1 x 16 kernel would read past its
        byte-wide ledger (`sparse_format.check_ledger`).
    """
    rewrite = _Rewrite(schema, model)
    for index, uses in sorted(_weight_uses(model, rewrite.graph).items()):
        _store_tensor(rewrite, index, uses, weights, layout, min_zeros)
    rewrite.graph.operators = rewrite.operators()


def _weight_uses(model, graph):
    """{tensor index: [(operator, input position, is_fc_weights)]} of the
    constant inputs of FULLY_CONNECTED ops' weights, over all their uses."""
    uses, fc_weights = {}, set()
    for op in graph.operators:
        if operator_code(model, op) == Op.FULLY_CONNECTED and \
                len(op.inputs) > 1:
            fc_weights.add(op.inputs[1])
    for op in graph.operators:
        is_fc = operator_code(model, op) == Op.FULLY_CONNECTED
        for position, index in enumerate(op.inputs):
            if index in fc_weights:
                uses.setdefault(index, []).append(
                    (op, position, is_fc and position == 1))
    return {index: found for index, found in uses.items()
            if model.buffers[graph.tensors[index].buffer].data is not None}


class _Rewrite(object):
    """One model's rewrite: adds tensors and operators (to run first)."""

    def __init__(self, schema, model):
        self.schema, self.model = schema, model
        self.graph = model.subgraphs[0]
        self.new_ops = []        # run first (their inputs are constants)
        self.before = {}         # id(op) -> ops to run right before it
        self.after = {}          # id(op) -> ops to run right after it

    def builtin(self, op):
        return operator_code(self.model, op)

    def operators(self):
        """The rewritten graph's operators, in an order that runs."""
        ordered = list(self.new_ops)
        for op in self.graph.operators:
            ordered.extend(self.before.get(id(op), []))
            ordered.append(op)
            ordered.extend(self.after.get(id(op), []))
        return ordered

    def tensor(self, shape, dtype, name, quantization=None, data=None):
        """A new tensor (a constant of ``data``'s bytes, if given); returns
        its index."""
        schema, graph = self.schema, self.graph
        tensor = schema.TensorT()
        tensor.shape, tensor.type = [int(d) for d in shape], dtype
        tensor.name, tensor.quantization, tensor.buffer = name, \
            quantization, 0
        if data is not None:
            buffer = schema.BufferT()
            buffer.data = np.frombuffer(np.ascontiguousarray(data)
                                        .tobytes(), np.uint8)
            self.model.buffers.append(buffer)
            tensor.buffer = len(self.model.buffers) - 1
        graph.tensors.append(tensor)
        return len(graph.tensors) - 1

    def operator(self, builtin, inputs, outputs):
        op = self.schema.OperatorT()
        op.opcodeIndex = opcode_index(self.schema, self.model, builtin)
        op.inputs, op.outputs = list(inputs), list(outputs)
        return op

    def pad_input(self, fc, padding):
        """A PAD of ``padding`` zero columns on the last dimension of the
        fully-connected op ``fc``'s input, run right before it (its
        weights were padded to match)."""
        graph = self.graph
        source = graph.tensors[fc.inputs[0]]
        rank = len(source.shape)
        paddings = np.zeros([rank, 2], np.int32)
        paddings[-1, 1] = padding
        shape = list(source.shape)
        shape[-1] += padding
        constant = self.tensor([rank, 2], TensorType.INT32,
                               source.name + b"/padding", data=paddings)
        padded = self.tensor(shape, source.type, source.name + b"/padded",
                             source.quantization)
        self.before.setdefault(id(fc), []).append(
            self.operator(Op.PAD, [fc.inputs[0], constant], [padded]))
        fc.inputs = [padded] + list(fc.inputs)[1:]

    def dequantize_after(self, gather, table, padding=0):
        """``gather`` reads the int8 ``table`` and a DEQUANTIZE after it
        makes its float output: only the gathered rows are dequantized,
        per call (dequantizing the densified table would redo the whole
        table every call: its input is no constant). A table padded with
        ``padding`` zero columns has them sliced off the gathered rows
        first."""
        graph = self.graph
        output = gather.outputs[0]
        shape = list(graph.tensors[output].shape)
        name = graph.tensors[output].name
        quantization = graph.tensors[table].quantization
        rows = self.tensor(shape, TensorType.INT8, name + b"/int8",
                           quantization)
        ops = []
        if padding:
            wide = self.tensor(shape[:-1] + [shape[-1] + padding],
                               TensorType.INT8,
                               name + b"/int8_padded", quantization)
            begin = self.tensor([len(shape)], TensorType.INT32,
                                name + b"/begin",
                                data=np.zeros(len(shape), np.int32))
            size = self.tensor([len(shape)], TensorType.INT32,
                               name + b"/size",
                               data=np.array([-1] * (len(shape) - 1)
                                             + [shape[-1]], np.int32))
            ops.append(self.operator(Op.SLICE, [wide, begin, size], [rows]))
            gather.outputs = [wide]
        else:
            gather.outputs = [rows]
        gather.inputs = [table] + list(gather.inputs)[1:]
        ops.append(self.operator(Op.DEQUANTIZE, [rows], [output]))
        self.after.setdefault(id(gather), []).extend(ops)

    def read_through(self, index, builtin, suffix, dtype, quantization):
        """A new tensor = ``builtin(tensor index)``; returns its index."""
        like = self.graph.tensors[index]
        tensor = self.tensor(like.shape, dtype, like.name + suffix,
                             quantization)
        self.new_ops.append(self.operator(builtin, [index], [tensor]))
        return tensor


def _paddable(rewrite, uses, cols):
    """Whether a weight of input dimension ``cols`` can be stored padded
    with zero columns: each use is a fully-connected op's weights whose
    input's last dimension is ``cols`` (a PAD before it widens the input)
    or a GATHER of its rows (a SLICE after it narrows them again)."""
    for op, position, is_fc in uses:
        if is_fc:
            shape = rewrite.graph.tensors[op.inputs[0]].shape
            if shape is None or not len(shape) or int(shape[-1]) != cols:
                return False
        elif not (rewrite.builtin(op) == Op.GATHER and position == 0):
            return False
    return True


def _redirect(uses, source):
    for op, position, _ in uses:
        op.inputs = list(op.inputs)
        op.inputs[position] = source


def _as_int8(schema, tensor, values):
    """``values`` as `symmetric_int8` codes; ``tensor`` made int8 on their
    scale (zero point 0)."""
    codes, scale = symmetric_int8(values)
    quantization = schema.QuantizationParametersT()
    quantization.scale, quantization.zeroPoint = [scale], [0]
    tensor.type, tensor.quantization = TensorType.INT8, quantization
    return codes


def _own_buffer(rewrite, tensor):
    """``tensor``'s buffer, copied first when another tensor shares it
    (the converter de-duplicates equal constant buffers)."""
    shared = sum(t.buffer == tensor.buffer for t in rewrite.graph.tensors)
    if shared > 1:
        copy = rewrite.schema.BufferT()
        copy.data = rewrite.model.buffers[tensor.buffer].data
        rewrite.model.buffers.append(copy)
        tensor.buffer = len(rewrite.model.buffers) - 1
    return rewrite.model.buffers[tensor.buffer]


def _store_tensor(rewrite, index, uses, weights, layout, min_zeros):
    """Rewrites the weight tensor ``index`` and re-points its ``uses``."""
    schema, tensor = rewrite.schema, rewrite.graph.tensors[index]
    buffer = _own_buffer(rewrite, tensor)
    if tensor.type != TensorType.FLOAT32:
        raise SparseStorageError(
            "tensor %r is %s, not float32: sparse storage rewrites float "
            "files (TFLite has no sparse uint8 kernel and its DENSIFY op "
            "takes no uint8): export float, then store it here as float or "
            "weights='int8'" % (tensor.name.decode(), type_name(tensor.type)))
    value = np.frombuffer(bytes(bytearray(buffer.data)),
                          np.float32).reshape(tensor.shape)
    if not np.all(np.isfinite(value)):
        raise SparseStorageError("tensor %r has non-finite weights"
                                 % tensor.name.decode())
    zeros = float(np.mean(value == 0)) if value.size else 0.0
    # An all-zero matrix stays dense: a sparse one would store no values,
    # and TFLite takes a tensor with an empty buffer for no constant.
    sparse = min_zeros is not None and value.ndim == 2 and 0 < zeros < 1 \
        and zeros >= min_zeros
    padding = 0
    if sparse and layout == "fast":
        weights, layout, padding = fast_layout(
            weights, value.shape[1],
            _paddable(rewrite, uses, value.shape[1]))
    if padding:
        # Zero columns up to the next multiple of 16, so that the int8
        # 1 x 16 kernel reads the tensor; its readers are adapted below.
        value = np.pad(value, [[0, 0], [0, padding]])
        tensor.shape = list(value.shape)
    if weights == "int8":
        value = _as_int8(schema, tensor, value)
    dtype = str(value.dtype)
    chosen = layout_for(value, layout, value.itemsize) if sparse \
        else "dense"
    if sparse and (dtype, chosen) == ("int8", "1x16") and \
            any(is_fc for _, _, is_fc in uses):
        # The hybrid kernel reads it (`KERNEL_LAYOUTS`), through its
        # byte-wide ledger: refused past it rather than computed wrong.
        check_ledger(value, "model: fully-connected weight %r stored int8 "
                     "1x16 (store it with weights='float' or layout='csr' "
                     "instead)" % tensor.name.decode())
    if sparse:
        tensor.sparsity, value = encode(schema, value, chosen)
    buffer.data = np.frombuffer(value.tobytes(), np.uint8)
    _read_by(rewrite, index, uses, weights, padding,
             kernel_reads=not sparse or (dtype, chosen) in KERNEL_LAYOUTS)


def _read_by(rewrite, index, uses, weights, padding, kernel_reads):
    """Points the ``uses`` of the rewritten weight ``index`` at what reads
    it: the stored tensor (a fully-connected op whose kernel reads its
    layout: ``kernel_reads``), a DENSIFY copy (other fully-connected ops,
    and lookups of a sparse tensor), gathered int8 rows dequantized, and a
    PAD before each fully-connected op / a SLICE after each gather for a
    tensor stored with ``padding`` zero columns."""
    sparse = rewrite.graph.tensors[index].sparsity is not None
    kernel = [u for u in uses if u[2] and kernel_reads]
    densified = [u for u in uses if u[2] and u not in kernel]
    lookups = [u for u in uses if not u[2]]
    for op, _, _ in kernel + densified if padding else ():
        rewrite.pad_input(op, padding)
    dense_copy = None
    if sparse and (densified or lookups):
        tensor = rewrite.graph.tensors[index]
        dense_copy = rewrite.read_through(index, Op.DENSIFY, b"/densified",
                                          tensor.type, tensor.quantization)
        _redirect(densified, dense_copy)
    source = index if dense_copy is None else dense_copy
    if weights == "int8":
        gathers = [u for u in lookups
                   if rewrite.builtin(u[0]) == Op.GATHER and u[1] == 0]
        for op, _, _ in gathers:
            rewrite.dequantize_after(op, source, padding)
        lookups = [u for u in lookups if u not in gathers]
        if lookups:   # another reader: one float copy of the table
            source = rewrite.read_through(source, Op.DEQUANTIZE,
                                          b"/dequantized", TensorType.FLOAT32,
                                          None)
    _redirect(lookups, source)
