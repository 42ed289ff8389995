"""Run by tests/layers/test_eager.py in one subprocess: the cells, layers
and dropouts eagerly (TF 1.x: ``tf.enable_eager_execution()``; 2.x: its
default) and inside ``tf.function`` (where TensorFlow has it), compared
with ``tf.nn.rnn_cell.LSTMCell`` holding the same weights. Prints one JSON
line per case: {"case", "result": "ok" | "skip" | error type, "message"}.

  python eager_cases.py [case ...]    # all cases when none is named

The cases named ``tf_*`` mirror TensorFlow's own RNN tests (named in their
docstrings) with ``WeightDropLSTMCell`` in ``LSTMCell``'s place.
"""
import contextlib
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
import tensorflow as tf_root  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

if tf_root.__version__.startswith("1."):
    # Before anything else (tf.executing_eagerly() included) on TF 1.x.
    tf.enable_eager_execution()

import tf1_awd_sparse.base._quiet  # noqa: F401,E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import variational_dropout as vd  # noqa: E402
from support.references import np_lstm  # noqa: E402
from tf1_awd_sparse.base.compat import GraphModeError, nest  # noqa: E402
from sparse_layers.l0_regularization import rnn as l0_rnn  # noqa: E402
from tf1_awd_sparse.base.control_flow import one_run  # noqa: E402
from tf1_awd_sparse.transforms import techniques  # noqa: E402
from tf1_awd_sparse.transforms.magnitude_pruning import (  # noqa: E402
    MagnitudePruning)
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell  # noqa

BATCH, TIME, DEPTH, UNITS = 3, 6, 5, 8
FUNCTION = getattr(tf_root, "function", None)
CASES = {}


class Skip(Exception):
    """This TensorFlow lacks what the case needs."""


def case(func):
    CASES[func.__name__] = func
    return func


def _inputs(seed=0, depth=DEPTH):
    rng = np.random.RandomState(seed)
    return tf.constant(rng.randn(BATCH, TIME, depth).astype(np.float32))


def _relative(variable, scope):
    return variable.name.split(scope + "/", 1)[1]


def _copy_weights(source, source_scope, target, target_scope):
    """Assigns ``source``'s weights to the variables of ``target`` of the
    same relative name; returns how many."""
    values = {_relative(v, source_scope): v for v in source.variables}
    count = 0
    for variable in target.variables:
        name = _relative(variable, target_scope)
        if name in values:
            variable.assign(values[name])
            count += 1
    assert count == len(source.variables), (count, source.variables)
    return count


def _pair(run, inputs, **kwargs):
    """An LSTMCell ("ref") and a WeightDropLSTMCell ("wd") with the same
    weights, each run once by ``run(cell, inputs, scope)``; returns the
    cells and their results (the cell's after the copy)."""
    lstm_args = {k: v for k, v in kwargs.items() if k not in (
        "weight_drop_kr", "is_train", "use_vd", "drop_input_weights")}
    ref = tf.nn.rnn_cell.LSTMCell(UNITS, name="ref", **lstm_args)
    cell = WeightDropLSTMCell(UNITS, name="wd", **kwargs)
    want = run(ref, inputs, "a")
    run(cell, inputs, "b")
    _copy_weights(ref, "ref", cell, "wd")
    return ref, cell, want, run(cell, inputs, "b")


def _kernel(cell):
    """The cell's ``kernel`` variable."""
    return [v for v in cell.variables if v.name.endswith("/kernel:0")
            and "projection" not in v.name][0]


def _dynamic(cell, inputs, scope, **kwargs):
    return tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32, scope=scope,
                             **kwargs)


def _static(cell, inputs, scope, **kwargs):
    outputs, state = tf.nn.static_rnn(cell, tf.unstack(inputs, axis=1),
                                      dtype=tf.float32, scope=scope,
                                      **kwargs)
    return tf.stack(outputs, 1), state


