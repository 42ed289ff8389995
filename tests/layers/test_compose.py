"""Where two features meet (issue 10, parts 1, 2 and 4): quantized stacks
with a train-flag tensor under tf.contrib.quantize, the order of a held
mask's update against its reads in every documented pattern, and default
Savers between graphs with and without dropout-mask variables."""
import itertools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.export.graphdef import nudged_quantization
from variational_dropout import VariationalDropout
from support.versions import contrib, needs_contrib
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell
from support.graphs import ancestors
from support.tolerances import grid_value_atol, lstm_atol, lstm_magnitude

B, T, V, D, N = 2, 3, 7, 4, 5
FAKE_QUANT = "FakeQuantWithMinMaxVars"


# --------------------------------------------------------------------------
# 1. Stacked quantized cells, train flag bool or tensor, contrib.quantize.
# --------------------------------------------------------------------------
def _quant_model(wrapper, depth, flag, use_vd):
    """Embedding -> `depth` quantized cells in `wrapper` -> 2-D dense head.

    Returns (loss, top-layer outputs [B, T, N], the cells)."""
    ids = tf.constant(np.arange(B * T).reshape(B, T) % V, tf.int32)
    embedding = tf.get_variable("embedding", [V, D])
    x = tf.nn.embedding_lookup(embedding, ids)
    kwargs = dict(is_quant=True, is_train=flag, weight_drop_kr=0.5,
                  use_vd=use_vd, seed=3)
    cells = [WeightDropLSTMCell(N, **kwargs) for _ in range(depth)]
    stack = tf.nn.rnn_cell.MultiRNNCell(cells)
    if wrapper == "dynamic":
        out, _ = tf.nn.dynamic_rnn(stack, x, dtype=tf.float32)
    elif wrapper == "static":
        outs, _ = tf.nn.static_rnn(stack, tf.unstack(x, axis=1),
                                   dtype=tf.float32)
        out = tf.stack(outs, 1)
    else:
        back = tf.nn.rnn_cell.MultiRNNCell(
            [WeightDropLSTMCell(N, **kwargs) for _ in range(depth)])
        cells = cells + list(back._cells)  # pylint: disable=protected-access
        (fw, _), _ = tf.nn.bidirectional_dynamic_rnn(stack, back, x,
                                                     dtype=tf.float32)
        out = fw
    logits = tf.layers.dense(tf.reshape(out, [B * T, N]), V)
    loss = tf.losses.sparse_softmax_cross_entropy(tf.reshape(ids, [-1]),
                                                  logits)
    return loss, out, cells


def _cell_ops(graph):
    return set(op.name for op in graph.get_operations()
               if "lstm_cell" in op.name)


QUANT_MATRIX = list(itertools.product(
    ["dynamic", "static", "bidirectional"], [2, 3], ["bool", "tensor"],
    ["training", "eval"], [False, True]))


@needs_contrib
@pytest.mark.parametrize("wrapper,depth,flag_kind,rewrite,use_vd",
                         QUANT_MATRIX)
