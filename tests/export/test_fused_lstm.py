"""The language model as a TFLite file with one builtin LSTM op per layer
(`export.fused_lstm`, `export_lm(..., lstm="fused")`).

The references: numpy's LSTM language model on the same weights (float64;
the float file within float32 rounding, the 8-bit files within a
first-order bound of their quantization, derived below), the unrolled
float file that the converter writes of the same checkpoint, and the
file's own continued stream (the state carried through the runner)."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.references import sigmoid
from support.versions import IS_TF2, builtin_only
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.inference import export, lm_runner, tflite_weights
from tf1_awd_sparse.export import fused_lstm, sparse_format, tflite_builder
from tf1_awd_sparse.export.runner import TFLiteRunner
from tf1_awd_sparse.export.tflite_schema import TensorType

needs_schema = pytest.mark.skipif(
    not IS_TF2, reason="the fused file is written with TF 2.x's schema "
    "module (test_tf1_refuses_the_fused_file_naming_tf2)")
INTERPRETERS = ["tf"] + (["litert"] if IS_TF2 and __import__(
    "importlib").util.find_spec("ai_edge_litert") else [])
VOCAB, EMB, HIDDEN = 50, 20, 36     # 20 and 36: 16 divides neither
STEPS = 6


def _random_model(seed, zeros=0.8, batch=1):
    """(table, layers, decoder bias): 2 layers, 1 x 16 blocks of each
    kernel's rows and the table's columns zeroed at random."""
    rng = np.random.RandomState(seed)

    def blocks(value, axis):
        keep = rng.rand(*value.shape) > zeros
        keep = np.repeat(np.take(keep, np.arange(0, value.shape[axis], 16),
                                 axis=axis), 16, axis=axis)
        keep = np.take(keep, np.arange(value.shape[axis]), axis=axis)
        return (value * keep).astype(np.float32)
    table = blocks(rng.randn(VOCAB, EMB) * 0.7, 1)
    layers = []
    for inputs, units in ((EMB, HIDDEN), (HIDDEN, EMB)):
        kernel = blocks(rng.randn(inputs + units, 4 * units) * 0.15, 0)
        layers.append(fused_lstm.LSTMLayer(
            kernel, (rng.randn(4 * units) * 0.2).astype(np.float32), 1.0))
    return table, layers, (rng.randn(VOCAB) * 0.1).astype(np.float32)


def _numpy_lm(table, layers, bias, ids, cell_clip=None, state=None):
    """float64 logits [steps, batch, vocab] and the final [(c, h)]:
    ``LSTMCell``'s arithmetic (peepholes, cell clip, projection and its
    clip where a layer has them)."""
    state = state or [(np.zeros((len(ids[0]), l.kernel.shape[1] // 4)),
                       np.zeros((len(ids[0]), _out(l)))) for l in layers]
    out = []
    for step in ids:
        x = table[step].astype(np.float64)
        new = []
        for layer, (c, h) in zip(layers, state):
            z = np.concatenate([x, h], 1) @ layer.kernel + layer.bias
            c, h = _cell(layer, z, c, cell_clip,
                         lambda m, p=layer.projection: m if p is None
                         else m @ p)
            new.append((c, h))
            x = h
        state = new
        out.append(x @ table.T.astype(np.float64) + bias)
    return np.array(out), state


def _out(layer):
    """The layer's output width: its units, or num_proj."""
    return layer.kernel.shape[1] // 4 if layer.projection is None else \
        layer.projection.shape[1]


def _cell(layer, z, c, cell_clip, project, peephole=lambda w: w):
    """The rest of one ``LSTMCell`` step from the gates' pre-activations
    ``z`` ``[batch, 4 units]``: ``(c, h)``; ``project(m)`` and
    ``peephole(w)`` give the projection and the peephole weights as the
    file computes them."""
    units = layer.kernel.shape[1] // 4
    i, j, f, o = (z[:, k * units:(k + 1) * units] for k in range(4))
    if layer.peepholes is not None:
        w_i, w_f, w_o = (peephole(w) for w in layer.peepholes)
        i, f = i + w_i * c, f + w_f * c
    c = sigmoid(f + layer.forget_bias) * c + sigmoid(i) * np.tanh(j)
    if cell_clip:
        c = np.clip(c, -cell_clip, cell_clip)
    if layer.peepholes is not None:
        o = o + w_o * c
    h = project(sigmoid(o) * np.tanh(c))
    if layer.proj_clip:
        h = np.clip(h, -layer.proj_clip, layer.proj_clip)
    return c, h