def _close(got, want, atol=1e-5):
    for a, b in zip(nest.flatten(got), nest.flatten(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol)


# ----------------------------------------------------------------------
# The cell equals LSTMCell with the same weights.
# ----------------------------------------------------------------------
@case
def same_as_lstmcell_kr1():
    """weight_drop_kr=1.0: dynamic_rnn and static_rnn, as LSTMCell."""
    for run in (_dynamic, _static):
        for extra in ({}, {"use_peepholes": True, "num_proj": 4,
                           "cell_clip": 2.0}):
            _, _, want, got = _pair(run, _inputs(), **extra)
            _close(got, want)


@case
def same_as_lstmcell_eval():
    """DropConnect under is_train=False (a bool, and a tensor)."""
    for flag in (False, tf.constant(False)):
        _, _, want, got = _pair(_dynamic, _inputs(), weight_drop_kr=0.5,
                                is_train=flag)
        _close(got, want)


@case
def layer_same_as_lstmcell():
    """WeightDropLSTM(weight_drop_kr=1.0) eagerly, as dynamic_rnn of
    LSTMCell."""
    ref = tf.nn.rnn_cell.LSTMCell(UNITS, name="ref")
    want = _dynamic(ref, _inputs(), "a")
    layer = WeightDropLSTM(UNITS, name="wd")
    layer(_inputs())
    _copy_weights(ref, "ref", layer.cell, "wd")
    _close(layer(_inputs()), want)


def _binomial_ok(kept, total, keep):
    """|kept / total - keep| within 5 standard deviations (closed form)."""
    bound = 5.0 * np.sqrt(keep * (1.0 - keep) / total)
    assert abs(kept / float(total) - keep) <= bound, (kept, total, keep)


def _check_one_mask_run(cell, inputs, outputs, scope):
    """The outputs are LSTMCell's with the cell's effective kernel of this
    call: one mask for every step. Returns the mask of the h rows."""
    ref = tf.nn.rnn_cell.LSTMCell(UNITS, name=scope)
    _dynamic(ref, inputs, scope)
    ref.variables[0].assign(cell.effective_kernel)
    ref.variables[1].assign(cell.bias)
    _close(outputs, _dynamic(ref, inputs, scope)[0])
    kernel = _kernel(cell).numpy()
    effective = cell.effective_kernel.numpy()
    # Input rows untouched; h rows 0 or kernel / keep.
    np.testing.assert_allclose(effective[:DEPTH], kernel[:DEPTH])
    rows = effective[DEPTH:]
    kept = rows != 0
    np.testing.assert_allclose(rows[kept],
                               kernel[DEPTH:][kept] / cell.weight_drop_kr,
                               rtol=1e-6)
    return kept


@case
def dropconnect_mask_statistics():
    """Eagerly: one mask per call of dynamic_rnn / static_rnn /
    WeightDropLSTM, its keep rate within the binomial bound, a new mask at
    each call."""
    keep, inputs = 0.6, _inputs()
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=keep, name="wd")
    layer = WeightDropLSTM(UNITS, weight_drop_kr=keep, name="layer")
    masks = []
    for index in range(3):
        outputs = _dynamic(cell, inputs, "d")[0]
        masks.append(_check_one_mask_run(cell, inputs, outputs, "r%d" % index))
    outputs = _static(cell, inputs, "d")[0]
    masks.append(_check_one_mask_run(cell, inputs, outputs, "s"))
    outputs = layer(inputs)[0]
    masks.append(_check_one_mask_run(layer.cell, inputs, outputs, "l"))
    for first, second in zip(masks, masks[1:]):
        assert (first != second).any(), "the same mask in two calls"
    stacked = np.stack(masks)
    _binomial_ok(stacked.sum(), stacked.size, keep)


@case
def one_run_block_is_one_run():
    """Eagerly, cell calls of a loop of one's own: a run each, one run
    inside control_flow.one_run()."""
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5)
    x, state = _inputs()[:, 0], cell.zero_state(BATCH, tf.float32)
    kernels = []
    with one_run():
        for _ in range(3):
            state = cell(x, state)[1]
            kernels.append(cell.effective_kernel.numpy())
    assert all((k == kernels[0]).all() for k in kernels)
    cell(x, state)
    first = cell.effective_kernel.numpy()
    cell(x, state)
    assert (cell.effective_kernel.numpy() != first).any()
    assert (first != kernels[0]).any()


