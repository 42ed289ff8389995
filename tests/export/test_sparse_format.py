"""`export.sparse_format`, TFLite's sparsity format as the library writes
it: each layout's encoding of a 2-D weight and its numpy inverse, the
bytes it takes, the layout chosen (``fast``, ``auto``) and the int8 1 x 16
kernel's ledger limits.

The references: the weights themselves (numpy: a block kept where any of
its values is non-zero), the encoding's own index vectors and their
schema types (the bytes), and the schema's stated index widths. The
files these encodings make, run by the interpreters:
tests/export/test_sparse_storage.py."""
import numpy as np
import pytest

from support.sparse import ledger_row
from support.versions import IS_TF2, needs_schema
from tf1_awd_sparse.export import sparse_format

@needs_schema
@pytest.mark.parametrize("layout", ["csr", "1x4", "1x16"])
@pytest.mark.parametrize("cols", [32, 320])   # 1- and 2-byte indices
def test_encode_decodes_back_to_the_weights(layout, cols):
    schema, _ = sparse_format.schema_modules()
    rng = np.random.RandomState(cols)
    weights = rng.randn(700, cols).astype(np.float32)
    weights[rng.rand(700, cols) < 0.9] = 0
    weights[3] = 0                                 # an empty row
    sparsity, values = sparse_format.encode(schema, weights, layout)
    np.testing.assert_array_equal(
        sparse_format.dense_values(sparsity, values, weights.shape), weights)
    block = {"csr": 1, "1x4": 4, "1x16": 16}[layout]
    kept = np.any(weights.reshape(700, -1, block) != 0, axis=2)
    assert values.size == kept.sum() * block
    assert sparse_format.encoded_bytes(weights, layout, 4) == (
        4 * values.size + kept.sum() * (1 if cols // block <= 256 else 2)
        + 701 * (2 if kept.sum() < 65535 else 4))


@pytest.mark.parametrize("cols, blocks, message", [
    (4096, 256, r"row 0 holds 256 non-zero blocks of 16, more than the 255"),
    (4112, 16, r"4,112 columns exceed the 4,096 columns"),
])
def test_the_ledger_check_refuses_past_one_byte(cols, blocks, message):
    """`sparse_format.check_ledger`, the one check of the int8 1 x 16
    writers: names what it checks and the limit (no schema needed)."""
    fc = ledger_row(cols, blocks).T
    with pytest.raises(ValueError, match=r"^w: " + message):
        sparse_format.check_ledger(fc, "w")
    sparse_format.check_ledger(ledger_row(4096, 255).T, "w")
    with pytest.raises(ValueError, match=r"4,097 columns exceed"):
        sparse_format.check_ledger(np.zeros([1, 4097]), "w")


#: Bytes of each SparseIndexVector type's items.
_WIDTHS = {"Uint8Vector": 1, "Uint16Vector": 2, "Int32Vector": 4}


def _stored_bytes(schema, sparsity, values):
    """The bytes `encode`'s result holds: its values and its index
    vectors, each at its schema type's width."""
    names = {getattr(schema.SparseIndexVector, n): n for n in _WIDTHS}
    total = values.nbytes
    for dim in sparsity.dimMetadata:
        if dim.format == schema.DimensionType.SPARSE_CSR:
            total += _WIDTHS[names[dim.arraySegmentsType]] * len(
                dim.arraySegments.values)
            total += _WIDTHS[names[dim.arrayIndicesType]] * len(
                dim.arrayIndices.values)
    return total


@needs_schema
@pytest.mark.parametrize("rows, cols, zeros", [
    (8, 64, 0.5),          # 1-byte indices and segments
    (16, 16, 0.0),         # csr: 256 stored, segments to 256: 2 bytes
    (3, 256, 0.0),         # csr: indices to 255 in 1 byte
    (300, 16, 0.0),        # 4,800 stored: 2-byte segments
    (5000, 16, 0.0),       # 80,000 stored: 4-byte segments
    (4, 4096 * 16 + 16, 0.99)])  # 4,097 blocks of 16: 2-byte indices
@pytest.mark.parametrize("itemsize", [1, 4])
def test_encoded_bytes_are_the_encodings_own(rows, cols, zeros, itemsize):
    schema, _ = sparse_format.schema_modules()
    rng = np.random.RandomState(rows)
    weights = rng.randn(rows, cols).astype(np.float32)
    weights[rng.rand(rows, cols) < zeros] = 0
    if itemsize == 1:
        weights = np.round(weights * 40).clip(-127, 127).astype(np.int8)
    for layout in ("csr", "1x4", "1x16"):
        sparsity, values = sparse_format.encode(schema, weights, layout)
        assert values.dtype == weights.dtype
        assert sparse_format.encoded_bytes(weights, layout, itemsize) == \
            _stored_bytes(schema, sparsity, values), layout


@needs_schema
def test_auto_and_an_indivisible_layout_take_the_fewest_bytes_allowed():
    schema, _ = sparse_format.schema_modules()
    rng = np.random.RandomState(0)
    # Whole zero blocks of 16: 1 x 16 stores fewest; scattered zeros: CSR.
    blocky = np.repeat(rng.randn(8, 4) * (rng.rand(8, 4) < 0.3), 16, axis=1)
    scattered = rng.randn(8, 64) * (rng.rand(8, 64) < 0.1)
    for weights, fewest in ((blocky, "1x16"), (scattered, "csr")):
        sizes = {layout: _stored_bytes(schema, *sparse_format.encode(
            schema, weights, layout)) for layout in ("csr", "1x4", "1x16")}
        assert min(sizes, key=sizes.get) == fewest
        assert sparse_format.layout_for(weights, "auto", 4) == fewest
        # A layout given is kept where 16 divides the width.
        assert sparse_format.layout_for(weights, "1x4", 4) == "1x4"
    # 12 columns: no 1 x 16; the given 1x16 falls back to the fewest of
    # csr and 1x4.
    narrow = np.repeat(rng.randn(8, 3) * (rng.rand(8, 3) < 0.3), 4, axis=1)
    assert sparse_format.layout_for(narrow, "1x16", 4) == "1x4"
    assert sparse_format.layout_for(narrow[:, :10], "1x16", 4) == "csr"


@pytest.mark.parametrize("weights, cols, paddable, want", [
    ("int8", 32, False, ("int8", "1x16", 0)),
    ("int8", 20, True, ("int8", "1x16", 12)),     # padded to 32
    ("int8", 20, False, ("float", "1x4", 0)),
    ("int8", 18, False, ("float", "csr", 0)),
    ("float", 32, True, ("float", "1x4", 0)),     # float never int8
    ("float", 7, True, ("float", "csr", 0))])
def test_fast_layout_is_the_layout_a_kernel_reads(weights, cols, paddable,
                                                  want):
    got = sparse_format.fast_layout(weights, cols, paddable)
    assert got == want
    # Each is a (dtype, layout) pair a kernel reads, on a width (padded)
    # its blocks divide.
    assert (got[0] + ("32" if got[0] == "float" else ""), got[1]) in \
        sparse_format.KERNEL_LAYOUTS
    assert (cols + got[2]) % {"csr": 1, "1x4": 4, "1x16": 16}[got[1]] == 0


def test_available_is_whether_the_schema_module_imports():
    assert sparse_format.available() == IS_TF2
    if IS_TF2:
        schema, flatbuffers = sparse_format.schema_modules()
        assert hasattr(schema, "SparsityParametersT")
        assert hasattr(flatbuffers, "Builder")
        sparse_format.available_or_raise()
    else:
        with pytest.raises(sparse_format.SparseStorageError,
                           match="needs TensorFlow 2.x"):
            sparse_format.available_or_raise()
