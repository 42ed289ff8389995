"""A uint8 TFLite model's table lookup (the language model's embedding) reads
each row on the table's own grid.

TFLite's uint8 Gather copies the table's bytes and the output tensor's
(scale, zero point) reads them. A weight is fake-quantized narrow-range
(codes 1..255: scale ``(max - min) / 254``), and TOCO (TF 1.x) gave the
Gather's output the table's range on the activation grid (codes 0..255:
scale ``(max - min) / 255``, its own zero point): every row came out 0.4 %
too small and, where the two zero points differ, shifted by one step, exact
zeros included. The reference here is the TF graph's fake-quant table."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.inference import export
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.export import graphdef
from tf1_awd_sparse.export.eval_graph import INPUT_NAME
from tf1_awd_sparse.export.runner import TFLiteRunner
from tf1_awd_sparse.ops import fake_quant as fq
from support.tolerances import grid_value_atol

VOCAB, EMB, B, T = 30, 8, 2, 4


def _table(low, high, seed=0):
    """A sparse table whose range is exactly [low, high]; row 1 all zero."""
    rng = np.random.RandomState(seed)
    table = rng.uniform(low, high, [VOCAB, EMB]).astype(np.float32)
    table[rng.rand(VOCAB, EMB) < 0.6] = 0.0
    table[0, :2] = low, high
    table[1] = 0.0
    return table


def _ids():
    return (np.arange(B * T, dtype=np.int32).reshape(B, T) * 3) % VOCAB


# [-1, 1.5]: narrow zero point 103, the activation grid's 102 (one step
# off); [-1, 1]: both 128 (only the scale differed); [-0.3, 2.2]: 32 / 31.
RANGES = [(-1.0, 1.5), (-1.0, 1.0), (-0.3, 2.2)]
RANGES_BITS = [r + (8,) for r in RANGES] + [(-2.7, 0.4, 8), (0.0, 3.0, 8),
                                            (-1.0, 1.5, 4), (-0.3, 2.2, 2)]


@pytest.mark.parametrize("low,high", RANGES)
def test_uint8_lookup_of_a_fake_quant_table_reads_its_values(tmp_path, low,
                                                             high):
    """A graph ids -> Gather(fake-quant table) converted to uint8: the
    dequantized rows equal the TF graph's fake-quant rows (float32
    rounding), the file stores the table's trained codes, and its lookup
    output has the table's (scale, zero point) (so its bytes mean the same
    numbers)."""
    graph = tf.Graph()
    with graph.as_default():
        ids = tf.placeholder(tf.int32, [B, T], name=INPUT_NAME)
        table = tf.Variable(_table(low, high))
        quantized = fq.quantize_weight(table, 8)
        rows = tf.identity(tf.gather(quantized, ids), name="rows")
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            want, grid = session.run([rows, quantized], {ids: _ids()})
            model = graphdef.convert(session, [ids], [rows],
                                    {INPUT_NAME: (0.0, 1.0)})
    path = str(tmp_path / "lookup.tflite")
    with open(path, "wb") as handle:
        handle.write(model)
    runner = TFLiteRunner(path)
    got = runner.run(_ids())["rows"]
    step = (high - low) / 254.0
    # The same codes read back: two float32 routes to code * scale + min
    # (grid_value_atol, 8.9e-7 to 1.5e-6 for these ranges; was 1e-6); one
    # code off is a step (~1e-2) apart.
    atol = grid_value_atol(low, high)
    assert np.abs(want[0, 0] - np.round(want[0, 0] / step) * step).max() \
        < atol  # the reference is on the narrow grid
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)
    assert np.all(got[want == 0] == 0)   # exact zeros stay exact
    stored = [d for d in runner.interpreter.get_tensor_details()
              if tuple(d["shape"]) == (VOCAB, EMB)]
    assert len(stored) == 1
    scale, zero_point = stored[0]["quantization"]
    codes = runner.interpreter.get_tensor(stored[0]["index"])
    np.testing.assert_array_equal(codes, np.round(grid / scale) + zero_point)
    # The output is given the table's (scale, zero point): the same
    # integer, and the same float32 scale up to the converter deriving it
    # from the range once more (a few roundings; rel 1e-6 = 17 u).
    assert runner.outputs["rows"]["quantization"] == pytest.approx(
        stored[0]["quantization"], rel=1e-6)


@pytest.mark.parametrize("low,high,bits", RANGES_BITS)
def test_full_range_bounds_give_the_narrow_grid(low, high, bits):
    """tf.fake_quant_with_min_max_vars on the bounds of
    `graphdef.narrow_as_full_range` (full range) of values clipped to its
    nudged narrow bounds (as the export rewrites a gathered table) gives
    what the narrow-range op gives on [low, high], for values across and
    beyond the range; those bounds are the narrow op's smallest and largest
    outputs."""
    full, narrow = graphdef.narrow_as_full_range(low, high, bits)
    step = (narrow[1] - narrow[0]) / (2 ** bits - 2)
    x = np.linspace(low - 0.5, high + 0.5, 2001).astype(np.float32)
    # Not at a tie between two codes, where the scales' float32 rounding
    # may pick either.
    codes = (x - narrow[0]) / step
    x = x[np.abs(codes - np.floor(codes) - 0.5) > 1e-3]
    with tf.Graph().as_default(), tf.Session() as session:
        want, got = session.run([
            tf.fake_quant_with_min_max_vars(x, low, high, num_bits=bits,
                                            narrow_range=True),
            tf.fake_quant_with_min_max_vars(np.clip(x, *narrow),
                                            float(full[0]), float(full[1]),
                                            num_bits=bits)])
    # The same codes (no ties), two float32 routes to code * scale + min:
    # grid_value_atol; a wrong code is a step away (was 1e-3 step, from
    # 4e-6 to 1.6e-3 here: too loose for 2 bits).
    atol = grid_value_atol(low, high)
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)
    assert (want.min(), want.max()) == pytest.approx(narrow, abs=atol)


def _lm_checkpoint(folder, params, table):
    """A checkpoint of a quantization-aware language model with the given
    embedding table, fresh weights and ranges learned from three forward
    passes in training (the first fold replaces the initial ranges);
    returns its prefix."""
    rng = np.random.RandomState(1)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(1)
        words = tf.constant(rng.randint(0, VOCAB, [8, 20]).astype(np.int32))
        loss = model.build_lm({"inputs": words, "targets": words}, True,
                              params).loss
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            embedding = [v for v in tf.global_variables()
                         if v.op.name == "lm/embedding"][0]
            embedding.load(table, session)
            for _ in range(3):
                session.run(loss)
            return tf.train.Saver().save(session,
                                         os.path.join(folder, "m.ckpt"))


def _export_graph_outputs(params, prefix):
    """The export graph's (TF, fake-quant) logits and hidden for `_ids()`
    from the zero state."""
    graph = tf.Graph()
    with graph.as_default():
        inputs, outputs, _ = export._unrolled_model(params, B, T, True)
        with tf.Session() as session:
            tf.train.Saver().restore(session, prefix)
            feed = {t: np.zeros(t.shape.as_list(), np.float32)
                    for t in inputs[1:]}
            feed[inputs[0]] = _ids()
            return session.run(outputs[:2], feed)


def test_exported_language_model_agrees_with_its_fake_quant_graph(tmp_path):
    """export_lm of a quantization-aware model whose table's narrow and
    activation zero points differ: the uint8 file's logits and top-layer
    outputs equal the TF fake-quant graph's to an output step (the shifted
    lookup put them 0.18 and 0.25 steps off on average, 3 and 5 at most)."""
    params = Params.from_flat(dict(presets.params_for("demo", "plain", {
        "emb_size": EMB, "hidden_size": 12, "num_layers": 2}),
        vocab_size=VOCAB, quant=True, quant_delay=0))
    prefix = _lm_checkpoint(str(tmp_path), params, _table(-1.0, 1.5))
    want = _export_graph_outputs(params, prefix)
    path = str(tmp_path / "lm.tflite")
    export.export_lm(params, prefix, path, B, T)
    runner = TFLiteRunner(path)
    got = runner.run(_ids())
    for name, value in zip((export.LOGITS_NAME, export.HIDDEN_NAME), want):
        steps = np.abs(got[name] - value) / runner.output_quantization(
            name)[0]
        assert steps.mean() < 0.05 and steps.max() <= 1.001, name