@case
def nested_one_run_blocks_are_the_outermost():
    """Eagerly, WeightDropLSTM's call opens a one_run block of its own;
    inside an outer block the outermost is the run (docs/cells.md): two
    calls of the layer and a step of its cell share one dropped kernel,
    and a call after the block draws another."""
    tf.set_random_seed(42)
    layer = WeightDropLSTM(UNITS, weight_drop_kr=0.5, name="nested")
    inputs = _inputs()
    kernels = []
    with one_run():
        for _ in range(2):
            layer(inputs)
            kernels.append(layer.cell.effective_kernel.numpy())
        layer.cell(inputs[:, 0], layer.cell.zero_state(BATCH, tf.float32))
        kernels.append(layer.cell.effective_kernel.numpy())
    assert all((k == kernels[0]).all() for k in kernels), \
        "two runs inside one outer one_run block"
    layer(inputs)
    assert (layer.cell.effective_kernel.numpy() != kernels[0]).any()


@case
def held_mask_resampled_by_its_update():
    """use_vd=True eagerly: the mask stays until the update op (a callable
    eagerly) is called; VariationalDropout's the same."""
    inputs = _inputs()
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, use_vd=True)
    first = _dynamic(cell, inputs, "h")[0].numpy()
    mask = cell.mask_variable.numpy()
    _close(_dynamic(cell, inputs, "h")[0], first)
    for update in cell.get_vd_update_op():
        update()
    assert (cell.mask_variable.numpy() != mask).any()
    assert np.abs(_dynamic(cell, inputs, "h")[0].numpy() - first).max() > 0
    dropout = vd.VariationalDropout([BATCH, TIME, DEPTH], 0.5)
    before = dropout(inputs).numpy()
    _close(dropout(inputs), before)
    for update in dropout.get_update_mask_op():
        update()
    assert np.abs(dropout(inputs).numpy() - before).max() > 0


@case
def gradients_reach_the_kernel():
    """Under a GradientTape, the dropped kernel of the call is on the tape:
    the kernel's gradient is zero exactly at dropped h weights."""
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, name="wd")
    inputs = _inputs()
    _dynamic(cell, inputs, "g")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(_dynamic(cell, inputs, "g")[0])
    kernel = _kernel(cell)
    grad = tape.gradient(loss, kernel).numpy()
    dropped = cell.effective_kernel.numpy()[DEPTH:] == 0
    assert (grad[DEPTH:][dropped] == 0).all()
    assert (grad[DEPTH:][~dropped] != 0).mean() > 0.9


@case
def trains_with_a_tf_train_optimizer():
    """Eagerly, tf.train's optimizer minimizes a loss of WeightDropLSTM
    (a callable loss, as eager minimize takes it): every weight moves and
    the loss falls; the held mask is resampled between steps."""
    layer = WeightDropLSTM(UNITS, weight_drop_kr=0.5, use_vd=True)
    inputs = _inputs()

    def loss():
        return tf.reduce_mean(tf.square(layer(inputs)[0] - 0.5))

    losses = [loss().numpy()]
    before = [v.numpy() for v in layer.cell.trainable_variables]
    optimizer = tf.train.GradientDescentOptimizer(0.5)
    for _ in range(5):
        optimizer.minimize(loss, var_list=layer.cell.trainable_variables)
        for update in layer.get_vd_update_op():
            update()
        losses.append(loss().numpy())
    assert all((v.numpy() != b).any() for v, b in zip(
        layer.cell.trainable_variables, before))
    assert losses[-1] < losses[0], losses


@case
def checkpoints_move_between_graph_and_eager():
    """A checkpoint written in graph mode restores eagerly, and back."""
    path = os.path.join(tempfile.mkdtemp(), "ckpt")
    inputs = np.random.RandomState(1).randn(BATCH, TIME, DEPTH).astype(
        np.float32)
    with tf.Graph().as_default():
        cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, is_train=False)
        out = _dynamic(cell, tf.constant(inputs), "rnn")[0]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            graph_out = sess.run(out)
            saver.save(sess, path)
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, is_train=False)
    _dynamic(cell, tf.constant(inputs), "rnn")
    tf.train.Saver(var_list=cell.trainable_variables).restore(None, path)
    _close(_dynamic(cell, tf.constant(inputs), "rnn")[0], graph_out)
    for variable in cell.trainable_variables:
        variable.assign(variable * 0.5)
    eager_out = _dynamic(cell, tf.constant(inputs), "rnn")[0].numpy()
    tf.train.Saver(var_list=cell.trainable_variables).save(None, path)
    with tf.Graph().as_default():
        cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, is_train=False)
        out = _dynamic(cell, tf.constant(inputs), "rnn")[0]
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            _close(sess.run(out), eager_out)