def _q(value, axis=None):
    """Symmetric int8 of ``value``, scale max|v| / 127 (per row along
    ``axis``, or one for the tensor): ``(codes, scale)``, what TFLite's
    hybrid kernels do to weights and to each input vector."""
    peak = np.abs(value).max(axis=axis, keepdims=axis is not None)
    scale = np.where(peak > 0, peak / 127.0, 1.0)
    return np.clip(np.round(value / scale), -127, 127), scale


def _hybrid_product(v, w):
    """A hybrid fully-connected op: ``v @ w^T`` with ``v`` quantized per
    row and ``w`` ``[out, in]`` per tensor."""
    (qv, sv), (qw, sw) = _q(v, 1), _q(w)
    return (qv @ qw.T) * sv * sw


def _hybrid_lm(table, layers, bias, ids, folded, cell_clip=None,
               low_rank=None):
    """numpy's model of the 8-bit files' arithmetic (float64): int8
    weights (one scale per gate tensor, peephole vector, projection and
    for the table), each input vector of a product quantized symmetric
    per batch row; ``folded``: the sparse layout's ([x | h] one vector,
    [W_x | W_h] one tensor per gate, an identity projection where the
    layer has none), else x and h apart."""
    combined = folded and low_rank is not None
    if combined:
        # The sparse file's one table [table | a low], proj / a (a =
        # max|table| / max|low|: one int8 grid, the same product).
        a = np.abs(table).max() / np.abs(low_rank[0]).max()
        low, proj = low_rank[0] * a, low_rank[1] / a
        codes, t_scale = _q(np.concatenate([table, low], 1))
        codes, low_codes = codes[:, :table.shape[1]], codes[:, table.shape[1]:]
    else:
        codes, t_scale = _q(table)
    state = [(np.zeros((len(ids[0]), l.kernel.shape[1] // 4)),
              np.zeros((len(ids[0]), _out(l)))) for l in layers]
    out = []
    for step in ids:
        x = codes[step] * t_scale
        if combined:   # the row's low part, on the table's grid
            x = x + _hybrid_product(low_codes[step] * t_scale, proj)
        elif low_rank is not None:   # int8 rows of low, then the product
            low, proj = low_rank
            x = x + _hybrid_product(_grid(low)[step], proj)
        new = []
        for layer, (c, h) in zip(layers, state):
            c, h = _cell(layer, _hybrid_gates(layer, x, h, folded), c,
                         cell_clip,
                         lambda m, p=layer.projection: _hybrid_project(
                             m, p, folded), _grid)
            new.append((c, h))
            x = h
        state = new
        if combined:   # one product over [x | x @ proj]
            wide = np.concatenate([x, _hybrid_product(x, proj.T)], 1)
            qx, sx = _q(wide, 1)
            out.append((qx @ np.concatenate([codes, low_codes], 1).T)
                       * sx * t_scale + bias)
            continue
        qx, sx = _q(x, 1)
        logits = (qx @ codes.T) * sx * t_scale + bias
        if low_rank is not None:
            logits = logits + _hybrid_product(
                _hybrid_product(x, low_rank[1].T), low_rank[0])
        out.append(logits)
    return np.array(out)


def _grid(value):
    """``value`` on its symmetric int8 grid (max|v| / 127)."""
    codes, scale = _q(value)
    return codes * scale


def _hybrid_gates(layer, x, h, folded):
    units = layer.kernel.shape[1] // 4
    n_in = x.shape[1]
    z = []
    for k in range(4):
        w = layer.kernel[:, k * units:(k + 1) * units]
        parts = [(np.concatenate([x, h], 1), w)] if folded else [
            (x, w[:n_in]), (h, w[n_in:])]
        total = layer.bias[k * units:(k + 1) * units].astype(np.float64)
        for v, part in parts:
            (qv, sv), (qw, sw) = _q(v, 1), _q(part)
            total = total + (qv @ qw) * sv * sw
        z.append(total)
    return np.concatenate(z, 1)


def _hybrid_project(m, projection, folded):
    """The op's projection of ``m``: quantized per row times the int8
    weights (the layer's, or folded the identity: m re-quantized)."""
    if projection is None and not folded:
        return m
    qm, sm = _q(m, 1)
    if projection is None:
        return qm * sm
    qp, sp = _q(projection)
    return (qm @ qp) * sm * sp


def _assert_hybrid_close(got, want, table, layers):
    """The 8-bit file against `_hybrid_lm`: the same integer products, so
    float32 rounding (relative to the logits' size) everywhere but where a
    re-quantized code rounds the other way (a float32 value at a rounding
    boundary, e.g. a libm's last ulp of exp on another processor): at most
    1 % of the logits, each within one code's effect, a code of the widest
    vector (max |table| or |h| <= 1, over 127) times the largest weight,
    carried through the cell (Lipschitz <= 1) into the decoder's widest
    row, plus the decoder's own code."""
    close = np.abs(got - want) <= 1e-5 * np.abs(want).max()
    assert close.mean() >= 0.99, np.abs(got - want).max()
    vector = max(np.abs(table).max(), 1.0) / 127
    weight = max(np.abs(l.kernel).max() for l in layers)
    one_code = (vector * weight * np.abs(table).sum(1).max()
                + vector * np.abs(table).max() * table.shape[1])
    assert np.abs(got - want).max() <= one_code + 1e-5 * np.abs(want).max()


def _write(folder, name, data):
    path = os.path.join(str(folder), name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _stream(runner, ids):
    """Logits [steps, batch, vocab] and final states, one call a token,
    the state carried through the runner."""
    state, out = {}, []
    for step in ids:
        got = runner.run(np.asarray(step, np.int32)[:, None], state)
        out.append(got["logits"][:, 0])
        state = {name: got["final" + name[len("state"):]]
                 for name in runner.state_inputs}
    return np.array(out), state


def _op_codes(data):
    schema, _ = sparse_format.schema_modules()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    names = {v: k for k, v in vars(schema.BuiltinOperator).items()
             if not k.startswith("_")}
    return [names[parsed.operatorCodes[o.opcodeIndex].builtinCode]
            for o in parsed.subgraphs[0].operators]


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
@pytest.mark.parametrize("weights", list(fused_lstm.FORMATS))
@pytest.mark.parametrize("batch", [1, 2])
def test_the_fused_file_computes_the_lstm_language_model(
        tmp_path, weights, batch, interpreter):
    table, layers, bias = _random_model(0)
    ids = np.random.RandomState(1).randint(0, VOCAB, [STEPS, batch])
    data = fused_lstm.fused_lm(table, layers, bias, weights, batch)
    assert _op_codes(data).count("LSTM") == 2   # one fused op per layer
    runner = TFLiteRunner(_write(tmp_path, "f.tflite", data),
                          builtin_only(interpreter))
    assert sorted(runner.state_variables) == [
        "state_0_c", "state_0_h", "state_1_c", "state_1_h"]
    got, state = _stream(runner, ids)
    # The states as the model has them, the padding to whole blocks cut.
    assert {name: value.shape for name, value in state.items()} == {
        "state_0_c": (batch, HIDDEN), "state_0_h": (batch, HIDDEN),
        "state_1_c": (batch, EMB), "state_1_h": (batch, EMB)}
    want, want_state = _numpy_lm(table, layers, bias, ids)
    if weights == "float":
        # float32 rounding, relative to the logits' size.
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=1e-5 * np.abs(want).max())
        for layer, (c, h) in enumerate(want_state):
            np.testing.assert_allclose(state["state_%d_c" % layer], c,
                                       rtol=0, atol=1e-5 * np.abs(c).max())
            np.testing.assert_allclose(state["state_%d_h" % layer], h,
                                       rtol=0, atol=1e-5)
    else:
        want = _hybrid_lm(table, layers, bias, ids,
                          folded=weights == "int8-sparse")
        _assert_hybrid_close(got, want, table, layers)


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
@pytest.mark.parametrize("weights", list(fused_lstm.FORMATS))
def test_a_low_rank_table_is_written_as_its_two_parts(tmp_path, weights,
                                                      interpreter):
    """``low_rank`` (the LM's ``table_rank``): the file computes the model
    whose tied table is ``table + low @ proj^T`` (numpy's, on the folded
    table; the 8-bit files' products as the hybrid kernels make them,
    the sparse one's as one more block a row of its decoder), stores the parts
    (the dense part's bytes, not a dense table's) and gives them back
    (`read_low_rank`), also to the weight count."""
    table, layers, bias = _random_model(2, zeros=0.9)
    rng = np.random.RandomState(3)
    low = (rng.randn(VOCAB, 3) * 0.5).astype(np.float32)
    proj = (rng.randn(EMB, 3) * 0.3).astype(np.float32)
    ids = rng.randint(0, VOCAB, [STEPS, 2])
    low_rank = (low, proj)
    data = fused_lstm.fused_lm(table, layers, bias, weights, 2,
                               low_rank=low_rank)
    got, _ = _stream(TFLiteRunner(_write(tmp_path, "f.tflite", data),
                                  builtin_only(interpreter)), ids)
    folded = table + low @ proj.T
    if weights == "float":
        want, _ = _numpy_lm(folded, layers, bias, ids)
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=1e-5 * np.abs(want).max())
    else:
        want = _hybrid_lm(table, layers, bias, ids,
                          folded=weights == "int8-sparse",
                          low_rank=low_rank)
        _assert_hybrid_close(got, want, folded, layers)
    # Without the part: another model (the test above is not vacuous).
    plain, _ = _numpy_lm(table, layers, bias, ids)
    assert np.abs(got - plain).max() > 0.1 * np.abs(plain).max()
    back_low, back_proj = fused_lstm.read_low_rank(data)
    # (the sparse file scales the two factors: the product is the same)
    product = low @ proj.T
    tolerance = 0 if weights == "float" else 2.0 / 127
    np.testing.assert_allclose(back_low @ back_proj.T, product, rtol=0,
                               atol=tolerance * np.abs(product).max() + 1e-6)
    assert fused_lstm.read_low_rank(fused_lstm.fused_lm(
        table, layers, bias, weights, 2)) is None
    # The file's bytes grow by the two parts' values (proj twice, padded to
    # whole blocks in the sparse file), not by a table.
    plain_bytes = len(fused_lstm.fused_lm(table, layers, bias, weights, 2))
    width = EMB + (-EMB % 16 if weights == "int8-sparse" else 0)
    values = low.size + 2 * width * proj.shape[1]
    if weights == "int8-sparse":
        # low in one 16-wide block a row of the table ([r_pad, width]
        # proj^T), block indices beside it.
        values = VOCAB * 16 + width * proj.shape[1] + 16 * width
    itemsize = 4 if weights == "float" else 1
    assert 0 < len(data) - plain_bytes - itemsize * values < 2000
    # The weight count reads the pruned matrices; the part apart.
    path = _write(tmp_path, "g.tflite", data)
    shapes = [(VOCAB, EMB), (4 * HIDDEN, EMB + HIDDEN),
              (4 * EMB, HIDDEN + EMB)]
    _, total = tflite_weights.weight_sparsity_of_tflite(path, shapes)
    assert total == table.size + sum(l.kernel.size for l in layers)
    back = tflite_weights.low_rank_of_tflite(path)
    np.testing.assert_array_equal(back[0], back_low)
    np.testing.assert_array_equal(back[1], back_proj)


@needs_schema
def test_a_sparse_layer_wider_than_the_kernel_indexes_is_refused():
    """4,000 inputs and 112 units are 4,112 columns of the folded input:
    past the 256 blocks of 16 whose index the sparse kernel keeps in one
    byte; 4,000 and 96 fit (the next check refuses them)."""
    rng = np.random.RandomState(0)

    def layer(inputs, units):
        return fused_lstm.LSTMLayer(
            np.zeros([inputs + units, 4 * units], np.float32),
            rng.randn(4 * units).astype(np.float32), 1.0)
    table = np.ones([3, 4000], np.float32)
    with pytest.raises(ValueError, match=r"4,112 .*4,096 columns .*one "
                       r"byte \(blocks 0-255\)"):
        fused_lstm.fused_lm(table, [layer(4000, 112)], None, "int8-sparse")
    with pytest.raises(ValueError, match="top layer has 96 units"):
        fused_lstm.fused_lm(table, [layer(4000, 96)], None, "int8-sparse")


def _wide_layer(zero_block, emb=2048, units=16, seed=0):
    """(table, [layer]): one layer of ``units`` cells projected to ``emb``,
    whose folded input [x | h] is 2 * emb = 4,096 columns, every block
    non-zero (256 a row) unless ``zero_block``: the first 16 inputs' rows
    zero, 255 blocks a row."""
    rng = np.random.RandomState(seed)
    kernel = (rng.randn(2 * emb, 4 * units) * 0.05).astype(np.float32)
    kernel += np.sign(kernel) * 0.01     # no code rounds to 0
    if zero_block:
        kernel[:16] = 0
    layer = fused_lstm.LSTMLayer(
        kernel, (rng.randn(4 * units) * 0.2).astype(np.float32), 1.0,
        projection=(rng.randn(units, emb) * 0.3).astype(np.float32))
    return (rng.randn(3, emb) * 0.1).astype(np.float32), [layer]


@needs_schema
def test_a_sparse_row_of_256_blocks_is_refused():
    """A folded row of 4,096 columns fits the block indices (0-255), but
    all 256 blocks non-zero overflow the kernel's one-byte count of a
    row's blocks: TFLite computed wrong values without an error
    (`sparse_format.check_ledger`); the int8 and float formats have no
    such ledger and take it."""
    table, layers = _wide_layer(zero_block=False)
    with pytest.raises(ValueError, match=r"layers\[0\]: row 0 holds 256 "
                       r"non-zero blocks of 16, more than the 255 .*one "
                       r"byte"):
        fused_lstm.fused_lm(table, layers, None, "int8-sparse")
    fused_lstm.fused_lm(table, layers, None, "int8")


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
def test_a_sparse_row_of_255_blocks_computes_right(tmp_path, interpreter):
    """255 non-zero blocks a row of 4,096 columns: the most the ledger
    holds; the file computes numpy's model of the hybrid kernels."""
    table, layers = _wide_layer(zero_block=True)
    data = fused_lstm.fused_lm(table, layers, None, "int8-sparse")
    ids = np.array([[1], [2], [0]])
    got, _ = _stream(TFLiteRunner(_write(tmp_path, "w.tflite", data),
                                  builtin_only(interpreter)), ids)
    bias = np.zeros(3, np.float32)
    _assert_hybrid_close(got, _hybrid_lm(table, layers, bias, ids, True),
                         table, layers)


@pytest.mark.parametrize("low_rank, message", [
    ((np.zeros([VOCAB, 2]), np.zeros([EMB + 1, 2])), r"low_rank must be"),
    ((np.zeros([VOCAB, 2]), np.zeros([EMB, 3])), r"low_rank must be"),
    ((np.zeros([VOCAB, 0]), np.zeros([EMB, 0])), r"r > 0"),
    ("ab", r"low_rank must be"),
])
@needs_schema
def test_a_bad_low_rank_is_named(low_rank, message):
    table, layers, bias = _random_model(0)
    with pytest.raises(ValueError, match=message):
        fused_lstm.fused_lm(table, layers, bias, "float", 1,
                            low_rank=low_rank)


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
def test_sparse_storage_and_the_zero_blocks(tmp_path, interpreter):
    """The sparse file stores every int8 weight in 1 x 16 blocks (fewer
    bytes than the dense file's, whose weights have none) and a model whose
    kernels are all zero (no value to store) still runs, right."""
    table, layers, bias = _random_model(2, zeros=0.9)
    stored = {}
    for weights in ("int8", "int8-sparse"):
        schema, _ = sparse_format.schema_modules()
        parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(
            fused_lstm.fused_lm(table, layers, bias, weights), 0))
        int8 = [t for t in parsed.subgraphs[0].tensors
                if t.type == TensorType.INT8 and parsed.buffers[
                    t.buffer].data is not None]
        assert all((t.sparsity is not None) == (weights == "int8-sparse")
                   for t in int8)
        stored[weights] = sum(len(parsed.buffers[t.buffer].data)
                              for t in int8)
    # 90 % zero blocks; the folded kernels' fill, the padding to whole
    # blocks and the identity projections cost some back.
    assert stored["int8-sparse"] < 0.5 * stored["int8"]
    zero = [fused_lstm.LSTMLayer(np.zeros_like(l.kernel), l.bias, 1.0)
            for l in layers]
    ids = np.arange(STEPS)[:, None] % VOCAB
    for model_layers in (layers, zero):
        data = fused_lstm.fused_lm(table, model_layers, bias, "int8-sparse")
        got, _ = _stream(TFLiteRunner(_write(tmp_path, "s.tflite", data),
                                      builtin_only(interpreter)), ids)
        want = _hybrid_lm(table, model_layers, bias, ids, folded=True)
        _assert_hybrid_close(got, want, table, model_layers)


