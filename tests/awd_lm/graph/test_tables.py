"""The pruned table plus a dense rank-r part (``table_rank``, issue 55):
the model's lookup and tied decoder read ``mask * embedding + low @
proj^T`` (numpy on the variables' values), the part trains and decays
with the weights, only where something is pruned, quantized as the table
is; the compressed stages carry it, the float model and the reference do
not. With ``table_rank_rows`` K the part covers the vocabulary's first K
words: a ``[K, r]`` variable, zeros below it."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.training.compression import stages
from support import references
from support.lm import PARAMS, make_features

RANK = 3


def _build(params, training=False):
    features, ids = make_features()
    out = model.build_lm(features, training, params)
    by_name = {v.op.name: v for v in tf.global_variables()}
    return out, features, ids, by_name


def _numpy_table(values, masked=True):
    table = values["lm/embedding"]
    if masked:
        table = table * values["lm/embedding_pruning_mask"]
    low = values["lm/table_low"]
    low = np.pad(low, [[0, table.shape[0] - low.shape[0]], [0, 0]],
                 "constant")
    return table + low @ values["lm/table_proj"].T


#: table_rank_rows against the vocabulary of 11 words: every word (0, the
#: vocabulary, more) or the first 7 (rows 7 to 10 without a part).
ROWS = [(0, 11), (7, 7), (11, 11), (20, 11)]


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("rows, stored", ROWS)
def test_the_model_reads_the_pruned_table_plus_the_product(sess, quant,
                                                           rows, stored):
    """The lookup and the tied decoder read the folded table."""
    tf.set_random_seed(1)
    params = dict(PARAMS, model="awd", pruning="fixed", table_rank=RANK,
                  table_rank_rows=rows, quant=quant, quant_delay=0)
    out, features, ids, by_name = _build(params)
    assert by_name["lm/table_low"].shape.as_list() == [stored, RANK]
    assert by_name["lm/table_proj"].shape.as_list() == [4, RANK]
    sess.run(tf.global_variables_initializer())
    rng = np.random.RandomState(0)
    mask = (rng.rand(11, 4) > 0.6).astype(np.float32)
    mask[3] = 0   # a whole row pruned away: it keeps its low-rank vector
    mask[9] = 0   # and one past the part's rows (with rows 7): it is empty
    for name, value in (("lm/embedding_pruning_mask", mask),
                        ("lm/table_low", rng.randn(stored, RANK))):
        by_name[name].load(value.astype(np.float32), sess)
    values = sess.run(by_name)
    table = _numpy_table(values)
    assert np.abs(table[3]).max() > 0
    assert (np.abs(table[9]).max() > 0) == (stored > 9)
    if quant:   # the folded table on its 8-bit weight grid
        table = references.quantize_weight(table)
    # The decoder: the top layer's output times the table, plus the bias.
    hidden, logits = sess.run([out.hidden, out.logits])
    want = hidden.reshape(-1, 4) @ table.T + values["lm/softmax_bias"]
    if not quant:   # (the quantized logits sit on their own grid)
        np.testing.assert_allclose(logits.reshape(-1, 11), want, rtol=0,
                                   atol=1e-5 * np.abs(want).max())
    # The lookup: the first layer reads the table's rows (no dropout in
    # evaluation).
    lookup = [op for op in tf.get_default_graph().get_operations()
              if op.type in ("GatherV2", "Gather", "ResourceGather")
              and op.outputs[0].shape.as_list() == [3, 5, 4]]
    assert lookup, "no lookup of the inputs"
    rows = sess.run(lookup[0].outputs[0])
    np.testing.assert_allclose(rows, table[ids[:, :-1]], rtol=0,
                               atol=1e-6 * np.abs(table).max())


@pytest.mark.parametrize("rows", [0, 7])
def test_the_part_trains_and_decays_as_a_weight(sess, rows):
    tf.set_random_seed(2)
    params = dict(PARAMS, model="awd", pruning="fixed", table_rank=RANK,
                  table_rank_rows=rows, wdecay=1e-3, dropout=0.0, dropouth=0.0, dropouti=0.0,
                  dropoute=0.0, wdrop=0.0)
    out, _, _, by_name = _build(params, training=True)
    sess.run(tf.global_variables_initializer())
    values = sess.run(by_name)
    # Weight decay: 1e-3 * sum of halved squares over the weights, the
    # low-rank part among them.
    names = ["lm/embedding", "lm/table_low", "lm/table_proj",
             "lm/softmax_bias"] + [n for n in values if n.endswith(
                 ("/kernel", "/bias")) and "lstm" in n]
    want = 1e-3 * sum(0.5 * np.sum(np.square(values[n], dtype=np.float64))
                      for n in names)
    assert sess.run(out.weight_decay) == pytest.approx(want, rel=1e-5)
    # One SGD step moves both factors (low starts at zero: its gradient
    # comes through proj, then proj's through low).
    step = tf.train.GradientDescentOptimizer(1.0).minimize(out.loss)
    for _ in range(2):
        sess.run(step)
    after = sess.run(by_name)
    for name in ("lm/table_low", "lm/table_proj"):
        assert np.abs(after[name] - values[name]).max() > 0, name


@pytest.mark.parametrize("pruning", [None, "fixed"])
def test_no_part_without_pruning_or_rank(sess, pruning):
    """Rank 0 (the default), or nothing pruned: no part, the plain table."""
    params = dict(PARAMS, model="awd", pruning=pruning,
                  table_rank=0 if pruning else RANK)
    _, _, _, by_name = _build(params)
    assert not [n for n in by_name if "table_" in n]


def test_the_compressed_stages_carry_the_rank():
    """The ramp, the survivors and QAT have the part; the float phase and
    the reference do not (split_quant strips the compression keys)."""
    params = as_params(dict(presets.params_for("demo", "awd", {
        "compress": "magnitude", "table_rank": RANK,
        "table_rank_rows": 30}), vocab_size=50))
    float_phase = presets.split_quant(params)[0].to_flat()
    assert "table_rank" not in float_phase
    assert "table_rank_rows" not in float_phase
    for stage in (stages.finetune_params(params, "magnitude", 10),
                  stages.survivors_params(params),
                  stages.quantize_params(params)):
        assert (stage.prune.table_rank, stage.prune.table_rank_rows) == (
            RANK, 30)
    reference = stages.reference_params(params).to_flat()
    assert "table_rank" not in reference
    assert "table_rank_rows" not in reference
    plain = params.replace(table_rank=0)
    assert stages.survivors_params(plain).prune.table_rank == 0


@pytest.mark.parametrize("key, value", [
    ("table_rank", -1), ("table_rank", 1.5), ("table_rank", "2"),
    ("table_rank_rows", -1), ("table_rank_rows", 2.5)])
def test_a_bad_rank_is_named(key, value):
    with pytest.raises(ValueError, match=key):
        presets.check_params({key: value})