@case
def sparse_cells_run():
    """The sparse cells (layers/sparse and sparsity=) and pruning_mask
    run eagerly; a new weight sample at each call."""
    inputs = _inputs()
    for kwargs in ({"sparsity": "l0"}, {"sparsity": "variational_dropout"},
                   {"pruning_mask": True, "weight_drop_kr": 0.5}):
        cell = WeightDropLSTMCell(UNITS, **kwargs)
        outputs = _dynamic(cell, inputs, "s")[0]
        assert np.isfinite(outputs.numpy()).all(), kwargs
    rng = np.random.RandomState(0)
    theta = tf.Variable(0.3 * rng.randn(DEPTH + UNITS, 4 * UNITS).astype(
        np.float32))
    log_alpha = tf.Variable(np.zeros([DEPTH + UNITS, 4 * UNITS], np.float32))
    cell = l0_rnn.LSTMCell((theta, log_alpha), tf.zeros([4 * UNITS]), UNITS,
                           training=True)
    first = _dynamic(cell, inputs, "l0")[0].numpy()
    assert np.isfinite(first).all()
    assert np.abs(_dynamic(cell, inputs, "l0")[0].numpy() - first).max() > 0


@case
def quant_cell_refuses_with_the_fix():
    """is_quant=True eagerly and inside tf.function: one GraphModeError
    naming the cell and the fix (docs/versions.md; with AutoGraph on,
    tf.function re-raises it as its StagingError, with the message)."""
    runs = [lambda cell: _dynamic(cell, _inputs(), "q")]
    if FUNCTION is not None:
        runs.append(lambda cell: FUNCTION(
            lambda x: _dynamic(cell, x, "fq")[0], autograph=False)(_inputs()))
    for run in runs:
        try:
            run(WeightDropLSTMCell(UNITS, is_quant=True))
        except GraphModeError as error:
            assert "WeightDropLSTMCell(is_quant=True)" in str(error)
            assert "tf.compat.v1.disable_v2_behavior()" in str(error)
        else:
            raise AssertionError("is_quant=True ran outside a v1 graph")


@case
def graph_only_entry_points_refuse():
    """MagnitudePruning eagerly: one GraphModeError naming it and the fix
    (docs/versions.md); the sparse registry registers nothing eagerly."""
    try:
        MagnitudePruning(0, 10, 1, 0.5)
    except GraphModeError as error:
        assert "MagnitudePruning" in str(error)
        assert "tf.compat.v1.disable_v2_behavior()" in str(error)
    else:
        raise AssertionError("MagnitudePruning ran eagerly")
    cell = WeightDropLSTMCell(UNITS, sparsity="l0")
    _dynamic(cell, _inputs(), "reg")
    techniques.register_pair("l0", (_kernel(cell), cell.sparse_aux_variable))
    assert not tf.get_collection(techniques.get("l0").collection)


# ----------------------------------------------------------------------
# TensorFlow's own tests, with the cell in LSTMCell's place.
# ----------------------------------------------------------------------
def _dynamic_vs_static(sequence_length):
    """core_rnn_test.py LSTMTest::testDynamicEquivalentToStaticRNN[With
    SequenceLength]: outputs, final state and gradients agree."""
    inputs = _inputs(3)
    lengths = None if sequence_length is None else tf.constant(
        sequence_length)
    cell = WeightDropLSTMCell(UNITS, use_peepholes=True, num_proj=4,
                              initializer=tf.random_uniform_initializer(
                                  -0.01, 0.01, seed=3))
    results = []
    for run in (_static, _dynamic):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs, state = run(cell, inputs, "rnn",
                                 sequence_length=lengths)
            loss = tf.reduce_sum(outputs) + tf.reduce_sum(state.c)
        results.append((outputs, state, tape.gradient(loss, inputs)))
    _close(results[0], results[1])


@case
def tf_dynamic_equivalent_to_static_rnn():
    _dynamic_vs_static(None)


@case
def tf_dynamic_equivalent_to_static_rnn_with_sequence_length():
    _dynamic_vs_static([TIME, 2, 4])


