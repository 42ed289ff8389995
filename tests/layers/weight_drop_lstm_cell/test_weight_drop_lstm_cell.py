"""WeightDropLSTMCell against tf.nn.rnn_cell.LSTMCell and numpy references.

Statistical checks use fixed seeds; tolerances are stated where used.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from weight_drop_lstm import WeightDropLSTMCell
from support import ROOT
from support.references import (BATCH, DEPTH, TIME, UNITS, lstm_inputs,
                                lstm_tolerance, np_lstm)


def _copy_weights(sess, src_scope, dst_scope):
    """Assigns every variable under dst_scope from its twin in src_scope."""
    src = {v.name[len(src_scope):]: v
           for v in tf.global_variables(src_scope)}
    ops = [v.assign(src[v.name[len(dst_scope):]])
           for v in tf.global_variables(dst_scope)]
    sess.run(ops)
    return sorted(src)


LSTM_CONFIGS = [
    dict(use_peepholes=True, cell_clip=0.3, num_proj=4, proj_clip=0.2),
    dict(state_is_tuple=False, forget_bias=0.5),
]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("kwargs", LSTM_CONFIGS)
def test_equals_lstm_cell_at_keep_one_and_in_eval(sess, kwargs, dtype):
    # Two graphs of the same function (the kernel split otherwise).
    tol = lstm_tolerance(dtype, evaluations=2)
    x = lstm_inputs(dtype)
    init = tf.random_uniform_initializer(-0.8, 0.8, seed=3)
    ref = tf.nn.rnn_cell.LSTMCell(UNITS, initializer=init, **kwargs)
    keep_one = WeightDropLSTMCell(UNITS, initializer=init, **kwargs)
    evaluating = WeightDropLSTMCell(UNITS, initializer=init,
                                    weight_drop_kr=0.5, use_vd=True,
                                    is_train=False, **kwargs)
    outs = []
    for scope, cell in (("ref", ref), ("one", keep_one),
                        ("eval", evaluating)):
        outs.append(tf.nn.dynamic_rnn(cell, x, dtype=dtype, scope=scope)[0])
    sess.run(tf.global_variables_initializer())
    names = _copy_weights(sess, "ref/", "one/")
    assert names == sorted(v.name[len("eval/"):]
                           for v in tf.global_variables("eval/"))
    _copy_weights(sess, "ref/", "eval/")
    want, got_one, got_eval = sess.run(outs)
    np.testing.assert_allclose(got_one, want, rtol=0, atol=tol)
    np.testing.assert_allclose(got_eval, want, rtol=0, atol=tol)
    assert keep_one.get_vd_update_op() == []
    assert evaluating.get_vd_update_op() == []


def test_checkpoint_moves_between_lstm_cell_and_weight_drop(sess, tmp_path):
    x = lstm_inputs()
    out_ref = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(UNITS), x,
                                dtype=tf.float32)[0]
    sess.run(tf.global_variables_initializer())
    path = tf.train.Saver().save(sess, str(tmp_path / "ckpt"))
    want = sess.run(out_ref)
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    with tf.Graph().as_default(), tf.Session(config=config) as sess2:
        cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.4, is_train=False)
        out = tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)[0]
        tf.train.Saver().restore(sess2, path)
        # Another graph of the same function: float32 rounding, twice.
        np.testing.assert_allclose(sess2.run(out), want,
                                   atol=lstm_tolerance(tf.float32, 2))


def _train_cell(**kwargs):
    init = tf.random_normal_initializer(seed=5)  # no exact zeros
    return WeightDropLSTMCell(UNITS, initializer=init, seed=11, **kwargs)


def _kernels(sess, cell):
    return sess.run([cell.effective_kernel, cell._kernel])


def test_one_mask_for_all_steps_and_examples_new_each_run(sess):
    x = lstm_inputs(tf.float64)
    cell = _train_cell(weight_drop_kr=0.5, dtype=tf.float64)
    out = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)[0]
    # Built once, outside the while loop.
    assert cell.effective_kernel.op._get_control_flow_context() is None
    sess.run(tf.global_variables_initializer())
    bias = sess.run(cell._bias)
    runs = [sess.run([out, cell.effective_kernel]) for _ in range(2)]
    for outputs, kernel in runs:
        # Every step and example matches a numpy LSTM with this one kernel.
        np.testing.assert_allclose(
            outputs, np_lstm(sess.run(x), kernel, bias),
            atol=lstm_tolerance(tf.float64))
    assert not np.array_equal(runs[0][1], runs[1][1])


def test_same_cell_in_dynamic_static_and_while_loop_shares_the_run_mask(
        sess):
    x = lstm_inputs()
    cell = _train_cell(weight_drop_kr=0.5)
    dyn = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]
    static = tf.stack(tf.nn.static_rnn(cell, tf.unstack(x, axis=1),
                                       dtype=tf.float32)[0], 1)

    def body(t, state, acc):
        out, new_state = cell(x[:, t], state)
        return t + 1, new_state, acc.write(t, out)

    _, _, acc = tf.while_loop(
        lambda t, *_: t < TIME, body,
        (0, cell.zero_state(BATCH, tf.float32),
         tf.TensorArray(tf.float32, TIME)))
    loop = tf.transpose(acc.stack(), [1, 0, 2])
    sess.run(tf.global_variables_initializer())
    a, b, c, kernel, plain = sess.run([dyn, static, loop,
                                       cell.effective_kernel, cell._kernel])
    # Three graphs of one function (grappler may fuse each otherwise).
    np.testing.assert_allclose(b, a, atol=lstm_tolerance(tf.float32, 2))
    np.testing.assert_allclose(c, a, atol=lstm_tolerance(tf.float32, 2))
    assert (kernel == 0).any() and not (plain == 0).any()


@pytest.mark.parametrize("drop_input", [False, True])
def test_dropped_rows_fraction_and_scaling(sess, drop_input):
    keep, depth, units = 0.7, 30, 40
    cell = WeightDropLSTMCell(units, weight_drop_kr=keep, seed=2,
                              drop_input_weights=drop_input,
                              initializer=tf.random_normal_initializer(
                                  seed=1))
    tf.nn.dynamic_rnn(cell, tf.zeros([2, 3, depth]), dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    eff, kernel = _kernels(sess, cell)
    first = 0 if drop_input else depth  # first row DropConnect covers
    np.testing.assert_array_equal(eff[:first], kernel[:first])
    eff, kernel = eff[first:], kernel[first:]
    dropped = eff == 0
    np.testing.assert_allclose(eff[~dropped], kernel[~dropped] / keep,
                               rtol=1e-6)
    # 6400 or 11200 Bernoulli(0.3) draws: std of the fraction <= 0.0058;
    # 0.03 is > 5 standard deviations.
    assert abs(dropped.mean() - (1 - keep)) < 0.03


def test_use_vd_mask_changes_only_with_update_op(sess):
    cell = _train_cell(weight_drop_kr=0.5, use_vd=True,
                       drop_input_weights=True)
    out = tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)[0]
    mask = cell.mask_variable
    assert mask.get_shape().as_list() == [DEPTH + UNITS, 4 * UNITS]
    assert mask not in tf.trainable_variables()
    # A local variable (never in a checkpoint): inspecting it before the
    # first forward pass needs the local initializer.
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    first = sess.run(mask)
    assert set(np.unique(first)) == {0.0, 1.0}  # already drops at step one
    k1 = sess.run([out, cell.effective_kernel])[1]
    k2 = sess.run([out, cell.effective_kernel])[1]
    np.testing.assert_array_equal(k1, k2)
    np.testing.assert_array_equal(k1 == 0, first == 0)
    sess.run(cell.get_vd_update_op())
    second = sess.run(mask)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(sess.run(cell.effective_kernel) == 0,
                                  second == 0)


def test_is_train_tensor_serves_train_and_eval(sess):
    is_train = tf.placeholder_with_default(True, [])
    x = lstm_inputs()
    cell = _train_cell(weight_drop_kr=0.5, is_train=is_train)
    out = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]
    sess.run(tf.global_variables_initializer())
    bias = sess.run(cell._bias)
    train_out, train_kernel = sess.run([out, cell.effective_kernel])
    plain = sess.run(cell._kernel)
    assert (train_kernel == 0).any()
    np.testing.assert_allclose(
        train_out, np_lstm(sess.run(x), train_kernel, bias),
        atol=lstm_tolerance(tf.float32))
    feed = {is_train: False}
    eval_out, eval_kernel = sess.run([out, cell.effective_kernel], feed)
    np.testing.assert_array_equal(eval_kernel, plain)
    np.testing.assert_allclose(eval_out, np_lstm(sess.run(x), plain, bias),
                               atol=lstm_tolerance(tf.float32))


def _loss_and_train(outputs):
    loss = tf.reduce_mean(tf.square(outputs - 0.5))
    return loss, tf.train.GradientDescentOptimizer(0.5).minimize(loss)


@pytest.mark.parametrize("layers", [2, 3])
def test_multi_rnn_cell_trains_and_update_ops_are_stable(sess, layers):
    cells = [WeightDropLSTMCell(UNITS, weight_drop_kr=0.6, use_vd=True,
                                seed=k) for k in range(layers)]
    stacked = tf.nn.rnn_cell.MultiRNNCell(cells)
    loss, train = _loss_and_train(
        tf.nn.dynamic_rnn(stacked, lstm_inputs(), dtype=tf.float32)[0])
    updates = [cell.get_vd_update_op() for cell in cells]
    n_ops = len(tf.get_default_graph().get_operations())
    assert [cell.get_vd_update_op() for cell in cells] == updates
    assert len(tf.get_default_graph().get_operations()) == n_ops
    flat = [op for ops in updates for op in ops]
    assert len(set(flat)) == layers
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == flat
    masks = {cell.mask_variable.name for cell in cells}
    assert len(masks) == layers
    sess.run(tf.global_variables_initializer())
    losses = []
    for _ in range(8):
        sess.run(flat)
        losses.append(sess.run([loss, train])[0])
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_bidirectional_pair_trains(sess):
    fw = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, seed=1)
    bw = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, use_vd=True, seed=2)
    (out_fw, out_bw), _ = tf.nn.bidirectional_dynamic_rnn(
        fw, bw, lstm_inputs(), dtype=tf.float32)
    loss, train = _loss_and_train(tf.concat([out_fw, out_bw], 2))
    assert fw.get_vd_update_op() == []
    assert len(bw.get_vd_update_op()) == 1
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([loss, train])[0] for _ in range(8)]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_port_calling_patterns(sess):
    # As the well-known TF1 port's README and example write them.
    cell = WeightDropLSTMCell(num_units=UNITS, weight_drop_kr=0.5,
                              use_vd=True, input_size=DEPTH)
    with tf.control_dependencies(cell.get_vd_update_op()):
        outputs, _ = tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    seen = []
    for _ in range(2):
        kernel = sess.run([outputs, cell.effective_kernel])[1]
        # The update ran first, and this run used the new mask.
        np.testing.assert_array_equal(kernel[DEPTH:] == 0,
                                      sess.run(cell.mask_variable) == 0)
        seen.append(kernel)
    assert not np.array_equal(seen[0], seen[1])
    assert sess.run(cell.get_vd_update_op()) == [None]

    # The other documented pattern: update ops around the training op.
    with tf.variable_scope("second"):
        cell2 = WeightDropLSTMCell(num_units=UNITS, weight_drop_kr=0.5,
                                   use_vd=True, input_size=DEPTH)
        out2 = tf.nn.dynamic_rnn(cell2, lstm_inputs(), dtype=tf.float32)[0]
    with tf.control_dependencies(cell2.get_vd_update_op()):
        train = tf.train.GradientDescentOptimizer(0.1).minimize(
            tf.reduce_sum(out2))
    # Masks are local variables: inspecting one before any forward pass
    # needs the local initializer.
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    before = sess.run(cell2.mask_variable)
    sess.run(train)
    assert not np.array_equal(before, sess.run(cell2.mask_variable))


def test_monitored_training_session_runs_update_ops_each_step(fresh_graph):
    global_step = tf.train.get_or_create_global_step()
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, use_vd=True,
                              seed=4)
    outputs = tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)[0]
    loss = tf.reduce_mean(tf.square(outputs - 0.5))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=global_step)
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    masks, losses = [], []
    with tf.train.MonitoredTrainingSession(config=config) as mon:
        assert fresh_graph.finalized
        for _ in range(4):
            mon.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
            mon.run(cell.get_vd_update_op())  # no new ops on a final graph
            masks.append(mon.run(cell.mask_variable))
            losses.append(mon.run([loss, train])[0])
        assert mon.run(global_step) == 4
    assert np.isfinite(losses).all()
    assert all(not np.array_equal(a, b) for a, b in zip(masks, masks[1:]))


def test_cells_in_one_scope_never_collide(sess):
    with tf.variable_scope("enc"):
        cells = [WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, use_vd=True)
                 for _ in range(2)]
        x = lstm_inputs()[:, 0]
        for cell in cells:
            cell(x, cell.zero_state(BATCH, tf.float32))
    # kernel and bias of each cell are global; the masks local.
    names = [v.name for v in tf.global_variables() + tf.local_variables()]
    assert len(names) == len(set(names)) == 6
    assert cells[0].mask_variable.name != cells[1].mask_variable.name


def test_default_scopes_are_lstm_cells():
    """Unnamed cells take LSTMCell's default scope, uniquified the same way
    (lstm_cell, lstm_cell_1, ...) and shared with cells named "lstm_cell",
    so variable names and checkpoints interchange with LSTMCell's."""
    def names(make_cell):
        with tf.Graph().as_default():
            x = lstm_inputs()[:, 0]
            with tf.variable_scope("enc"):
                for kwargs in ({}, {"name": "lstm_cell"}, {}):
                    cell = make_cell(UNITS, **kwargs)
                    cell(x, cell.zero_state(BATCH, tf.float32))
            return [v.op.name for v in tf.trainable_variables()]

    want = ["enc/lstm_cell%s/%s" % (suffix, var)
            for suffix in ("", "_1", "_2") for var in ("kernel", "bias")]
    assert names(tf.nn.rnn_cell.LSTMCell) == want
    assert names(WeightDropLSTMCell) == want