@needs_schema
def test_the_state_is_the_callers(tmp_path):
    """The state lives in the interpreter's variable tensors, but a call
    starts from the state it is given (zeros when none): two calls without
    state agree, a stream cut in two and resumed from the first part's
    final state equals the whole stream, and a given state is used."""
    table, layers, bias = _random_model(3)
    runner = TFLiteRunner(_write(tmp_path, "f.tflite", fused_lstm.fused_lm(
        table, layers, bias, "float")))
    ids = np.array([[3], [7], [11], [2]])
    first = runner.run(ids[0][:, None])["logits"]
    again = runner.run(ids[0][:, None])["logits"]
    np.testing.assert_array_equal(first, again)   # same op, same inputs
    whole, _ = _stream(runner, ids)
    head, state = _stream(runner, ids[:2])
    runner.run(ids[3][:, None])    # another token between: no effect
    tail = []
    for step in ids[2:]:
        got = runner.run(step[:, None], state)
        tail.append(got["logits"][:, 0])
        state = {n: got["final" + n[len("state"):]] for n in state}
    np.testing.assert_array_equal(np.concatenate([head, tail]), whole)
    given = {"state_0_c": np.full([1, HIDDEN], 0.5, np.float32)}
    want, _ = _numpy_lm(table, layers, bias, ids[:1], state=[
        (np.full([1, HIDDEN], 0.5), np.zeros([1, HIDDEN])),
        (np.zeros([1, EMB]),) * 2])
    np.testing.assert_allclose(runner.run(ids[0][:, None], given)["logits"],
                               want[:, :, None][0].transpose(0, 2, 1)
                               .reshape(1, 1, VOCAB), rtol=0,
                               atol=1e-5 * np.abs(want).max())
    with pytest.raises(ValueError, match="state_0_c"):
        runner.run(ids[0][:, None], {"state_0_c": np.zeros([1, 5])})


