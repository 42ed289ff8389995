"""Writing a TFLite model op by op, without a converter: the flatbuffer
builder of `fused_lstm` (and `fused_low_rank`) and the few ops they share
(reshape, slice, a fully-connected product, an addition), float32
activations, weights float32 or symmetric per-tensor int8
(`tflite_schema.symmetric_int8`). Operator codes and tensor types are
`tflite_schema.Op`'s and `tflite_schema.TensorType`'s.
"""
import numpy as np

from tf1_awd_sparse.export import sparse_format
from tf1_awd_sparse.export.tflite_schema import (
    IDENTIFIER, SCHEMA_VERSION, Op, TensorType, opcode_index, symmetric_int8)

__all__ = ["BLOCK", "padded", "Builder", "blocks", "reshape", "sliced",
           "gathered", "product", "concatenated", "add"]

#: The width of the int8 sparse kernels' blocks.
BLOCK = 16


def padded(size, sparse):
    """``size`` rounded up to whole 16-wide blocks with ``sparse``."""
    return size + (-size % BLOCK if sparse else 0)


class Builder(object):
    """A one-subgraph TFLite model being written op by op (the flatbuffer
    schema's object API): tensors, constants (``weight``: float32 or
    symmetric int8, dense or in 1 x 16 blocks), operators, metadata;
    ``finish`` gives the file's bytes.

    Args:
      schema: TF 2.x's schema module (`sparse_format.schema_modules`).
      description: the model's description (how a reader knows its
        files)."""

    def __init__(self, schema, description):
        self.schema = schema
        self.model = schema.ModelT()
        self.model.version = SCHEMA_VERSION
        self.model.description = description
        self.model.buffers = [schema.BufferT()]   # buffer 0: no data
        self.model.operatorCodes = []
        self.graph = schema.SubGraphT()
        self.graph.tensors, self.graph.operators = [], []
        self.graph.inputs, self.graph.outputs = [], []
        self.model.subgraphs = [self.graph]

    def tensor(self, name, shape, dtype, data=None, scale=None,
               sparsity=None, variable=False):
        """Adds a tensor of type ``dtype`` (a `tflite_schema.TensorType`);
        ``data`` (numpy, already encoded) makes it a constant. Returns its
        index."""
        tensor = self.schema.TensorT()
        tensor.name = name.encode()
        tensor.shape = np.asarray(shape, np.int32)
        tensor.type = dtype
        tensor.isVariable = variable
        tensor.sparsity = sparsity
        tensor.buffer = 0
        if scale is not None:
            quantization = self.schema.QuantizationParametersT()
            quantization.scale, quantization.zeroPoint = [float(scale)], [0]
            tensor.quantization = quantization
        if data is not None:
            buffer = self.schema.BufferT()
            buffer.data = np.frombuffer(np.ascontiguousarray(data).tobytes(),
                                        np.uint8)
            self.model.buffers.append(buffer)
            tensor.buffer = len(self.model.buffers) - 1
        self.graph.tensors.append(tensor)
        return len(self.graph.tensors) - 1

    def weight(self, name, value, dtype, sparse=False):
        """A constant 2-D weight: float32, or with ``dtype`` int8 its
        `tflite_schema.symmetric_int8` codes, stored in 1 x 16 blocks with
        ``sparse``. Returns its index."""
        scale, shape = None, np.shape(value)
        if dtype == TensorType.INT8:
            value, scale = symmetric_int8(value)
        else:
            value = np.asarray(value, np.float32)
        sparsity = None
        if sparse:
            sparsity, value = blocks(self.schema, value)
        return self.tensor(name, shape, dtype, value, scale, sparsity)

    def op(self, builtin, inputs, outputs, options_type=0, options=None):
        """Appends an operator, ``builtin`` a `tflite_schema.Op` (run in the
        order added)."""
        operator = self.schema.OperatorT()
        operator.opcodeIndex = opcode_index(self.schema, self.model, builtin)
        operator.inputs = [int(i) for i in inputs]
        operator.outputs = [int(i) for i in outputs]
        operator.builtinOptionsType = options_type
        operator.builtinOptions = options
        self.graph.operators.append(operator)

    def metadata(self, name, text):
        """Adds a metadata entry ``name`` holding ``text`` (UTF-8)."""
        buffer = self.schema.BufferT()
        buffer.data = np.frombuffer(text.encode("utf-8"), np.uint8)
        self.model.buffers.append(buffer)
        entry = self.schema.MetadataT()
        entry.name = name.encode()
        entry.buffer = len(self.model.buffers) - 1
        self.model.metadata = (self.model.metadata or []) + [entry]

    def finish(self, flatbuffers):
        builder = flatbuffers.Builder(1024)
        builder.Finish(self.model.Pack(builder), file_identifier=IDENTIFIER)
        return bytes(builder.Output())