@case
def tf_dynamic_rnn_with_tuple_states():
    """core_rnn_test.py LSTMTest::testDynamicRNNWithTupleStates: a
    MultiRNNCell of two projected cells, tuple states, static = dynamic."""
    cells = tf.nn.rnn_cell.MultiRNNCell([
        WeightDropLSTMCell(UNITS, num_proj=4, use_peepholes=True)
        for _ in range(2)])
    inputs = _inputs(4)
    static = _static(cells, inputs, "rnn")
    dynamic = _dynamic(cells, inputs, "rnn")
    assert isinstance(dynamic[1], tuple) and len(dynamic[1]) == 2
    assert all(isinstance(s, tf.nn.rnn_cell.LSTMStateTuple)
               for s in dynamic[1])
    _close(static, dynamic)


@case
def tf_dynamic_rnn_with_nested_tuple_states():
    """core_rnn_test.py LSTMTest::testDynamicRNNWithNestedTupleStates:
    nested tuple states (a MultiRNNCell inside a MultiRNNCell), static =
    dynamic."""
    cells = tf.nn.rnn_cell.MultiRNNCell([
        tf.nn.rnn_cell.MultiRNNCell([WeightDropLSTMCell(UNITS, num_proj=4),
                                     WeightDropLSTMCell(UNITS)]),
        WeightDropLSTMCell(UNITS)])
    inputs = _inputs(5)
    static = _static(cells, inputs, "rnn")
    dynamic = _dynamic(cells, inputs, "rnn")
    assert nest.flatten(dynamic[1]) and isinstance(dynamic[1][0][0],
                                                      tuple)
    _close(static, dynamic)


@case
def tf_cells_build():
    """rnn_test.py RNNTest::testCellsBuild: build on a tuple or a
    TensorShape, float32 and float64 variables of the right shapes; an
    unknown depth raises ValueError."""
    for dtype in (tf.float32, tf.float64):
        for shape in ((None, 3), tf.TensorShape([None, 3])):
            cell = WeightDropLSTMCell(UNITS, dtype=dtype)
            cell.build(shape)
            assert cell.built
            kernel = _kernel(cell)
            assert kernel.shape.as_list() == [3 + UNITS, 4 * UNITS]
            assert kernel.dtype.base_dtype == dtype
    try:
        WeightDropLSTMCell(UNITS).build((None, None))
    except ValueError:
        return
    raise AssertionError("build on an unknown depth did not raise")


@case
def tf_dropout_wrapper():
    """rnn_cell_test.py DropoutWrapperTest::testDropoutWrapper*: keep
    probabilities of 1 change nothing (KeepAll); input / output / state
    dropout and variational_recurrent run eagerly; KeepNoOutput,
    KeepNoStateExceptLSTMCellMemory, KeepNoInput, RecurrentOutput."""
    inputs = _inputs(6)
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=1.0)
    want = _dynamic(cell, inputs, "rnn")
    wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, 1.0, 1.0, 1.0)
    _close(_dynamic(wrapped, inputs, "rnn"), want)
    for kwargs in ({"input_keep_prob": 0.5}, {"output_keep_prob": 0.5},
                   {"state_keep_prob": 0.5},
                   {"input_keep_prob": 0.5, "state_keep_prob": 0.5,
                    "output_keep_prob": 0.5, "variational_recurrent": True,
                    "input_size": DEPTH, "dtype": tf.float32}):
        wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, **kwargs)
        outputs = _dynamic(wrapped, inputs, "rnn")[0].numpy()
        assert np.isfinite(outputs).all() and outputs.shape == (
            BATCH, TIME, UNITS)
    # testDropoutWrapperKeepNoOutput: every output dropped, the state not.
    wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=1e-10)
    outputs, state = _dynamic(wrapped, inputs, "rnn")
    assert not outputs.numpy().any()
    _close(state, want[1])
    # testDropoutWrapperKeepNoStateExceptLSTMCellMemory: h dropped after
    # each step, c kept (DropoutWrapper never drops an LSTM's memory).
    wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, state_keep_prob=1e-10)
    state = cell.zero_state(BATCH, tf.float32)
    output, new_state = wrapped(inputs[:, 0], state)
    plain_output, plain_state = cell(inputs[:, 0], state)
    _close(output, plain_output)
    _close(new_state.c, plain_state.c)
    assert not new_state.h.numpy().any()
    # testDropoutWrapperKeepNoInput: the cell sees zeros.
    wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, input_keep_prob=1e-10)
    _close(wrapped(inputs[:, 0], state), cell(tf.zeros_like(inputs[:, 0]),
                                                 state))
    # testDropoutWrapperRecurrentOutput: one output mask for every step.
    wrapped = tf.nn.rnn_cell.DropoutWrapper(
        cell, output_keep_prob=0.5, variational_recurrent=True,
        dtype=tf.float32)
    zeros = _dynamic(wrapped, inputs, "rnn")[0].numpy() == 0
    assert zeros.any() and (zeros == zeros[:, :1]).all()


