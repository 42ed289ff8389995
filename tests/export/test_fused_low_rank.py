"""`export.fused_low_rank`, the dense low-rank part ``low @ proj^T`` of a
fused file's tied table: the argument checked, the float / int8 files'
second product (`weights`, `lookup`, `logits`) and the int8-sparse file's
one more block a row (`combined`, `combined_lookup`, `combined_input`).

The references: numpy's tied table ``table + low @ proj^T`` (its rows for
the lookup, its product for the logits), and the TFLite interpreter
running models written with these pieces alone. The whole language model
with a low-rank table: tests/export/test_fused_lstm.py."""
import numpy as np
import pytest

from support.versions import IS_TF2, invoke, needs_schema
from tf1_awd_sparse.export import fused_low_rank as flr
from tf1_awd_sparse.export import sparse_format, tflite_builder as tfl
from tf1_awd_sparse.export.tflite_schema import TensorType, symmetric_int8

VOCAB, EMB, RANK, B = 7, 20, 3, 2


def _parts(seed, emb=EMB):
    rng = np.random.RandomState(seed)
    table = rng.randn(VOCAB, emb).astype(np.float32)
    low = (rng.randn(VOCAB, RANK) * 0.5).astype(np.float32)
    proj = (rng.randn(emb, RANK) * 0.3).astype(np.float32)
    return table, low, proj


def test_checked_gives_float32_arrays_or_none():
    assert flr.checked(None, (VOCAB, EMB)) is None
    low, proj = flr.checked(([[1, 2]] * VOCAB, np.ones([EMB, 2], int)),
                            (VOCAB, EMB))
    assert low.dtype == proj.dtype == np.float32
    assert low.shape == (VOCAB, 2) and proj.shape == (EMB, 2)


@pytest.mark.parametrize("low_rank, message", [
    ((np.zeros([VOCAB + 1, 2]), np.zeros([EMB, 2])), r"got shapes \(8, 2\)"),
    ((np.zeros([VOCAB, 2]), np.zeros([EMB, 2, 1])), "low_rank must be"),
    ((np.zeros([VOCAB, 2]), np.zeros([EMB, 3])), "low_rank must be"),
    ((np.zeros([VOCAB, 0]), np.zeros([EMB, 0])), "r > 0"),
    (3, "a pair"),
    ((np.zeros([VOCAB, 2]), "x"), "a pair")])
def test_checked_names_what_does_not_fit_the_table(low_rank, message):
    with pytest.raises(ValueError, match=message):
        flr.checked(low_rank, (VOCAB, EMB))


@pytest.mark.skipif(not IS_TF2, reason="fused files are TF 2.x's only "
                    "(fused_lm refuses 1.x); TF 1.13's numpy 1.16 has no "
                    "default np.pad mode")
@pytest.mark.parametrize("zero_table", [False, True])
@pytest.mark.parametrize("width", [EMB, 32])
def test_combined_computes_the_tied_table(width, zero_table):
    """The combined table's own columns are the table's (padded), its
    extra block ``a low`` on the table's peak; its lookup and its decoder
    input give the rows and the logits of ``table + low @ proj^T``."""
    table, low, proj = _parts(1)
    if zero_table:
        table[:] = 0
    stacked, proj_a, proj_t = flr.combined(table, (low, proj), width)
    r_pad = tfl.padded(RANK, True)
    assert stacked.shape == (VOCAB, width + r_pad)
    assert proj_a.shape == (width, RANK) and proj_t.shape == (r_pad, width)
    tied = np.pad(table + low.astype(np.float64) @ proj.T,
                  [[0, 0], [0, width - EMB]])
    np.testing.assert_array_equal(stacked[:, :EMB], table)
    assert not stacked[:, EMB:width].any() and \
        not stacked[:, width + RANK:].any()
    # One int8 grid: the part's peak is the table's (a zero table: as is).
    want_peak = np.abs(low).max() if zero_table else np.abs(table).max()
    np.testing.assert_allclose(np.abs(stacked[:, width:]).max(), want_peak,
                               rtol=1e-6)
    rows = stacked[:, :width] + stacked[:, width:width + RANK] @ proj_a.T
    np.testing.assert_allclose(rows, tied, rtol=0, atol=1e-5)
    x = np.random.RandomState(2).randn(B, width)
    decoded = np.concatenate([x, x @ proj_t.T], 1) @ stacked.T
    np.testing.assert_allclose(decoded, x @ tied.T, rtol=0, atol=1e-4)


def _float_model(table, low_rank, dtype):
    """ids -> the table's rows plus the part (`lookup`), and their logits
    plus the part (`logits`), of a float or int8 dense table."""
    schema, flatbuffers = sparse_format.schema_modules()
    build = tfl.Builder(schema, "low rank")
    ids = build.tensor("ids", [B, 1], TensorType.INT32)
    build.graph.inputs = [ids]
    stored = build.weight("table", table, dtype)
    parts = flr.weights(build, low_rank, dtype, False)
    rows = flr.lookup(build, tfl.gathered(build, stored, ids, "table", B),
                      ids, parts, B)
    decoded = tfl.product(build, rows, stored, [B, VOCAB], "decoded")
    logits = flr.logits(build, rows, decoded, parts, B)
    build.graph.outputs = [rows, logits]
    return build.finish(flatbuffers)