def blocks(schema, value):
    """``value`` in 1 x 16 blocks (`sparse_format.encode`); an all-zero
    matrix keeps one zero block (TFLite reads a constant with no stored
    bytes as no constant at all)."""
    if np.any(value):
        return sparse_format.encode(schema, value, "1x16")
    marker = np.zeros(value.shape, value.dtype)
    marker[0, 0] = 1
    sparsity, stored = sparse_format.encode(schema, marker, "1x16")
    return sparsity, np.zeros_like(stored)


def reshape(build, source, shape, name):
    """``source`` reshaped to ``shape`` (a new float tensor ``name``)."""
    target = build.tensor(name, shape, TensorType.FLOAT32)
    new_shape = build.tensor(name + "/shape", [len(shape)], TensorType.INT32,
                             np.asarray(shape, np.int32))
    options = build.schema.ReshapeOptionsT()
    options.newShape = [int(s) for s in shape]
    build.op(Op.RESHAPE, [source, new_shape], [target],
             build.schema.BuiltinOptions.ReshapeOptions, options)
    return target


def sliced(build, source, shape, name, copy=False, begin=None):
    """The ``shape`` of float ``source`` from ``begin`` (default: the
    leading one; a new tensor ``name``, e.g. the padding cut off), or
    ``source`` itself where it has that shape and no ``copy`` is asked for
    (an output of its own name)."""
    if not copy and begin is None and \
            list(build.graph.tensors[source].shape) == list(shape):
        return source
    target = build.tensor(name, shape, TensorType.FLOAT32)
    begin = build.tensor(name + "/begin", [len(shape)], TensorType.INT32,
                         np.asarray(begin or [0] * len(shape), np.int32))
    size = build.tensor(name + "/size", [len(shape)], TensorType.INT32,
                        np.asarray(shape, np.int32))
    build.op(Op.SLICE, [source, begin, size], [target],
             build.schema.BuiltinOptions.SliceOptions,
             build.schema.SliceOptionsT())
    return target


def gathered(build, source, ids, name, batch_size):
    """The rows ``ids`` (int32 ``[batch, 1]``) of the 2-D constant or
    tensor ``source`` as a new float tensor ``name + "/flat"`` ``[batch,
    width]``: a ``GATHER`` (and a ``DEQUANTIZE`` of int8 rows, on
    ``source``'s scale)."""
    tensor = build.graph.tensors[source]
    width = int(tensor.shape[-1])
    scale = tensor.quantization.scale[0] if tensor.quantization else None
    rows = build.tensor(name + "/rows", [batch_size, 1, width], tensor.type,
                        scale=scale)
    options = build.schema.GatherOptionsT()
    options.axis = 0
    build.op(Op.GATHER, [source, ids], [rows],
             build.schema.BuiltinOptions.GatherOptions, options)
    if tensor.type == TensorType.INT8:
        dequantized = build.tensor(name + "/dequantized",
                                   [batch_size, 1, width],
                                   TensorType.FLOAT32)
        build.op(Op.DEQUANTIZE, [rows], [dequantized],
                 build.schema.BuiltinOptions.DequantizeOptions,
                 build.schema.DequantizeOptionsT())
        rows = dequantized
    return reshape(build, rows, [batch_size, width], name + "/flat")


def product(build, x, weights, shape, name):
    """``x @ weights^T`` (a ``FULLY_CONNECTED`` op without bias; hybrid
    with int8 weights), a new float tensor ``name`` of ``shape``."""
    out = build.tensor(name, shape, TensorType.FLOAT32)
    options = build.schema.FullyConnectedOptionsT()
    options.asymmetricQuantizeInputs = False
    build.op(Op.FULLY_CONNECTED, [x, weights, -1], [out],
             build.schema.BuiltinOptions.FullyConnectedOptions, options)
    return out


def concatenated(build, parts, name):
    """The float tensors ``parts`` (one shape but the last axis) joined
    along their last axis, a new float tensor ``name``."""
    shapes = [list(build.graph.tensors[p].shape) for p in parts]
    shape = shapes[0][:-1] + [sum(s[-1] for s in shapes)]
    out = build.tensor(name, shape, TensorType.FLOAT32)
    options = build.schema.ConcatenationOptionsT()
    options.axis = len(shape) - 1
    build.op(Op.CONCATENATION, list(parts), [out],
             build.schema.BuiltinOptions.ConcatenationOptions, options)
    return out


def add(build, a, b, shape, name):
    """``a + b``, a new float tensor ``name`` of ``shape``."""
    out = build.tensor(name, shape, TensorType.FLOAT32)
    build.op(Op.ADD, [a, b], [out], build.schema.BuiltinOptions.AddOptions,
             build.schema.AddOptionsT())
    return out
