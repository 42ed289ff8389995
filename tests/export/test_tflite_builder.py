"""`export.tflite_builder`, a TFLite model written op by op: its constants
(float32, symmetric int8, in 1 x 16 blocks), its ops (the product, the
gathered rows, the addition, the concatenation, the slice, the reshape)
and its metadata.

The references: the TFLite interpreter running the bytes against numpy
on the same values (the int8 weights dequantized from
`tflite_schema.symmetric_int8`, the hybrid product within one code of its
quantized input), and the bytes read back by the project's own reader
(`tflite_file`), which checks every offset first."""
import numpy as np
import pytest

from support.versions import invoke, needs_schema
from tf1_awd_sparse.export import sparse_format, tflite_builder as tfl
from tf1_awd_sparse.export import tflite_file
from tf1_awd_sparse.export.tflite_schema import TensorType, symmetric_int8

pytestmark = needs_schema

B, WIDTH, OUT, VOCAB = 2, 32, 4, 5


def _weights(rng, zeros):
    """A [OUT, WIDTH] weight and a [VOCAB, WIDTH] table, each with whole
    zero 1 x 16 blocks and scattered zeros (a fraction ``zeros``)."""
    out = []
    for rows in (OUT, VOCAB):
        value = rng.randn(rows, WIDTH).astype(np.float32)
        value[rng.rand(rows, WIDTH) < zeros] = 0
        value[0, :16] = 0                       # a whole zero block
        out.append(value)
    return out


def _model(weight, table, dtype, sparse):
    """x [B, WIDTH], ids [B, 1] -> product x @ weight^T (``weight`` in
    1 x 16 blocks with ``sparse``), the table's rows,
    [product | x + rows] and its slice [B, 8] from column 3 reshaped to
    [B, 2, 4]; with metadata."""
    schema, flatbuffers = sparse_format.schema_modules()
    build = tfl.Builder(schema, "a builder test")
    x = build.tensor("x", [B, WIDTH], TensorType.FLOAT32)
    ids = build.tensor("ids", [B, 1], TensorType.INT32)
    build.graph.inputs = [x, ids]
    product = tfl.product(build, x, build.weight("w", weight, dtype, sparse),
                          [B, OUT], "product")
    # (a GATHER reads a dense table: the fused files densify theirs)
    rows = tfl.gathered(build, build.weight("table", table, dtype), ids,
                        "table", B)
    total = tfl.add(build, x, rows, [B, WIDTH], "sum")
    joined = tfl.concatenated(build, [product, total], "joined")
    part = tfl.sliced(build, joined, [B, 8], "part", begin=[0, 3])
    shaped = tfl.reshape(build, part, [B, 2, 4], "shaped")
    build.graph.outputs = [product, rows, joined, shaped]
    build.metadata("about", u"one test \u2713")
    return build.finish(flatbuffers)


def _stored(value, dtype):
    """The weight the file computes with: float32, or int8 codes times
    their scale."""
    if dtype == TensorType.INT8:
        codes, scale = symmetric_int8(value)
        return codes * np.float64(scale)
    return value.astype(np.float64)


#: The weights a kernel reads: float32 dense, int8 dense or in 1 x 16
#: blocks (float blocks of 16 are no kernel's: `sparse_format`).
KERNELS = pytest.mark.parametrize("dtype, sparse", [
    (TensorType.FLOAT32, False), (TensorType.INT8, False),
    (TensorType.INT8, True)], ids=["float32", "int8", "int8-blocks"])


@KERNELS
def test_the_ops_compute_numpys_on_the_stored_weights(dtype, sparse):
    rng = np.random.RandomState(dtype + 2 * sparse)
    weight, table = _weights(rng, zeros=0.5)
    data = _model(weight, table, dtype, sparse)
    x = rng.randn(B, WIDTH).astype(np.float32)
    ids = np.array([[3], [0]], np.int32)
    got = invoke(data, {"x": x, "ids": ids})
    w, t = _stored(weight, dtype), _stored(table, dtype)
    want_product = x.astype(np.float64) @ w.T
    # Float: float32 sums; int8 (hybrid): x quantized per row to int8,
    # one code of x times the row's weights at most.
    atol = 1e-5 * np.abs(x).sum() * np.abs(w).max()
    if dtype == TensorType.INT8:
        atol = np.abs(x).max() / 127 * np.abs(w).sum(1).max()
    np.testing.assert_allclose(got["product"], want_product, rtol=0,
                               atol=atol)
    np.testing.assert_allclose(got["table/flat"], t[ids[:, 0]], rtol=1e-6,
                               atol=0)
    joined = np.concatenate([got["product"], x + got["table/flat"]], 1)
    np.testing.assert_allclose(got["joined"], joined, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["shaped"],
                                  got["joined"][:, 3:11].reshape(B, 2, 4))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "blocks"])