def test_quantized_stack_under_contrib_quantize(
        fresh_graph, wrapper, depth, flag_kind, rewrite, use_vd):
    tf.set_random_seed(1)
    if flag_kind == "bool":
        flag = rewrite == "training"
    else:
        flag = tf.placeholder_with_default(True, [], name="is_train")
    loss, out, cells = _quant_model(wrapper, depth, flag, use_vd)
    before = _cell_ops(fresh_graph)
    if rewrite == "training":
        contrib.quantize.create_training_graph(fresh_graph)
    else:
        contrib.quantize.create_eval_graph(fresh_graph)
    assert _cell_ops(fresh_graph) == before  # nothing added inside cells
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    # Grappler's passes cost more than these tiny graphs' steps.
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf.Session(graph=fresh_graph, config=config) as sess:
        if rewrite == "training":
            with tf.control_dependencies(
                    tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
                train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            sess.run([tf.global_variables_initializer(),
                      tf.local_variables_initializer()])
            initial = sess.run(cells[0].weights[0])
            losses = [sess.run([train, loss])[1] for _ in range(2)]
            assert np.all(np.isfinite(losses))
            weights = sess.run(cells[0].weights[0])
            assert np.all(np.isfinite(weights))
            assert not np.allclose(weights, initial)  # the stack trains
        else:
            sess.run([tf.global_variables_initializer(),
                      tf.local_variables_initializer()])
        if flag_kind == "bool" and rewrite == "training":
            return  # a training-only graph: no evaluation path to check
        feed = {} if flag_kind == "bool" else {flag: False}
        first, second = sess.run(out, feed), sess.run(out, feed)
        np.testing.assert_array_equal(first, second)  # deterministic
        lo, hi = sess.run(cells[depth - 1].quantizer.run_ranges["output"],
                          feed)
        scale, zero_point = nudged_quantization(lo, hi)
        steps = first / scale + zero_point
        # On the output's grid: TF's float32 code * scale + min against
        # this scale's (grid_value_atol), in steps (was 2e-3 steps, ten
        # times it).
        np.testing.assert_allclose(steps, np.round(steps), rtol=0,
                                   atol=grid_value_atol(lo, hi) / scale)


# --------------------------------------------------------------------------
# 2. A held mask's update is ordered against every read of the mask.
# --------------------------------------------------------------------------
def _reads_and_writes(variable, ops):
    handle = variable.handle.op if hasattr(variable, "handle") \
        else variable.op
    reads = [op for op in ops if op.type == "ReadVariableOp"
             and op.inputs[0].op is handle]
    writes = [op for op in ops if op.type == "AssignVariableOp"
              and op.inputs[0].op is handle]
    return reads, writes


def _assert_ordered(variable, step_ops):
    """Every read and write of `variable` among the ops a training step
    runs have a data or control path between them."""
    ops = ancestors(step_ops)
    reads, writes = _reads_and_writes(variable, ops)
    assert reads and writes
    for read in reads:
        for write in writes:
            assert read in ancestors([write]) or \
                write in ancestors([read]), (read.name, write.name)


#: Every variable-held mask of the library: the cell's, the sequence
#: layer's and VariationalDropout's.
KINDS = ["cell", "layer", "vd"]


def _cell_model(pattern, kind="cell"):
    """A weight-dropped LSTM cell (``kind`` "cell") or sequence layer
    ("layer"), or a VariationalDropout ("vd"), with a held mask, trained
    with SGD in one of the documented patterns; returns (train op, loss,
    mask var, what the step's forward pass used: kernel or dropped input)."""
    tf.set_random_seed(5)
    x = tf.constant(np.random.RandomState(0).randn(B, T, D), tf.float32)
    if kind in ("cell", "layer"):
        if kind == "cell":
            cell = WeightDropLSTMCell(N, weight_drop_kr=0.5, use_vd=True,
                                      seed=2)
            owner = cell

            def forward():
                return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]
        else:
            owner = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True,
                                   seed=2)
            cell = owner.cell

            def forward():
                return owner(x)[0]
        updates = owner.get_vd_update_op() if pattern == "port" else None
        if updates is not None:
            with tf.control_dependencies(updates):
                out = forward()
        else:
            out = forward()
        mask, used = cell.mask_variable, owner.effective_kernel
    else:
        vd = VariationalDropout([B, 1, D], 0.5, seed=2)
        updates = vd.get_update_mask_op() if pattern == "port" else None
        w = tf.get_variable("w", [D, N])
        if updates is not None:
            with tf.control_dependencies(updates):
                dropped = vd(x)
        else:
            dropped = vd(x)
        out = tf.tensordot(dropped, w, [[2], [0]])
        mask, used = vd.mask, dropped
    loss = tf.reduce_mean(tf.square(out - 0.5))
    opt = tf.train.GradientDescentOptimizer(0.1)
    if pattern == "optimizer":
        with tf.control_dependencies(
                tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = opt.minimize(loss)
    else:
        train = opt.minimize(loss)
    return train, loss, mask, used


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pattern", ["optimizer", "port"])
def test_update_ordered_against_reads(fresh_graph, pattern, kind):
    train, _, mask, _ = _cell_model(pattern, kind)
    _assert_ordered(mask, [train.op if hasattr(train, "op") else train])


def _losses(pattern, kind, steps=12):
    graph = tf.Graph()
    with graph.as_default():
        train, loss, _, _ = _cell_model(pattern, kind)
        config = tf.ConfigProto(intra_op_parallelism_threads=2,
                                inter_op_parallelism_threads=4)
        with tf.Session(config=config) as sess:
            sess.run([tf.global_variables_initializer(),
                      tf.local_variables_initializer()])
            return [sess.run([train, loss])[1] for _ in range(steps)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pattern", ["optimizer", "port"])
def test_same_seeds_bit_identical_losses(pattern, kind):
    first = _losses(pattern, kind)
    for _ in range(2):
        assert _losses(pattern, kind) == first


def _kernel_of(mask):
    scope = mask.op.name.rsplit("/", 1)[0]
    return [v for v in tf.global_variables()
            if v.op.name == scope + "/kernel"][0]


def _masked(kind, mask_value, kernel=None):
    """What the forward pass uses under ``mask_value``: the kernel with the
    hidden rows dropped (cell, layer) or the dropped input (vd)."""
    if kind == "vd":
        x = np.random.RandomState(0).randn(B, T, D).astype(np.float32)
        return x * mask_value * 2.0
    return kernel * np.concatenate([np.ones([D, 4 * N], np.float32),
                                    mask_value * 2.0])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pattern", ["optimizer", "port"])
def test_step_uses_the_documented_mask(sess, pattern, kind):
    """Optimizer pattern: a step trains on the mask held before it and
    leaves a new one. Port pattern: it trains on the mask its own update
    drew. Either way every step resamples."""
    train, _, mask, used = _cell_model(pattern, kind)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    kernel = _kernel_of(mask) if kind != "vd" else None
    for _ in range(3):
        before = sess.run(mask.read_value())
        kernel_before = sess.run(kernel) if kernel is not None else None
        used_value = sess.run([used, train])[0]
        after = sess.run(mask.read_value())
        assert not np.array_equal(before, after)  # a new mask each step
        expected = before if pattern == "optimizer" else after
        # Values times a 0/1 mask divided by 0.5 (or times 1): exact (was
        # rtol 1e-6).
        np.testing.assert_array_equal(used_value,
                                      _masked(kind, expected, kernel_before))


@pytest.mark.parametrize("kind", KINDS)
def test_run_update_ops_alone(sess, kind):
    _cell_model("none", kind)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 1
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    mask = mask_placement.mask_variables()[0]
    values = []
    for _ in range(3):
        sess.run(updates)
        values.append(sess.run(mask.read_value()))
    assert not np.array_equal(values[0], values[1])


def test_updates_collection_none_keeps_ops_out(sess):
    cell = WeightDropLSTMCell(N, weight_drop_kr=0.5, use_vd=True,
                              updates_collection=None)
    vd = VariationalDropout([D], 0.5, updates_collection=None)
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True,
                           updates_collection=None)
    x = tf.ones([B, T, D])
    tf.nn.dynamic_rnn(cell, vd(x), dtype=tf.float32)
    layer(x, scope="layer")
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    assert len(cell.get_vd_update_op()) == 1
    assert len(layer.get_vd_update_op()) == 1
    assert len(vd.get_update_mask_op()) == 1
    # Masks are local variables (inspecting one needs its initializer).
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    before = sess.run(cell.mask_variable.read_value())
    sess.run(cell.get_vd_update_op())
    assert not np.array_equal(before, sess.run(
        cell.mask_variable.read_value()))


# --------------------------------------------------------------------------
# 4. Default Savers between graphs with and without mask variables.
# --------------------------------------------------------------------------
def _lstm_outputs(use_vd, plain=False):
    x = tf.constant(np.random.RandomState(1).randn(B, T, D), tf.float32)
    if plain:
        cell = tf.nn.rnn_cell.LSTMCell(N)
    else:
        cell = WeightDropLSTMCell(N, weight_drop_kr=0.5, use_vd=use_vd,
                                  is_train=False if not use_vd else True)
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    if not plain and use_vd:
        # The same weights in evaluation, for comparison.
        eval_cell = WeightDropLSTMCell(N, reuse=True, is_train=False)
        out, _ = tf.nn.dynamic_rnn(eval_cell, x, dtype=tf.float32,
                                   scope="rnn")
    return out


@pytest.mark.parametrize("direction", ["into_masks", "from_masks"])
def test_default_saver_between_mask_and_plain_graphs(tmp_path, direction):
    # (Replicated graphs: tests/ops/test_mask_placement.py.)
    source_masks = direction == "from_masks"
    first = tf.Graph()
    with first.as_default():
        out = _lstm_outputs(use_vd=source_masks, plain=not source_masks)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(),
                      tf.local_variables_initializer()])
            expected = sess.run(out)
            path = saver.save(sess, str(tmp_path / "model.ckpt"))
    assert not any("mask" in name for name, _ in
                   tf.train.list_variables(path))
    second = tf.Graph()
    with second.as_default():
        out = _lstm_outputs(use_vd=not source_masks, plain=source_masks)
        saver = tf.train.Saver()  # the default: no var_list
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            saver.restore(sess, path)
            got = sess.run(out)
    # The restored weights are a copy, but the two graphs' cells (plain
    # LSTMCell, WeightDropLSTMCell) may sum the gates in other orders: two
    # evaluations within lstm_atol of the weights' sizes (inputs standard
    # normal, |x| <~ 3; was rtol 1e-6, under it).
    stored = {name.rsplit("/", 1)[-1]: tf.train.load_variable(path, name)
              for name, _ in tf.train.list_variables(path)}
    kernel, bias = stored["kernel"], stored["bias"]
    atol = 2 * lstm_atol(T, D + N + 1, lstm_magnitude(kernel, bias, 3.0))
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol)
