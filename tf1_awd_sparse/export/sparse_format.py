"""TFLite's sparsity format as `sparse_storage` writes and reads it: the
schema module the rewrite needs (TF 2.x's generated ``schema_py_generated``
and ``flatbuffers``: `schema_modules`, `available`), the stored layouts
(`LAYOUTS`, `KERNEL_LAYOUTS`),
and each layout's encoding of a 2-D weight (``SparsityParametersT``: a
traversal order, a block map and one ``DimensionMetadata`` per stored
dimension) and its numpy inverse (`encode`, `encoded_bytes`,
`dense_values`). The schema's codes and types are `tflite_schema`'s.
`sparse_storage` re-exports the public names it had.
"""
import numpy as np

from tf1_awd_sparse.base.errors import Error

__all__ = ["LAYOUTS", "KERNEL_LAYOUTS", "SparseStorageError", "available",
           "available_or_raise", "schema_modules", "encode", "encoded_bytes",
           "fast_layout", "layout_for", "dense_values", "LEDGER_MAX_COLUMNS",
           "LEDGER_MAX_BLOCKS", "check_ledger"]

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

#: The widest int8 1 x 16 sparse weight the hybrid kernels compute right,
#: and the most non-zero blocks one of its rows may hold. TFLite's hybrid
#: (int8 weights, float activations) sparse kernels -- FULLY_CONNECTED
#: (``fully_connected.cc``: ``PopulateLedgerData``) and the LSTM op's
#: sparse path, which runs the same 1 x 16 product -- copy the weight's
#: block indices into a "ledger" of uint8: per row, the count of non-zero
#: blocks in one byte, then each block's column index in one byte. A block
#: index past 255 (a weight wider than 4,096 columns) or a row of 256 or
#: more non-zero blocks does not fit; ``PopulateLedgerData`` returns an
#: error that the kernel ignores, and TF 2.15's and LiteRT's interpreters
#: compute wrong values with no error (measured: a 4 x 4,096 weight of 256
#: non-zero blocks a row, max |error| 136 against outputs of at most 141;
#: 16 blocks a row at indices 240-255 of a 4,112-wide weight, 42 against
#: 21). Only that layout has the ledger: the float kernels read ``csr``
#: and ``1x4`` from the stored int32-widened indices, and every other
#: (dtype, layout) pair is read through DENSIFY, which has no byte-wide
#: index (`KERNEL_LAYOUTS`); `check_ledger` is for int8 ``1x16`` only.
LEDGER_MAX_COLUMNS = 256 * 16
LEDGER_MAX_BLOCKS = 255


class SparseStorageError(ValueError, Error):
    """A file, weight type or layout that TFLite cannot store or run
    sparse (the message says which and why), or a TensorFlow without the
    flatbuffer schema module the rewrite needs."""


def available():
    """Whether this TensorFlow can write (and run) sparse files."""
    try:
        schema_modules()
    except SparseStorageError:
        return False
    return True


def available_or_raise():
    """Raises `SparseStorageError` (saying why) where `available` is
    False."""
    schema_modules()


def schema_modules():
    """``(schema_py_generated, flatbuffers)``: TF 2.x's generated TFLite
    schema module and the ``flatbuffers`` package.

    Raises:
      SparseStorageError: TF 1.x, which has neither (the message says what
        to do instead).
    """
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


def check_ledger(weights, what):
    """Raises unless the 2-D ``[rows, cols]`` ``weights``, stored int8 in
    1 x 16 blocks and read by a hybrid sparse kernel, fit the kernel's
    byte-wide ledger (`LEDGER_MAX_COLUMNS`, `LEDGER_MAX_BLOCKS`): at most
    4,096 columns, at most 255 non-zero blocks of 16 in any row. The one
    check of every writer of such weights (`fused_lstm.fused_lm`,
    `sparse_storage.store_sparse`); other dtypes and layouts need none.

    Args:
      weights: the values to be stored (a block is kept where any of its
        16 values is non-zero; int8 codes or the float values with the
        same zeros).
      what: the argument (or tensor) the message names.

    Raises:
      SparseStorageError (a ValueError): a weight past either limit.
    """
    weights = np.asarray(weights)
    rows, cols = weights.shape
    if cols > LEDGER_MAX_COLUMNS:
        raise SparseStorageError(
            "%s: %s columns exceed the %s columns the int8 1 x 16 sparse "
            "kernel can index: it keeps each block's column index in one "
            "byte (blocks 0-255), and computes wrong values past it"
            % (what, format(cols, ","), format(LEDGER_MAX_COLUMNS, ",")))
    blocks = -(-cols // 16)
    padded = np.pad(weights, [[0, 0], [0, blocks * 16 - cols]], "constant")
    kept = np.any(padded.reshape(rows, blocks, 16) != 0, axis=2).sum(axis=1)
    if rows and kept.max() > LEDGER_MAX_BLOCKS:
        row = int(np.argmax(kept))
        raise SparseStorageError(
            "%s: row %d holds %d non-zero blocks of 16, more than the %d "
            "the int8 1 x 16 sparse kernel can count: it keeps each row's "
            "count of blocks in one byte, and computes wrong values past "
            "it" % (what, row, int(kept[row]), LEDGER_MAX_BLOCKS))


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


def fast_layout(weights, cols, paddable):
    """``(weights, layout, padding)`` of ``layout="fast"`` for a tensor
    whose input dimension is ``cols``: int8 in 1 x 16 blocks (the hybrid
    sparse kernel) where 16 divides it, or where it does not but the
    tensor can be padded (``paddable``: `sparse_rewrite`'s check) with
    ``padding`` zero columns to the next multiple of 16; else float in
    1 x 4 blocks (the float block kernel) where 4 divides it, else float
    CSR: a kernel reads each."""
    if weights == "int8" and (cols % 16 == 0 or paddable):
        return "int8", "1x16", -cols % 16
    return "float", "1x4" if cols % 4 == 0 else "csr", 0


def layout_for(weights, layout, itemsize):
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