@pytest.mark.parametrize("dtype", [TensorType.FLOAT32, TensorType.INT8],
                         ids=["float32", "int8"])
def test_the_bytes_hold_the_weights_types_blocks_and_metadata(dtype,
                                                              sparse):
    weight, table = _weights(np.random.RandomState(4), zeros=0.5)
    buf = tflite_file.verify(_model(weight, table, dtype, sparse))
    model = tflite_file.root(buf)
    assert tflite_file.string(buf, model, "Model", "description") == \
        "a builder test"
    assert tflite_file.metadata(buf) == {
        "about": u"one test \u2713".encode("utf-8")}
    graph = tflite_file.tables(buf, model, "Model", "subgraphs")[0]
    tensors = {tflite_file.string(buf, t, "Tensor", "name"): t
               for t in tflite_file.tables(buf, graph, "SubGraph",
                                           "tensors")}
    buffers = tflite_file.tables(buf, model, "Model", "buffers")
    for name, value in (("w", weight), ("table", table)):
        tensor = tensors[name]
        assert tflite_file.scalar(buf, tensor, "Tensor", "type") == dtype
        assert list(tflite_file.ints(buf, tensor, "Tensor", "shape")) == \
            list(value.shape)
        stored = bytes(tflite_file.values(buf, buffers[tflite_file.scalar(
            buf, tensor, "Tensor", "buffer")], "Buffer", "data"))
        sparsity = tflite_file.subtable(buf, tensor, "Tensor", "sparsity")
        in_blocks = sparse and name == "w"
        assert (sparsity is not None) == in_blocks
        if dtype == TensorType.INT8:
            codes, scale = symmetric_int8(value)
            quant = tflite_file.subtable(buf, tensor, "Tensor",
                                         "quantization")
            assert tflite_file.values(buf, quant, "QuantizationParameters",
                                      "scale") == (np.float32(scale),)
            value = codes
        # Dense: every value; blocks: the non-zero 1 x 16 blocks' values.
        blocks = value.reshape(value.shape[0], -1, 16)
        kept = blocks[np.any(blocks != 0, axis=2)] if in_blocks else value
        assert stored == np.ascontiguousarray(kept).tobytes()


def test_an_all_zero_weight_keeps_one_zero_block():
    """TFLite reads a constant with no stored bytes as no constant."""
    schema, _ = sparse_format.schema_modules()
    sparsity, stored = tfl.blocks(schema, np.zeros([3, 32], np.float32))
    assert stored.shape == (16,) and not stored.any()
    back = sparse_format.dense_values(sparsity, stored, (3, 32))
    np.testing.assert_array_equal(back, np.zeros([3, 32]))
    x = np.random.RandomState(0).randn(B, WIDTH).astype(np.float32)
    table = np.random.RandomState(1).randn(VOCAB, WIDTH).astype(np.float32)
    got = invoke(_model(np.zeros([OUT, WIDTH], np.float32), table,
                        TensorType.INT8, True),
                 {"x": x, "ids": np.zeros([B, 1], np.int32)})
    np.testing.assert_array_equal(got["product"], np.zeros([B, OUT]))


def test_padded_rounds_up_to_whole_blocks_only_when_sparse():
    assert [tfl.padded(n, True) for n in (1, 16, 17, 32)] == [16, 16, 32, 32]
    assert [tfl.padded(n, False) for n in (1, 16, 17)] == [1, 16, 17]


def test_sliced_returns_the_source_unless_asked_to_copy_or_begin():
    schema, _ = sparse_format.schema_modules()
    build = tfl.Builder(schema, "slices")
    x = build.tensor("x", [2, 8], TensorType.FLOAT32)
    assert tfl.sliced(build, x, [2, 8], "same") == x
    assert build.graph.operators == []
    for kwargs in (dict(copy=True), dict(begin=[0, 0])):
        assert tfl.sliced(build, x, [2, 8], "copy", **kwargs) != x
    assert len(build.graph.operators) == 2