@needs_schema
def test_cell_clip(tmp_path):
    table, layers, bias = _random_model(4)
    layers = [fused_lstm.LSTMLayer(l.kernel * 4, l.bias, 1.0)
              for l in layers]
    ids = np.arange(STEPS)[:, None] * 5 % VOCAB
    runner = TFLiteRunner(_write(tmp_path, "c.tflite", fused_lstm.fused_lm(
        table, layers, bias, "float", cell_clip=0.3)))
    got, state = _stream(runner, ids)
    want, want_state = _numpy_lm(table, layers, bias, ids, cell_clip=0.3)
    assert np.abs(want_state[0][0]).max() == pytest.approx(0.3)  # clipped
    np.testing.assert_allclose(got, want, rtol=0,
                               atol=1e-5 * np.abs(want).max())


def _projected_model(seed, proj, zeros=0.5):
    """(table, layers, bias): 2 layers with peepholes, the first projected
    to ``proj`` (then clipped), the second to EMB (the tied table)."""
    rng = np.random.RandomState(seed)
    table, _, bias = _random_model(seed, zeros)
    layers = []
    for inputs, units, out, clip in ((EMB, HIDDEN, proj, 0.4),
                                     (proj, 24, EMB, None)):
        kernel = rng.randn(inputs + out, 4 * units) * 0.3
        kernel *= rng.rand(*kernel.shape) > zeros
        layers.append(fused_lstm.LSTMLayer(
            kernel.astype(np.float32),
            (rng.randn(4 * units) * 0.2).astype(np.float32), 1.0,
            peepholes=tuple((rng.randn(units) * 0.5).astype(np.float32)
                            for _ in range(3)),
            projection=(rng.randn(units, out) * 0.3).astype(np.float32),
            proj_clip=clip))
    return table, layers, bias


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
@pytest.mark.parametrize("weights", list(fused_lstm.FORMATS))
def test_peepholes_projection_and_their_clips(tmp_path, weights,
                                              interpreter):
    """Layers with peepholes, a projection (num_proj 20, then the table's
    width) and proj_clip, and a cell clip: the file computes LSTMCell's
    arithmetic (float: to float32 rounding; 8-bit: numpy's model of the
    hybrid kernels, the layer's projection instead of the identity); the
    states come back at their own widths (c: units, h: num_proj)."""
    table, layers, bias = _projected_model(7, proj=20)
    ids = np.random.RandomState(8).randint(0, VOCAB, [STEPS, 1])
    data = fused_lstm.fused_lm(table, layers, bias, weights, cell_clip=0.8)
    got, state = _stream(TFLiteRunner(_write(tmp_path, "p.tflite", data),
                                      builtin_only(interpreter)), ids)
    assert {n: v.shape for n, v in state.items()} == {
        "state_0_c": (1, HIDDEN), "state_0_h": (1, 20),
        "state_1_c": (1, 24), "state_1_h": (1, EMB)}
    want, want_state = _numpy_lm(table, layers, bias, ids, cell_clip=0.8)
    assert np.abs(want_state[0][1]).max() == pytest.approx(0.4)  # clipped
    if weights == "float":
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=1e-5 * np.abs(want).max())
        return
    _assert_hybrid_close(got, _hybrid_lm(table, layers, bias, ids,
                                         weights == "int8-sparse",
                                         cell_clip=0.8),
                         table, layers)


