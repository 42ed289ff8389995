"""Graph-construction cases of issue 5: the quantized cell in every RNN
wrapper, then tf.contrib.quantize's rewrites over a whole model (embedding,
cell, dense softmax) succeed and add no second fake-quant inside the cell."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.versions import contrib, needs_contrib
from weight_drop_lstm import WeightDropLSTMCell

B, T, V, D, N = 2, 3, 11, 4, 5
FAKE_QUANT = "FakeQuantWithMinMaxVars"

CASES = {
    "static": dict(),
    "multi": dict(weight_drop_kr=0.5),
    "bidirectional": dict(weight_drop_kr=0.5),
    # dynamic_rnn, mask variable read outside the while loop.
    "use_vd": dict(weight_drop_kr=0.5, use_vd=True),
    "peephole_projection_clips": dict(use_peepholes=True, num_proj=3,
                                      cell_clip=0.8, proj_clip=0.5,
                                      weight_drop_kr=0.5),
    "hard_delayed": dict(quant_activation="hard", quant_delay=1,
                         weight_drop_kr=0.5),
}


def _model(case, is_train):
    """Embedding -> case's RNN -> dense softmax; returns (loss, cells)."""
    kwargs = dict(CASES[case], is_quant=True, is_train=is_train)
    ids = tf.constant(np.arange(B * T).reshape(B, T) % V, tf.int32)
    embedding = tf.get_variable("embedding", [V, D])
    x = tf.nn.embedding_lookup(embedding, ids)
    cells = [WeightDropLSTMCell(N, **kwargs)]
    if case == "static":
        out = tf.stack(tf.nn.static_rnn(cells[0], tf.unstack(x, axis=1),
                                        dtype=tf.float32)[0], 1)
    elif case == "multi":
        cells.append(WeightDropLSTMCell(N, **kwargs))
        out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), x,
                                   dtype=tf.float32)
    elif case == "bidirectional":
        cells.append(WeightDropLSTMCell(N, **kwargs))
        outs, _ = tf.nn.bidirectional_dynamic_rnn(cells[0], cells[1], x,
                                                  dtype=tf.float32)
        out = tf.concat(outs, 2)
    else:
        out, _ = tf.nn.dynamic_rnn(cells[0], x, dtype=tf.float32)
    # 2-D input, so the dense layer is a MatMul the rewrite recognizes.
    logits = tf.layers.dense(tf.reshape(out, [B * T, -1]), V)
    loss = tf.losses.sparse_softmax_cross_entropy(tf.reshape(ids, [-1]),
                                                  logits)
    return loss, cells


def _fake_quants(graph):
    return [op for op in graph.get_operations() if op.type == FAKE_QUANT]


def _in_cell(op):
    return "lstm_cell" in op.name


def _check_rewrite_added_nothing_in_cell(graph, before):
    added = [op for op in _fake_quants(graph) if op not in before]
    # The rewrite did run: the dense layer is quantized now.
    assert any("dense" in op.name for op in added)
    inside = [op.name for op in added
              if _in_cell(op) or _in_cell(op.inputs[0].op)]
    assert not inside, inside


@needs_contrib
@pytest.mark.parametrize("case", sorted(CASES))
def test_training_rewrite_adds_nothing_inside_cell(sess, case):
    step = tf.train.get_or_create_global_step()
    loss, cells = _model(case, is_train=True)
    before = set(_fake_quants(sess.graph))
    assert any(_in_cell(op) for op in before)
    contrib.quantize.create_training_graph(sess.graph, quant_delay=1)
    _check_rewrite_added_nothing_in_cell(sess.graph, before)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=step)
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([train, loss])[1] for _ in range(3)]
    assert np.all(np.isfinite(losses))
    # Range variables live in each cell's scope, in GLOBAL_VARIABLES (the
    # dropout masks are local variables).
    for cell in cells:
        names = [v.name for v in cell.weights
                 if v is not cell.mask_variable]
        assert any("/quant/state/min" in n for n in names)
        assert all(n in [v.name for v in tf.global_variables()]
                   for n in names)


@needs_contrib
@pytest.mark.parametrize("case", ["bidirectional",
                                  "peephole_projection_clips"])
def test_eval_rewrite_adds_nothing_inside_cell(sess, case):
    tf.train.get_or_create_global_step()
    loss, _ = _model(case, is_train=False)
    before = set(_fake_quants(sess.graph))
    contrib.quantize.create_eval_graph(sess.graph)
    _check_rewrite_added_nothing_in_cell(sess.graph, before)
    sess.run(tf.global_variables_initializer())
    assert np.isfinite(sess.run(loss))
