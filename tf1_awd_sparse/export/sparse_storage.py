"""Sparse storage of a ``.tflite`` file's pruned weights, in the sparsity
format of TFLite's flatbuffer schema (``SparsityParameters``: a traversal
order, a block map and one ``DimensionMetadata`` per stored dimension).

:func:`store_sparse` rewrites a float TFLite file: every constant weight of
a ``FULLY_CONNECTED`` op with enough zeros is stored as its non-zero values
plus CSR indices (``csr``) or as 1 x k blocks (``1x4``, ``1x16``), and, with
``weights="int8"``, as symmetric int8 (per tensor, zero point 0: TFLite's
"hybrid" kernels, float activations). A tensor that some consumer cannot
read sparse (the tied embedding's lookup, or a format the fully-connected
kernel computes wrongly) is read through a ``DENSIFY`` op, which TFLite
runs once, when the model is first invoked: the file keeps the small
encoding, the runtime holds a dense copy. An int8 table's lookup gathers
int8 rows and dequantizes only those.

What TFLite runs, measured with LiteRT 2.3 and TF 2.15 / 2.21's
``tf.lite`` (docs/sparse_tflite.md has the table): the float
fully-connected kernel reads ``csr`` and ``1x4``; the hybrid int8 kernel
reads only ``1x16`` and silently computes wrong results from ``csr`` and
``1x4``; ``DENSIFY`` takes float32 and int8, not uint8; and the XNNPACK
delegate, on by default, computes NaN from sparse float weights and
refuses or miscomputes sparse int8 ones, so :func:`stores_sparse` files are
opened without it (`tf1_awd_sparse.export.runner.open_interpreter`).

The rewrite needs TensorFlow 2.x's flatbuffer schema module and the
``flatbuffers`` package (TF 1.x has neither, and its interpreter cannot
read the result); :func:`sparse_tensors` reads any file with the standard
library only (`tf1_awd_sparse.export.tflite_file`, which verifies it
first), so TF 1.x can say why it cannot run one.
"""
import numpy as np

from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.export import tflite_file

__all__ = ["LAYOUTS", "KERNEL_LAYOUTS", "SparseStorageError", "store_sparse",
           "sparse_tensors", "stores_sparse", "encode", "dense_values",
           "constant_arrays", "encoded_bytes", "describe", "available",
           "available_or_raise"]

#: Stored layouts: ``"auto"`` (per tensor, the smallest encoding),
#: ``"fast"`` (per tensor, the layout a sparse kernel reads: int8 1 x 16,
#: padded to a multiple of 16 where needed, else float 1 x 4, else CSR),
#: unstructured CSR, or 1 x k blocks along the input dimension.
LAYOUTS = ("auto", "fast", "csr", "1x4", "1x16")

#: (weight dtype, layout) pairs that TFLite's fully-connected kernels read
#: sparse and compute right; any other stored layout is read through
#: DENSIFY.
KERNEL_LAYOUTS = {("float32", "csr"), ("float32", "1x4"),
                  ("int8", "1x16")}

_BLOCK = {"csr": 1, "1x4": 4, "1x16": 16}

# Builtin operator codes and tensor types of the TFLite schema.
_FULLY_CONNECTED, _DENSIFY, _DEQUANTIZE, _GATHER = 9, 124, 6, 36
_PAD, _SLICE = 34, 65
_FLOAT32, _INT32, _UINT8, _INT8 = 0, 2, 3, 9


class SparseStorageError(ValueError, Error):
    """A file, weight type or layout that TFLite cannot store or run
    sparse (the message says which and why), or a TensorFlow without the
    flatbuffer schema module the rewrite needs."""


def available():
    """Whether this TensorFlow can write (and run) sparse files."""
    try:
        _schema()
    except SparseStorageError:
        return False
    return True


def available_or_raise():
    """Raises `SparseStorageError` (saying why) where `available` is
    False."""
    _schema()