@needs_schema
@pytest.mark.parametrize("change, message", [
    (dict(weights="int4"), "weights must be one of"),
    (dict(batch_size=0), "batch_size"),
    (dict(cell_clip=-1.0), "cell_clip"),
    (dict(layers=[]), "at least one"),
    (dict(decoder_bias=np.zeros(3)), "decoder_bias"),
    (dict(table=np.zeros((VOCAB, EMB + 1))), r"layers\[0\]"),
    (dict(top=EMB + 1), "top layer has"),
])
def test_bad_arguments_are_named(change, message):
    table, layers, bias = _random_model(5)
    args = dict(table=table, layers=layers, decoder_bias=bias)
    top = change.pop("top", None)
    if top is not None:
        kernel = np.zeros((HIDDEN + top, 4 * top), np.float32)
        args["layers"] = [layers[0], fused_lstm.LSTMLayer(
            kernel, np.zeros(4 * top), 1.0)]
    args.update(change)
    with pytest.raises(ValueError, match=message):
        fused_lstm.fused_lm(**args)


# --- export_lm(..., lstm="fused") of a checkpoint --------------------------

def _params():
    return dict(presets.params_for("demo", "awd", {
        "emb_size": EMB, "hidden_size": HIDDEN, "num_layers": 2}),
        vocab_size=VOCAB, quant=False, quant_delay=0)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A language model's checkpoint, 80 % of each matrix zero."""
    folder = str(tmp_path_factory.mktemp("fused"))
    params = _params()
    rng = np.random.RandomState(0)
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        ids = tf.zeros([1, 3], tf.int32)
        model.build_lm({"inputs": ids, "targets": ids}, True,
                       model.check_params(dict(params, use_vd=False)))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for variable in tf.trainable_variables():
                value = session.run(variable)
                if value.ndim == 2:
                    value = value * (rng.rand(*value.shape) > 0.8) * 8
                else:
                    value = rng.randn(*value.shape) * 0.3
                variable.load(value, session)
            prefix = tf.train.Saver().save(session,
                                           os.path.join(folder, "m.ckpt"))
    return folder, params, prefix