def test_partitioned_kernel(sess):
    cell = WeightDropLSTMCell(UNITS, num_unit_shards=2, weight_drop_kr=0.5,
                              initializer=tf.random_normal_initializer(
                                  seed=1), seed=3)
    tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    eff = sess.run(cell.effective_kernel)
    assert eff.shape == (DEPTH + UNITS, 4 * UNITS)
    assert not (eff[:DEPTH] == 0).any() and (eff[DEPTH:] == 0).any()


def test_config_round_trip():
    cell = WeightDropLSTMCell(7, use_peepholes=True, cell_clip=2.0,
                              num_proj=3, proj_clip=1.0, forget_bias=0.5,
                              activation="relu", weight_drop_kr=0.25,
                              use_vd=True, input_size=9,
                              drop_input_weights=True, is_train=False,
                              seed=5, name="my_cell")
    config = cell.get_config()
    for key in ("weight_drop_kr", "use_vd", "input_size",
                "drop_input_weights", "is_train", "sparsity", "num_units",
                "use_peepholes", "cell_clip", "num_proj", "proj_clip",
                "forget_bias", "activation", "seed", "name"):
        assert key in config
    clone = WeightDropLSTMCell.from_config(config)
    assert isinstance(clone, WeightDropLSTMCell)
    assert clone.get_config() == config