# ----------------------------------------------------------------------
# Graph mode with control flow v2.
# ----------------------------------------------------------------------
@contextlib.contextmanager
def _v2_while_graph():
    """A new default graph in which dynamic_rnn builds a v2 while loop
    (TF 2.x in a graph; TF 1.15 with tf.enable_control_flow_v2(), turned
    off again after)."""
    if not hasattr(tf, "enable_control_flow_v2"):
        raise Skip("this TensorFlow has no control flow v2")
    tf.enable_control_flow_v2()
    try:
        with tf.Graph().as_default() as graph:
            yield graph
    finally:
        if tf_root.__version__.startswith("1."):
            tf.disable_control_flow_v2()


@case
def control_flow_v2_one_mask_per_session_run():
    """Graph mode, dynamic_rnn's loop a v2 While: the dropped kernel is
    built outside the loop body (one mask per session.run, a new one at
    the next); the held mask's update op is in the graph's UPDATE_OPS and
    holds the mask until it runs."""
    inputs = np.random.RandomState(2).randn(BATCH, TIME, DEPTH).astype(
        np.float32)
    with _v2_while_graph() as graph:
        cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5)
        out = _dynamic(cell, tf.constant(inputs), "rnn")[0]
        held = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, use_vd=True)
        held_out = _dynamic(held, tf.constant(inputs), "held")[0]
        assert {"While", "StatelessWhile"} & {
            op.type for op in graph.get_operations()}, "no v2 loop"
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == \
            held.get_vd_update_op()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            bias = sess.run(cell.bias)
            kernels = []
            for _ in range(2):
                got, kernel = sess.run([out, cell.effective_kernel])
                _close(got, np_lstm(inputs, kernel, bias), atol=1e-5)
                kernels.append(kernel)
            assert (kernels[0] != kernels[1]).any()
            first = sess.run(held_out)
            _close(sess.run(held_out), first)
            sess.run(held.get_vd_update_op())
            assert np.abs(sess.run(held_out) - first).max() > 0


# ----------------------------------------------------------------------
# tf.function.
# ----------------------------------------------------------------------
def _needs_function():
    if FUNCTION is None:
        raise Skip("this TensorFlow has no tf.function")


@case
def function_same_as_eager_and_lstmcell():
    """weight_drop_kr=1.0 inside tf.function (dynamic_rnn's loop in the
    function): LSTMCell's outputs."""
    _needs_function()
    ref = tf.nn.rnn_cell.LSTMCell(UNITS, name="ref")
    cell = WeightDropLSTMCell(UNITS, name="wd")
    want = _dynamic(ref, _inputs(), "a")
    _dynamic(cell, _inputs(), "b")
    _copy_weights(ref, "ref", cell, "wd")
    run = FUNCTION(lambda x: _dynamic(cell, x, "b"))
    _close(run(_inputs()), want)
    _close(run(_inputs()), want)


@case
def function_one_mask_per_call():
    """weight_drop_kr < 1 inside tf.function: one mask per call of the
    function (outside its loop), a new one at the next call; a single cell
    step in a function runs too (RNNCellTest::testSavedModel's call)."""
    _needs_function()
    keep, inputs = 0.5, _inputs()
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=keep, name="wd")
    _dynamic(cell, inputs, "f")
    run = FUNCTION(lambda x: (_dynamic(cell, x, "f")[0],
                              tf.identity(cell.effective_kernel)))
    masks = []
    for index in range(2):
        outputs, kernel = run(inputs)
        ref = tf.nn.rnn_cell.LSTMCell(UNITS, name="r%d" % index)
        _dynamic(ref, inputs, "r")
        ref.variables[0].assign(kernel)
        ref.variables[1].assign(cell.bias)
        _close(outputs, _dynamic(ref, inputs, "r")[0])
        masks.append(kernel.numpy()[DEPTH:] != 0)
    assert (masks[0] != masks[1]).any()
    _binomial_ok(np.sum(masks), np.size(masks), keep)
    state = cell.zero_state(BATCH, tf.float32)
    step = FUNCTION(lambda x, s: cell(x, s))
    assert step(inputs[:, 0], state)[0].shape == (BATCH, UNITS)


