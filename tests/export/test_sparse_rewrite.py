"""`export.sparse_rewrite.rewrite_weights`, the in-place rewrite behind
sparse storage, on the schema's object API: which fully-connected weights
it stores sparse (``min_zeros``), in which layout, every one int8 with
``weights="int8"``, and that the
rewritten model computes the dense one's products (a PAD before a weight
padded to whole 1 x 16 blocks included).

The references: numpy's products of the weights (float32's rounding, or
the hybrid int8 kernel's one code of the input on
`tflite_schema.symmetric_int8`'s weights) through the TFLite interpreter,
and each rewritten weight decoded back by `sparse_format.dense_values`.
The public call and the language model's files:
tests/export/test_sparse_storage.py."""
import numpy as np
import pytest

from support.sparse import matmuls_file
from support.tolerances import matmul_atol
from support.versions import invoke, needs_schema
from tf1_awd_sparse.export import sparse_format, sparse_rewrite
from tf1_awd_sparse.export.tflite_file import IDENTIFIER
from tf1_awd_sparse.export.tflite_schema import TensorType, symmetric_int8

pytestmark = needs_schema


def _weights():
    """[in, out] matmul weights: 80 % zeros 32 wide, 80 % zeros 20 wide
    (16 does not divide it), 30 % zeros."""
    rng = np.random.RandomState(0)
    out = []
    for rows, zeros in ((32, 0.8), (20, 0.8), (32, 0.3)):
        w = rng.randn(rows, 8).astype(np.float32)
        w[rng.rand(rows, 8) < zeros] = 0
        out.append(w)
    return out


def _rewritten(weights, kind, layout, min_zeros):
    """The model of `matmuls_file` rewritten: (its bytes, the ModelT, the
    fully-connected weights' tensors in the order of the weights)."""
    schema, flatbuffers = sparse_format.schema_modules()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(
        matmuls_file(*weights), 0))
    graph = model.subgraphs[0]
    # The weights' tensors (a reader may get a DENSIFY copy instead).
    stored = [op.inputs[1] for op in graph.operators if len(op.inputs) == 3]
    sparse_rewrite.rewrite_weights(schema, model, kind, layout, min_zeros)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=IDENTIFIER)
    return bytes(builder.Output()), model, [graph.tensors[i] for i in stored]


@pytest.mark.parametrize("kind, layout", [
    ("float", "csr"), ("float", "1x4"), ("int8", "1x16"), ("int8", "fast"),
    ("float", "auto")])
@pytest.mark.parametrize("min_zeros", [0.5, 0.9])
def test_the_rewritten_file_computes_the_dense_products(kind, layout,
                                                        min_zeros):
    weights = _weights()
    data, model, tensors = _rewritten(weights, kind, layout, min_zeros)
    rng = np.random.RandomState(1)
    feeds = {"x%d" % i: rng.randn(1, w.shape[0]).astype(np.float32)
             for i, w in enumerate(weights)}
    got = invoke(data, feeds)
    stored_sparse = []
    for i, w in enumerate(weights):
        x = feeds["x%d" % i].astype(np.float64)
        zeros = np.mean(w == 0)
        sparse = zeros >= min_zeros
        stored_sparse.append(sparse)
        if kind == "int8":      # every weight int8, sparse or not
            codes, scale = symmetric_int8(w)
            want = x @ (codes * np.float64(scale))
            atol = np.abs(x).max() / 127 * np.abs(codes * scale).sum(0).max()
        else:
            want, atol = x @ w, matmul_atol(x, w)
        np.testing.assert_allclose(got["y%d" % i], want, rtol=0,
                                   atol=atol + 1e-6)
    # The weights stored sparse are those with enough zeros, each decoding
    # back to its values (padded to whole blocks where 16 does not divide).
    assert [t.sparsity is not None for t in tensors] == stored_sparse
    for w, tensor in zip(weights, tensors):
        assert tensor.type == (TensorType.INT8 if kind == "int8"
                               else TensorType.FLOAT32)
        if tensor.sparsity is None:
            continue
        dtype = np.int8 if tensor.type == TensorType.INT8 else np.float32
        values = np.frombuffer(bytes(bytearray(
            model.buffers[tensor.buffer].data)), dtype)
        back = sparse_format.dense_values(tensor.sparsity, values,
                                          tensor.shape)
        fc = w.T
        if dtype == np.int8:
            fc = symmetric_int8(w.T)[0]
        np.testing.assert_array_equal(back[:, :fc.shape[1]], fc)
        assert not back[:, fc.shape[1]:].any()
        if layout == "fast":   # int8 1 x 16: 20 wide padded to 32
            assert list(tensor.shape) == [8, 32]


def test_a_non_finite_weight_is_refused():
    bad = _weights()[0].copy()
    bad[3, 2] = np.nan
    with pytest.raises(sparse_format.SparseStorageError, match="non-finite"):
        _rewritten([bad], "float", "csr", 0.5)