@pytest.mark.parametrize("kwargs,message", [
    (dict(weight_drop_kr=0.0), "weight_drop_kr"),
    (dict(weight_drop_kr=1.5), "weight_drop_kr"),
    (dict(weight_drop_kr=-0.5), "weight_drop_kr"),
    (dict(weight_drop_kr="0.5"), "weight_drop_kr"),
    (dict(sparsity="magnitude"), "sparsity"),
    (dict(use_vd=1), "use_vd"),
    (dict(input_size=0), "input_size"),
    (dict(is_train="yes"), "is_train"),
    (dict(num_units=0), "num_units"),
    (dict(num_units=2.5), "num_units"),
])
def test_constructor_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WeightDropLSTMCell(**dict({"num_units": UNITS}, **kwargs))


def test_bad_is_train_tensor_and_input_size_mismatch():
    with pytest.raises(ValueError, match="is_train"):
        WeightDropLSTMCell(UNITS, is_train=tf.constant(1.0))
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, input_size=DEPTH + 1)
    with pytest.raises(ValueError, match="input_size=6.*depth 5"):
        tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)
    early = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, use_vd=True,
                               drop_input_weights=True)
    with pytest.raises(ValueError, match="input_size"):
        early.get_vd_update_op()


def test_use_vd_with_keep_one_does_nothing(sess):
    cell = WeightDropLSTMCell(UNITS, use_vd=True)
    tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)
    assert cell.get_vd_update_op() == []
    assert cell.mask_variable is None
    assert cell.effective_kernel is cell._kernel
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []


@pytest.mark.parametrize("kwargs,part,width", [
    (dict(), "c", UNITS + 1), (dict(), "h", UNITS - 1),
    (dict(num_proj=3), "h", UNITS), (dict(state_is_tuple=False), None, 5),
    (dict(weight_drop_kr=0.5, is_quant=True), "c", UNITS + 2)])
def test_initial_state_of_another_width_is_a_named_error(kwargs, part,
                                                         width):
    cell = WeightDropLSTMCell(UNITS, **kwargs)
    size = cell.state_size
    if part is None:
        state = tf.zeros([BATCH, width])
        name, want = "state", size
    else:
        parts = dict(c=tf.zeros([BATCH, size.c]), h=tf.zeros([BATCH, size.h]))
        parts[part] = tf.zeros([BATCH, width])
        state = tf.nn.rnn_cell.LSTMStateTuple(parts["c"], parts["h"])
        name, want = "state.%s" % part, getattr(size, part)
    with pytest.raises(ValueError, match=r"%s must be %d wide .*got shape "
                       r"\(%d, %d\)" % (name.replace(".", r"\."), want, BATCH,
                                        width)):
        tf.nn.dynamic_rnn(cell, lstm_inputs(), initial_state=state)


def test_state_of_the_wrong_structure_is_a_named_error():
    cell = WeightDropLSTMCell(UNITS)
    with pytest.raises(ValueError, match="state must be an LSTMStateTuple"):
        cell(tf.zeros([BATCH, DEPTH]), tf.zeros([BATCH, 2 * UNITS]))