def _schema():
    """TF 2.x's generated TFLite schema module and ``flatbuffers``."""
    try:
        import flatbuffers
        from tensorflow.lite.python import schema_py_generated
    except ImportError:
        raise SparseStorageError(
            "sparse TFLite storage needs TensorFlow 2.x (its "
            "tensorflow.lite.python.schema_py_generated module and the "
            "flatbuffers package); TF 1.x's interpreter cannot read sparse "
            "tensors either: export with storage='dense' here, or run the "
            "export on TF 2.x")
    return schema_py_generated, flatbuffers


# --- reading, standard library only --------------------------------------

def sparse_tensors(model):
    """Names of the tensors a TFLite model stores sparse.

    Reads only the flatbuffer's tables (Model.subgraphs -> SubGraph.tensors
    -> Tensor.sparsity) with `tflite_file`'s reader, after its `verify`:
    it works on every TensorFlow version, including those whose interpreter
    cannot run such a file.

    Args:
      model: the file's bytes, or a path to it.

    Returns:
      a list of tensor names, in the file's order (empty for a dense file).

    Raises:
      tflite_file.TFLiteFileError: bytes that are not a whole TFLite
        flatbuffer (no ``TFL3`` identifier, truncated or damaged).
    """
    buf = tflite_file.verify(model)
    names = []
    for graph in tflite_file.tables(buf, tflite_file.root(buf), "Model",
                                    "subgraphs"):
        for tensor in tflite_file.tables(buf, graph, "SubGraph", "tensors"):
            if tflite_file.field(buf, tensor, "Tensor",
                                 "sparsity") is not None:
                names.append(tflite_file.string(buf, tensor, "Tensor",
                                                "name"))
    return names


def stores_sparse(path):
    """Whether the ``.tflite`` file at ``path`` stores a tensor sparse.

    Raises:
      tflite_file.TFLiteFileError: see `sparse_tensors`.
    """
    return bool(sparse_tensors(path))


# --- the encodings ---------------------------------------------------------

def _index_vector(schema, values, limit):
    """The smallest SparseIndexVector type holding ``values`` < limit."""
    if limit <= 1 << 8:
        vector, kind = schema.Uint8VectorT(), schema.SparseIndexVector.Uint8Vector
    elif limit <= 1 << 16:
        vector, kind = (schema.Uint16VectorT(),
                        schema.SparseIndexVector.Uint16Vector)
    else:
        vector, kind = (schema.Int32VectorT(),
                        schema.SparseIndexVector.Int32Vector)
    vector.values = [int(v) for v in values]
    return vector, kind


def _dimension(schema, dense_size=None, segments=None, indices=None,
               num_indices=0):
    meta = schema.DimensionMetadataT()
    if segments is None:
        meta.format = schema.DimensionType.DENSE
        meta.denseSize = int(dense_size)
        return meta
    meta.format = schema.DimensionType.SPARSE_CSR
    # Segments count stored entries (any size); indices are < num_indices.
    meta.arraySegments, meta.arraySegmentsType = _index_vector(
        schema, segments, int(segments[-1]) + 1)
    meta.arrayIndices, meta.arrayIndicesType = _index_vector(
        schema, indices, num_indices)
    return meta