def _sparse_model(table, low_rank):
    """The same through the int8 combined table in 1 x 16 blocks."""
    schema, flatbuffers = sparse_format.schema_modules()
    build = tfl.Builder(schema, "low rank, combined")
    ids = build.tensor("ids", [B, 1], TensorType.INT32)
    build.graph.inputs = [ids]
    width = tfl.padded(EMB, True)
    stacked, proj, proj_t = flr.combined(table, low_rank, width)
    stored = build.weight("table", stacked, TensorType.INT8, sparse=True)
    dense = build.tensor("table/dense", list(stacked.shape), TensorType.INT8,
                         scale=symmetric_int8(stacked)[1])
    build.op(tfl.Op.DENSIFY, [stored], [dense],
             schema.BuiltinOptions.DensifyOptions, schema.DensifyOptionsT())
    rows = flr.combined_lookup(
        build, tfl.gathered(build, dense, ids, "table", B),
        build.weight("proj", proj, TensorType.INT8), width, low_rank[0]
        .shape[1], B)
    x = flr.combined_input(
        build, rows, build.weight("proj_t", proj_t, TensorType.INT8), B)
    logits = tfl.product(build, x, stored, [B, VOCAB], "logits")
    build.graph.outputs = [rows, logits]
    return build.finish(flatbuffers), stacked, proj, proj_t


def _q(value):
    codes, scale = symmetric_int8(value)
    return codes * np.float64(scale)


def _one_code(x, weights):
    """The hybrid product's bound: one code of x's row times |weights|."""
    return np.abs(x).max() / 127 * np.abs(weights).sum(1).max() + 1e-5


@needs_schema
@pytest.mark.parametrize("dtype", [TensorType.FLOAT32, TensorType.INT8],
                         ids=["float32", "int8"])
def test_lookup_and_logits_add_the_part(dtype):
    table, low, proj = _parts(3)
    ids = np.array([[4], [1]], np.int32)
    got = invoke(_float_model(table, (low, proj), dtype), {"ids": ids})
    rows, logits = got["embedding/sum"], got["decoder/sum"]
    if dtype == TensorType.FLOAT32:
        tied = table + low.astype(np.float64) @ proj.T
        np.testing.assert_allclose(rows, tied[ids[:, 0]], rtol=0, atol=1e-5)
        np.testing.assert_allclose(logits, rows @ tied.T, rtol=0,
                                   atol=1e-4 * np.abs(rows @ tied.T).max())
        # Without the part: another model (not vacuous).
        assert np.abs(rows - table[ids[:, 0]]).max() > 0.05
        return
    t, lo, pr = _q(table), _q(low), _q(proj)
    coded = lo[ids[:, 0]]
    np.testing.assert_allclose(rows, t[ids[:, 0]] + coded @ pr.T, rtol=0,
                               atol=_one_code(coded, pr))
    # Three hybrid products, each within one code of its input.
    r = rows.astype(np.float64)
    want = r @ t.T + (r @ pr) @ lo.T
    atol = _one_code(r, t) + _one_code(r, pr.T) * np.abs(lo).sum(1).max() \
        + _one_code(r @ pr, lo)
    np.testing.assert_allclose(logits, want, rtol=0, atol=atol)


@needs_schema
def test_the_combined_table_computes_the_tied_tables_lookup_and_logits():
    table, low, proj = _parts(5)
    table[np.random.RandomState(6).rand(VOCAB, EMB) < 0.7] = 0
    data, stacked, proj_a, proj_t = _sparse_model(table, (low, proj))
    ids = np.array([[0], [6]], np.int32)
    got = invoke(data, {"ids": ids})
    rows, logits = got["embedding/sum"], got["logits"]
    s, pa, pt = _q(stacked), _q(proj_a), _q(proj_t)
    width = pa.shape[0]
    low_rows = s[ids[:, 0], width:width + RANK]
    want_rows = s[ids[:, 0], :width] + low_rows @ pa.T
    np.testing.assert_allclose(rows, want_rows, rtol=0,
                               atol=_one_code(low_rows, pa))
    r = rows.astype(np.float64)
    x = np.concatenate([r, r @ pt.T], 1)
    atol = _one_code(r, pt) * np.abs(s[:, width:]).sum(1).max() \
        + _one_code(x, s)
    np.testing.assert_allclose(logits, x @ s.T, rtol=0, atol=atol)
    # The tied table, to int8 rounding: the part is in.
    tied = np.pad(table + low.astype(np.float64) @ proj.T,
                  [[0, 0], [0, width - EMB]])
    np.testing.assert_allclose(rows, tied[ids[:, 0]], rtol=0,
                               atol=0.05 * np.abs(tied).max())
    assert np.abs(rows[:, :EMB] - table[ids[:, 0]]).max() > \
        0.1 * np.abs(low @ proj.T).max()