@needs_schema
@pytest.mark.parametrize("weights, storage", [
    ("float", "dense"), ("int8", "dense"), ("int8", "sparse")])
def test_export_lm_fused_scores_as_the_unrolled_file(checkpoint, weights,
                                                     storage):
    """The fused file of a checkpoint scores a stream as the converter's
    unrolled float file of it does: float within float32 rounding (the
    gate order, the forget bias, the tied table and the decoder bias all
    read right), 8-bit within 2 % in perplexity."""
    folder, params, prefix = checkpoint
    unrolled = os.path.join(folder, "unrolled.tflite")
    export.export_lm(params, prefix, unrolled, 1, 1)
    path = os.path.join(folder, "fused_%s_%s.tflite" % (weights, storage))
    size = export.export_lm(params, prefix, path, 1, 1, weights=weights,
                            storage=storage, lstm="fused")
    assert size == os.path.getsize(path)
    stream = np.random.RandomState(2).randint(0, VOCAB, [1, 40])
    want = np.concatenate([p for p, _ in lm_runner.LMRunner(unrolled).windows(
        stream)], 1)
    got = np.concatenate([p for p, _ in lm_runner.LMRunner(path).windows(
        stream)], 1)
    if weights == "float":
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=1e-5 * np.abs(want).max())
    else:
        assert abs(np.exp(-got.mean()) / np.exp(-want.mean()) - 1) < 0.02


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_steps=3), "num_steps must be 1"),
    (dict(weights="float", storage="sparse"), "needs weights='int8'"),
    (dict(weights="int8", storage="sparse", layout="csr"), "1 x 16"),
    (dict(lstm="scan"), "lstm must be one of"),
])
def test_export_lm_refuses_what_the_fused_op_cannot_write(
        checkpoint, tmp_path, kwargs, message):
    if not IS_TF2 and kwargs.get("lstm") != "scan":
        pytest.skip("TF 1.x refuses every fused file first (next test)")
    _, params, prefix = checkpoint
    args = dict(weights="float", lstm="fused", num_steps=1)
    args.update(kwargs)
    path = str(tmp_path / "x.tflite")
    with pytest.raises(ValueError, match=message):
        export.export_lm(params, prefix, path, 1, **args)
    assert not os.path.exists(path)