@case
def function_held_mask_and_layer():
    """use_vd=True inside tf.function: the mask holds across calls until a
    function calls the update op; WeightDropLSTM in a function."""
    _needs_function()
    inputs = _inputs()
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=0.5, use_vd=True)
    run = FUNCTION(lambda x: _dynamic(cell, x, "fh")[0])
    first = run(inputs).numpy()
    _close(run(inputs), first)
    mask = cell.mask_variable.numpy()
    FUNCTION(lambda: [cell.get_vd_update_op(), None][1])()
    assert (cell.mask_variable.numpy() != mask).any()
    layer = WeightDropLSTM(UNITS, weight_drop_kr=0.5)
    out = FUNCTION(lambda x: layer(x)[0])(inputs).numpy()
    assert np.isfinite(out).all() and out.shape == (BATCH, TIME, UNITS)
    # A sparse cell and a held-mask dropout in a function: a new weight
    # sample per call; the dropout mask held.
    rng = np.random.RandomState(0)
    theta = tf.Variable(0.3 * rng.randn(DEPTH + UNITS, 4 * UNITS).astype(
        np.float32))
    log_alpha = tf.Variable(np.zeros([DEPTH + UNITS, 4 * UNITS], np.float32))
    sparse = l0_rnn.LSTMCell((theta, log_alpha), tf.zeros([4 * UNITS]),
                             UNITS, training=True)
    dropout = vd.VariationalDropout([BATCH, TIME, DEPTH], 0.5)
    run = FUNCTION(lambda x: (_dynamic(sparse, x, "fl0")[0], dropout(x)))
    (first, masked), (second, masked_again) = run(inputs), run(inputs)
    assert np.abs(first.numpy() - second.numpy()).max() > 0
    _close(masked, masked_again)


@case
def tf_saved_model():
    """rnn_cell_test.py RNNCellTest::testSavedModel: a module holding the
    cell and a tf.function of one step, saved and loaded, gives the same
    output."""
    _needs_function()
    if not hasattr(tf_root, "Module"):
        raise Skip("this TensorFlow has no tf.Module")
    cell = WeightDropLSTMCell(UNITS, weight_drop_kr=1.0)
    module = tf_root.Module()
    module.cell = cell
    x, state = _inputs()[:, 0], cell.zero_state(BATCH, tf.float32)
    module.step = FUNCTION(lambda x, c, h: cell(x, (c, h))[0],
                           input_signature=[
                               tf.TensorSpec([None, DEPTH], tf.float32),
                               tf.TensorSpec([None, UNITS], tf.float32),
                               tf.TensorSpec([None, UNITS], tf.float32)])
    want = module.step(x, state.c, state.h)
    path = os.path.join(tempfile.mkdtemp(), "saved")
    saved_model = tf_root.compat.v2.saved_model   # TF 1.15: not the v1 one
    saved_model.save(module, path)
    loaded = saved_model.load(path)
    _close(loaded.step(x, state.c, state.h), want)


#: Cases that need a fresh draw in each new tf.function: with a global
#: seed, an unseeded random op gets its seed from the global one and its
#: position in the function's graph, so the held mask's update op in a
#: new function draws the very mask the first function drew (seen: TF
#: 2.15, OMP_NUM_THREADS=1 run of issue 41). Unseeded, what they assert
#: fails with probability 2**-(number of weights) at most.
UNSEEDED = {"function_held_mask_and_layer"}


def main(names):
    for name in names or sorted(CASES):
        record = {"case": name, "result": "ok", "message": ""}
        try:
            # Seeded (issue 41, item 4): unseeded eager draws (default
            # initializers, masks) are then the same in every run; a
            # case's own tf.set_random_seed replaces it. Not the cases
            # in UNSEEDED.
            tf.set_random_seed(None if name in UNSEEDED else 0)
            CASES[name]()
        except Skip as error:
            record.update(result="skip", message=str(error))
        except Exception as error:  # pylint: disable=broad-except
            record["result"] = type(error).__name__
            record["message"] = str(error)[:2000]
        print(json.dumps(record))
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
