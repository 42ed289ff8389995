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

The format (the schema module, the layouts and their encodings) is
:mod:`.sparse_format`'s, the rewrite :mod:`.sparse_rewrite`'s; this module
reads files, and keeps the names it had.

The rewrite needs TensorFlow 2.x's flatbuffer schema module and the
``flatbuffers`` package (TF 1.x has neither, and its interpreter cannot
read the result); :func:`sparse_tensors` reads any file with the standard
library only (`tf1_awd_sparse.export.tflite_file`, which verifies it
first), so TF 1.x can say why it cannot run one.
"""
import numpy as np

from tf1_awd_sparse.export import tflite_file
# The format and its encodings, in a module of their own, keep their names
# here: callers import them from this module.
from tf1_awd_sparse.export.sparse_format import (  # noqa: F401
    KERNEL_LAYOUTS, LAYOUTS, SparseStorageError, available,
    available_or_raise, dense_values, encode, encoded_bytes, schema_modules)
from tf1_awd_sparse.export.tflite_schema import (
    IDENTIFIER, Op, TensorType, operator_code, type_name)
from tf1_awd_sparse.export.sparse_rewrite import rewrite_weights

__all__ = ["store_sparse", "sparse_tensors", "stores_sparse",
           "constant_arrays", "describe"]


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
        ``awd_lm.inference.export.export_lm``'s or ``export_tflite``'s float
        file.
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
        weights) or non-finite ones; a weight the int8 1 x 16 kernel would
        read past its byte-wide ledger, in any layout argument that stores
        it so (more than 4,096 columns, or a row of more than 255 non-zero
        blocks of 16: `sparse_format.check_ledger`; TFLite computed wrong
        values without an error); TF 1.x (no schema module).
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
    schema, flatbuffers = schema_modules()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    if len(parsed.subgraphs) != 1:
        raise SparseStorageError("model has %d subgraphs; sparse storage "
                                 "rewrites one" % len(parsed.subgraphs))
    rewrite_weights(schema, parsed, weights, layout, min_zeros)
    builder = flatbuffers.Builder(1024)
    builder.Finish(parsed.Pack(builder), file_identifier=IDENTIFIER)
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
    schema, _ = schema_modules()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    dtypes = {TensorType.FLOAT32: np.float32, TensorType.UINT8: np.uint8,
              TensorType.INT8: np.int8}
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
    schema, _ = schema_modules()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    graph = parsed.subgraphs[0]
    readers = {}
    for op in graph.operators:
        builtin = operator_code(parsed, op)
        for position, index in enumerate(op.inputs):
            if builtin == Op.DENSIFY or (builtin == Op.FULLY_CONNECTED
                                          and position == 1):
                readers.setdefault(index, set()).add(
                    "densify" if builtin == Op.DENSIFY else "kernel")
    found = []
    for index, tensor in enumerate(graph.tensors):
        if tensor.sparsity is None:
            continue
        dims = tensor.sparsity.dimMetadata
        layout = "csr" if len(dims) == 2 else "1x%d" % dims[2].denseSize
        values = np.frombuffer(bytes(bytearray(
            parsed.buffers[tensor.buffer].data)), np.uint8)
        itemsize = 4 if tensor.type == TensorType.FLOAT32 else 1
        found.append({"name": tensor.name.decode(),
                      "shape": [int(d) for d in tensor.shape],
                      "dtype": type_name(tensor.type), "layout": layout,
                      "stored_values": int(values.size // itemsize),
                      "nnz": int(np.count_nonzero(values.view(
                          np.float32 if itemsize == 4 else np.int8))),
                      "bytes": _stored_bytes(tensor, values),
                      "read_by": sorted(readers.get(index, ()))})
    return found