@pytest.mark.skipif(IS_TF2, reason="TF 1.x only")
def test_tf1_refuses_the_fused_file_naming_tf2(checkpoint, tmp_path):
    _, params, prefix = checkpoint
    with pytest.raises(sparse_format.SparseStorageError,
                       match="TensorFlow 2.x"):
        export.export_lm(params, prefix, str(tmp_path / "f.tflite"), 1, 1,
                         lstm="fused")
    assert not (tmp_path / "f.tflite").exists()


@needs_schema
@pytest.mark.parametrize("weights", list(fused_lstm.FORMATS))
def test_read_weights_inverts_the_layout(weights):
    """The weights read back are the ones written, in LSTMCell's layout:
    exactly (float), or each gate's (and the table's) symmetric int8 grid,
    max|w| / 127 (numpy's), zeros kept."""
    table, layers, bias = _random_model(6)
    data = fused_lstm.fused_lm(table, layers, bias, weights)
    assert fused_lstm.is_fused(data)
    got_table, kernels = fused_lstm.read_weights(data)

    def grid(value):
        if weights == "float":
            return value
        codes, scale = _q(value)
        return codes * scale
    np.testing.assert_allclose(got_table, grid(table), rtol=1e-6, atol=0)
    for layer, kernel in zip(layers, kernels):
        units = layer.kernel.shape[1] // 4
        inputs = layer.kernel.shape[0] - units
        for column in range(4):
            part = layer.kernel[:, column * units:(column + 1) * units]
            pieces = [part] if weights == "int8-sparse" else [
                part[:inputs], part[inputs:]]
            want = np.concatenate([grid(p) for p in pieces])
            np.testing.assert_allclose(
                kernel[:, column * units:(column + 1) * units], want,
                rtol=1e-6, atol=0)
        assert np.array_equal(kernel == 0, layer.kernel == 0) or \
            weights != "float"
    with pytest.raises(ValueError, match="not a file of fused_lm"):
        fused_lstm.read_weights(_other_file())
    with pytest.raises(ValueError, match="not a file of fused_lm"):
        fused_lstm.read_low_rank(_other_file())


def _other_file():
    schema, flatbuffers = sparse_format.schema_modules()
    return tflite_builder.Builder(schema, "another model").finish(
        flatbuffers)


@needs_schema
def test_weight_sparsity_of_a_fused_file(tmp_path):
    """Zeros counted from the fused file's gates, as numpy counts them in
    the table and the kernels; shapes that are not the file's refused."""
    table, layers, bias = _random_model(9, zeros=0.7)
    path = _write(tmp_path, "w.tflite", fused_lstm.fused_lm(
        table, layers, bias, "float"))
    shapes = [table.shape] + [l.kernel.shape[::-1] for l in layers]
    want = [table] + [l.kernel for l in layers]
    assert tflite_weights.weight_sparsity_of_tflite(path, shapes) == (
        sum(int(np.sum(w == 0)) for w in want), sum(w.size for w in want))
    with pytest.raises(ValueError, match="weight matrices"):
        tflite_weights.weight_sparsity_of_tflite(path, shapes[:2])
    with pytest.raises(ValueError, match="no tensor of shape"):
        tflite_weights.weight_sparsity_of_tflite(path, [(VOCAB, EMB + 1)] +
                                                 shapes[1:])