def encode(schema, weights, layout):
    """``(SparsityParametersT, stored values)`` of a 2-D ``[rows, cols]``
    array in ``layout`` (``csr`` or ``1xk``): rows dense, then CSR over the
    columns (or over the column blocks, a block's k values dense)."""
    rows, cols = weights.shape
    block = _BLOCK[layout]
    blocks = weights.reshape(rows, cols // block, block)
    kept = np.any(blocks != 0, axis=2)
    segments = np.concatenate([[0], np.cumsum(kept.sum(axis=1))])
    indices = np.nonzero(kept)[1]
    sparsity = schema.SparsityParametersT()
    dims = [_dimension(schema, dense_size=rows),
            _dimension(schema, segments=segments, indices=indices,
                       num_indices=cols // block)]
    if block == 1:
        sparsity.traversalOrder, sparsity.blockMap = [0, 1], []
    else:
        sparsity.traversalOrder, sparsity.blockMap = [0, 1, 2], [1]
        dims.append(_dimension(schema, dense_size=block))
    sparsity.dimMetadata = dims
    return sparsity, blocks[kept].reshape(-1)


def encoded_bytes(weights, layout, itemsize):
    """Bytes of ``weights`` stored in ``layout``: the values plus the
    indices at the index widths `encode` chooses (what the file holds,
    without the flatbuffer's few bytes of tables)."""
    rows, cols = weights.shape
    block = _BLOCK[layout]
    kept = np.any(weights.reshape(rows, cols // block, block) != 0, axis=2)
    stored = int(kept.sum())

    def width(limit):
        return 1 if limit <= 1 << 8 else 2 if limit <= 1 << 16 else 4
    return (stored * block * itemsize + stored * width(cols // block)
            + (rows + 1) * width(stored + 1))


def _fast_layout(weights, cols, paddable):
    """``(weights, layout, padding)`` of ``layout="fast"`` for a tensor
    whose input dimension is ``cols``: int8 in 1 x 16 blocks (the hybrid
    sparse kernel) where 16 divides it, or where it does not but the
    tensor can be padded (``paddable``: `_paddable`) with ``padding``
    zero columns to the next multiple of 16; else float in 1 x 4 blocks
    (the float block kernel) where 4 divides it, else float CSR: a kernel
    reads each."""
    if weights == "int8" and (cols % 16 == 0 or paddable):
        return "int8", "1x16", -cols % 16
    return "float", "1x4" if cols % 4 == 0 else "csr", 0


def _layout_for(weights, layout, itemsize):
    """The layout to store ``weights`` in: ``layout`` where the input
    dimension divides into its blocks, else (and for ``"auto"``) the one
    of fewest bytes among those the shape allows."""
    cols = weights.shape[1]
    if layout != "auto" and cols % _BLOCK[layout] == 0:
        return layout
    allowed = [name for name in ("csr", "1x4", "1x16")
               if cols % _BLOCK[name] == 0]
    return min(allowed, key=lambda name: encoded_bytes(weights, name,
                                                       itemsize))


def dense_values(sparsity, values, shape):
    """The dense ``shape`` array of stored ``values`` and their
    ``sparsity`` (a ``SparsityParametersT`` of :func:`encode`'s layouts):
    the numpy inverse, for reading a file back."""
    rows, cols = shape
    dims = sparsity.dimMetadata
    block = dims[2].denseSize if len(dims) == 3 else 1
    segments = np.asarray(dims[1].arraySegments.values, np.int64)
    indices = np.asarray(dims[1].arrayIndices.values, np.int64)
    dense = np.zeros([rows, cols // block, block], values.dtype)
    row_of = np.repeat(np.arange(rows), np.diff(segments))
    dense[row_of, indices] = np.asarray(values).reshape(-1, block)
    return dense.reshape(rows, cols)


# --- the rewrite -----------------------------------------------------------

def _opcode(schema, model, builtin):
    """Index of ``builtin``'s operator code in ``model``, added if new."""
    for index, code in enumerate(model.operatorCodes):
        if max(code.builtinCode, code.deprecatedBuiltinCode) == builtin:
            return index
    code = schema.OperatorCodeT()
    code.builtinCode = builtin
    code.deprecatedBuiltinCode = min(builtin, 127)
    code.version = 1
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def _weight_uses(model, graph):
    """{tensor index: [(operator, input position, is_fc_weights)]} of the
    constant inputs of FULLY_CONNECTED ops' weights, over all their uses."""
    uses, fc_weights = {}, set()
    for op in graph.operators:
        code = model.operatorCodes[op.opcodeIndex]
        if max(code.builtinCode, code.deprecatedBuiltinCode) == \
                _FULLY_CONNECTED and len(op.inputs) > 1:
            fc_weights.add(op.inputs[1])
    for op in graph.operators:
        code = model.operatorCodes[op.opcodeIndex]
        is_fc = max(code.builtinCode,
                    code.deprecatedBuiltinCode) == _FULLY_CONNECTED
        for position, index in enumerate(op.inputs):
            if index in fc_weights:
                uses.setdefault(index, []).append(
                    (op, position, is_fc and position == 1))
    return {index: found for index, found in uses.items()
            if model.buffers[graph.tensors[index].buffer].data is not None}


def _check_args(weights, layout, min_zeros):
    if weights not in ("float", "int8"):
        raise SparseStorageError("weights must be 'float' or 'int8', got %r"
                                 % (weights,))
    if layout not in LAYOUTS:
        raise SparseStorageError("layout must be one of %s, got %r"
                                 % (", ".join(LAYOUTS), layout))
    if min_zeros is not None and (isinstance(min_zeros, bool) or not
                                  isinstance(min_zeros, (int, float))
                                  or not 0 <= min_zeros <= 1):
        raise SparseStorageError("min_zeros must be None or a fraction in "
                                 "[0, 1], got %r" % (min_zeros,))


def _type_name(tensor_type):
    return {_FLOAT32: "float32", _UINT8: "uint8", _INT8: "int8"}.get(
        tensor_type, "type %d" % tensor_type)


class _Rewrite(object):
    """One model's rewrite: adds tensors and operators (to run first)."""

    def __init__(self, schema, model):
        self.schema, self.model = schema, model
        self.graph = model.subgraphs[0]
        self.new_ops = []        # run first (their inputs are constants)
        self.before = {}         # id(op) -> ops to run right before it
        self.after = {}          # id(op) -> ops to run right after it

    def builtin(self, op):
        code = self.model.operatorCodes[op.opcodeIndex]
        return max(code.builtinCode, code.deprecatedBuiltinCode)

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
        op.opcodeIndex = _opcode(self.schema, self.model, builtin)
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
        constant = self.tensor([rank, 2], _INT32,
                               source.name + b"/padding", data=paddings)
        padded = self.tensor(shape, source.type, source.name + b"/padded",
                             source.quantization)
        self.before.setdefault(id(fc), []).append(
            self.operator(_PAD, [fc.inputs[0], constant], [padded]))
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
        rows = self.tensor(shape, _INT8, name + b"/int8", quantization)
        ops = []
        if padding:
            wide = self.tensor(shape[:-1] + [shape[-1] + padding], _INT8,
                               name + b"/int8_padded", quantization)
            begin = self.tensor([len(shape)], _INT32, name + b"/begin",
                                data=np.zeros(len(shape), np.int32))
            size = self.tensor([len(shape)], _INT32, name + b"/size",
                               data=np.array([-1] * (len(shape) - 1)
                                             + [shape[-1]], np.int32))
            ops.append(self.operator(_SLICE, [wide, begin, size], [rows]))
            gather.outputs = [wide]
        else:
            gather.outputs = [rows]
        gather.inputs = [table] + list(gather.inputs)[1:]
        ops.append(self.operator(_DEQUANTIZE, [rows], [output]))
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
        elif not (rewrite.builtin(op) == _GATHER and position == 0):
            return False
    return True


def _redirect(uses, source):
    for op, position, _ in uses:
        op.inputs = list(op.inputs)
        op.inputs[position] = source


def _as_int8(schema, tensor, values):
    """Symmetric per-tensor int8 of float ``values`` (zero point 0, scale
    max|w| / 127): the weight format of TFLite's hybrid kernels."""
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    quantization = schema.QuantizationParametersT()
    quantization.scale, quantization.zeroPoint = [scale], [0]
    tensor.type, tensor.quantization = _INT8, quantization
    return np.clip(np.round(values / scale), -127, 127).astype(np.int8)


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
    if tensor.type != _FLOAT32:
        raise SparseStorageError(
            "tensor %r is %s, not float32: sparse storage rewrites float "
            "files (TFLite has no sparse uint8 kernel and its DENSIFY op "
            "takes no uint8): export float, then store it here as float or "
            "weights='int8'" % (tensor.name.decode(), _type_name(tensor.type)))
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
        weights, layout, padding = _fast_layout(
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
    chosen = _layout_for(value, layout, value.itemsize) if sparse \
        else "dense"
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
        dense_copy = rewrite.read_through(index, _DENSIFY, b"/densified",
                                          tensor.type, tensor.quantization)
        _redirect(densified, dense_copy)
    source = index if dense_copy is None else dense_copy
    if weights == "int8":
        gathers = [u for u in lookups
                   if rewrite.builtin(u[0]) == _GATHER and u[1] == 0]
        for op, _, _ in gathers:
            rewrite.dequantize_after(op, source, padding)
        lookups = [u for u in lookups if u not in gathers]
        if lookups:   # another reader: one float copy of the table
            source = rewrite.read_through(source, _DEQUANTIZE,
                                          b"/dequantized", _FLOAT32, None)
    _redirect(lookups, source)


def _stored_bytes(tensor, values):
    """The values' bytes plus the sparse indices' (at their widths)."""
    total = int(values.nbytes)
    if tensor.sparsity is None:
        return total
    for meta in tensor.sparsity.dimMetadata:
        for vector in (meta.arraySegments, meta.arrayIndices):
            if vector is not None:
                width = {"Uint8VectorT": 1, "Uint16VectorT": 2}.get(
                    type(vector).__name__, 4)
                total += width * len(vector.values)
    return total


def store_sparse(model, weights="float", layout="auto", min_zeros=0.5):
    """Rewrites a float TFLite model so that its pruned fully-connected
    weights are stored sparse (and, with ``weights="int8"``, every
    fully-connected weight as symmetric int8).

    Args:
      model: the bytes of a float ``.tflite`` file (one subgraph), e.g.
        ``awd_lm.export.export_lm``'s or ``export_tflite``'s float file.
      weights: ``"float"`` (float32 values) or ``"int8"`` (symmetric
        per-tensor int8, zero point 0: TFLite's hybrid kernels, float
        activations; lookups of such a table read it through DEQUANTIZE).
      layout: ``"auto"`` (per tensor, the layout of fewest bytes among
        those its input dimension allows), ``"fast"`` (per sparse tensor,
        one a kernel reads: int8 1 x 16, the input dimension padded with
        zero columns to a multiple of 16 where 16 does not divide it (a
        PAD before each fully-connected op that reads it, a SLICE after
        each lookup of its rows); where it cannot be padded (another
        reader), float 1 x 4, else float CSR: such a tensor stays float in
        an int8 file), ``"csr"``, ``"1x4"`` or
        ``"1x16"`` (1 x k blocks along the input dimension, for each tensor
        whose input dimension k divides; the others take ``"auto"``'s).
        A layout the fully-connected kernel does not compute right
        (`KERNEL_LAYOUTS`) is read through DENSIFY.
      min_zeros: a weight is stored sparse when at least this fraction of
        it is zero (and some of it is); None stores none sparse (with
        ``weights="int8"``: the dense hybrid file).

    Returns:
      ``(new_bytes, report)``: the rewritten file and `describe` of it
      (one dict per tensor stored sparse).

    Raises:
      SparseStorageError: bad arguments (named); a model that has several
        subgraphs, already stores a tensor sparse, or has non-float32
        fully-connected weights (a uint8 file: TFLite runs no sparse uint8
        weights) or non-finite ones; TF 1.x (no schema module).
      tflite_file.TFLiteFileError: bytes that are not a whole TFLite
        flatbuffer (`tflite_file.verify`).

    The operator codes keep their versions: the file runs on the runtimes
    measured here (docs/sparse_tflite.md), which register every version;
    a runtime that checks versions against its own may not know that a
    fully-connected op reads sparse weights.
    """
    _check_args(weights, layout, min_zeros)
    if sparse_tensors(model):
        raise SparseStorageError("model already stores tensors sparse: "
                                 "rewrite the dense export")
    schema, flatbuffers = _schema()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    if len(parsed.subgraphs) != 1:
        raise SparseStorageError("model has %d subgraphs; sparse storage "
                                 "rewrites one" % len(parsed.subgraphs))
    rewrite = _Rewrite(schema, parsed)
    for index, uses in sorted(_weight_uses(parsed, rewrite.graph).items()):
        _store_tensor(rewrite, index, uses, weights, layout, min_zeros)
    rewrite.graph.operators = rewrite.operators()
    builder = flatbuffers.Builder(1024)
    builder.Finish(parsed.Pack(builder), file_identifier=b"TFL3")
    new_bytes = bytes(builder.Output())
    return new_bytes, describe(new_bytes)


def constant_arrays(model):
    """The dense value of every float32, uint8 and int8 constant tensor of
    a TFLite model's (first) subgraph, sparse ones decoded
    (`dense_values`), in the file's order.

    Args:
      model: the file's bytes, or a path to it.

    Returns:
      a list of ``(name, array, zero_point)``: the array in the stored
      dtype and the dense shape; ``zero_point`` the tensor's first (0 if it
      has none).

    Raises:
      SparseStorageError: TF 1.x (no schema module).
      tflite_file.TFLiteFileError: not a whole TFLite flatbuffer.
    """
    model = tflite_file.verify(model)
    schema, _ = _schema()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    dtypes = {_FLOAT32: np.float32, _UINT8: np.uint8, _INT8: np.int8}
    found = []
    for tensor in parsed.subgraphs[0].tensors:
        data = parsed.buffers[tensor.buffer].data
        if data is None or tensor.type not in dtypes:
            continue
        values = np.frombuffer(bytes(bytearray(data)), dtypes[tensor.type])
        if tensor.sparsity is not None:
            values = dense_values(tensor.sparsity, values, tensor.shape)
        else:
            values = values.reshape(tensor.shape)
        quantization = tensor.quantization
        zero_point = int(quantization.zeroPoint[0]) if quantization is not \
            None and quantization.zeroPoint is not None and \
            len(quantization.zeroPoint) else 0
        found.append((tensor.name.decode(), values, zero_point))
    return found


def describe(model):
    """What a TFLite model stores sparse, read from the file: one dict per
    sparse tensor (``name``, ``shape``, ``dtype``, ``layout`` (``csr`` or
    ``1xk``), ``stored_values``, ``nnz``, ``bytes`` (values plus indices)
    and ``read_by``: ``"kernel"`` where a fully-connected op reads it as
    stored, ``"densify"`` where a DENSIFY op makes the dense copy that
    other readers take), in the file's order; empty for a dense file (on
    every TensorFlow).

    Raises:
      SparseStorageError: a sparse file on TF 1.x (no schema module).
      tflite_file.TFLiteFileError: not a whole TFLite flatbuffer.
    """
    model = tflite_file.model_bytes(model)
    if not sparse_tensors(model):
        return []
    schema, _ = _schema()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    graph = parsed.subgraphs[0]
    readers = {}
    for op in graph.operators:
        code = parsed.operatorCodes[op.opcodeIndex]
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        for position, index in enumerate(op.inputs):
            if builtin == _DENSIFY or (builtin == _FULLY_CONNECTED
                                       and position == 1):
                readers.setdefault(index, set()).add(
                    "densify" if builtin == _DENSIFY else "kernel")
    found = []
    for index, tensor in enumerate(graph.tensors):
        if tensor.sparsity is None:
            continue
        dims = tensor.sparsity.dimMetadata
        layout = "csr" if len(dims) == 2 else "1x%d" % dims[2].denseSize
        values = np.frombuffer(bytes(bytearray(
            parsed.buffers[tensor.buffer].data)), np.uint8)
        itemsize = 4 if tensor.type == _FLOAT32 else 1
        found.append({"name": tensor.name.decode(),
                      "shape": [int(d) for d in tensor.shape],
                      "dtype": _type_name(tensor.type), "layout": layout,
                      "stored_values": int(values.size // itemsize),
                      "nnz": int(np.count_nonzero(values.view(
                          np.float32 if itemsize == 4 else np.int8))),
                      "bytes": _stored_bytes(tensor, values),
                      "read_by": sorted(readers.get(index, ()))})
    return found