def test_is_train_of_unknown_rank_is_checked_when_run(sess):
    is_train = tf.placeholder(tf.bool)
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, is_train=is_train)
    outputs, _ = tf.nn.dynamic_rnn(cell, lstm_inputs(), dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    assert sess.run(outputs, {is_train: False}).shape == (BATCH, TIME, UNITS)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="is_train must be a scalar"):
        sess.run(outputs, {is_train: [True, False]})


# A stack of quantized cells trained, evaluated through a flag tensor and
# rebuilt for evaluation with is_train=False (as export_tflite does); TF
# 1.13's grappler logged "Failed to run optimizer ArithmeticOptimizer ...
# Pack node ... axis attribute is out of bounds: 0" for every run of the
# last graph (a tf.stack of the range reads, sliced back per name).
_QUANT_STACK_PROGRAM = """
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
from weight_drop_lstm import WeightDropLSTMCell

x_data = np.random.RandomState(0).randn(4, 5, 3).astype(np.float32)
for flag in ("tensor", True, False):
    with tf.Graph().as_default():
        is_train = (tf.placeholder_with_default(True, []) if flag == "tensor"
                    else flag)
        step = tf.train.get_or_create_global_step()
        cells = [WeightDropLSTMCell(8, weight_drop_kr=0.8, is_train=is_train,
                                    is_quant=True, quant_delay=1)
                 for _ in range(2)]
        outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells),
                                       tf.constant(x_data), dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(outputs))
        run = (tf.train.AdamOptimizer(0.01).minimize(loss, step)
               if flag is not False else loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(run)
            if flag == "tensor":
                sess.run(outputs, {is_train: False})
print("ran")
"""


def test_quantized_stack_runs_without_grappler_failures(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="0")
    proc = subprocess.run(
        [sys.executable, "-c", _QUANT_STACK_PROGRAM], cwd=str(tmp_path),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["ran"]
    failed = [line for line in proc.stderr.splitlines()
              if "Failed to run optimizer" in line]
    assert not failed, "\n".join(failed[:5])
