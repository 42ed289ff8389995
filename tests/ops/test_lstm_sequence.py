"""lstm_sequence against tf.nn.rnn_cell.LSTMCell under tf.nn.dynamic_rnn.

Every check builds the reference from LSTMCell with the same weights (its
kernel [D+H, 4H] split into W_x = kernel[:D] for the hoisted projection and
W_h = kernel[D:] for the recurrence) and compares outputs, final state and
gradients; no expected number is hard-coded.
"""
import os
import tempfile

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.tolerances import lstm_atol
from tf1_awd_sparse.ops.lstm_sequence import lstm_sequence

T, B, D, H = 5, 3, 4, 6


def _tolerance(dtype, steps=T):
    """lstm_sequence against LSTMCell under dynamic_rnn: the same function
    summed in other orders. Forward: lstm_atol over ``steps`` steps of
    gate sums of at most 4 H + H + 1 terms (identity input) of sum |term|
    <= 20 (|x| <~ 4, then 0.5 randn weights times |h| <= 1 and an O(1)
    bias); the backward pass is the same recurrence run back: twice that.
    Used as rtol and atol (the gradients are sums of up to T B H terms of
    size ~1, so their error is relative to their size)."""
    return 2 * lstm_atol(steps, 5 * H + 1, 20.0, dtype.as_numpy_dtype)


TOLERANCE = {tf.float32: _tolerance(tf.float32),
             tf.float64: _tolerance(tf.float64)}
# Per batch row; None = no sequence_length. Mixed (with a zero and one
# longer than T), all equal below T, all equal to T.
LENGTHS = {"none": None, "mixed": [T + 2, 0, 2], "equal": [3, 3, 3],
           "full": [T, T, T]}


class _Problem(object):
    """Random weights and inputs, a reference LSTMCell graph and an
    lstm_sequence graph on the same tensors, and a loss on each that uses
    the outputs and both final states (so every upstream gradient is
    non-zero)."""

    def __init__(self, dtype, lengths, static_time=True, batch=B,
                 identity_input=False, seed=0):
        rng = np.random.RandomState(seed)
        np_dtype = dtype.as_numpy_dtype
        depth = 4 * H if identity_input else D
        kernel = 0.5 * rng.randn(depth + H, 4 * H)
        if identity_input:
            # x_t @ I + 0 is exactly x_t: LSTMCell then sees the projected
            # inputs themselves, so d loss / d x is d loss / d P.
            kernel[:depth] = np.eye(4 * H)
        bias = np.zeros(4 * H) if identity_input else rng.randn(4 * H)
        self.feed = {}
        x_value = rng.randn(T, batch, depth).astype(np_dtype)
        if static_time:
            self.x = tf.constant(x_value)
        else:
            self.x = tf.placeholder(dtype, [None, batch, depth])
            self.feed[self.x] = x_value
        self.c0 = tf.constant(rng.randn(batch, H).astype(np_dtype))
        self.h0 = tf.constant(rng.randn(batch, H).astype(np_dtype))
        self.kernel = tf.constant(kernel.astype(np_dtype))
        self.bias = tf.constant(bias.astype(np_dtype))
        self.length = None if lengths is None else tf.constant(
            lengths[:batch], dtype=tf.int32)
        self.weights = [tf.constant(rng.randn(*shape).astype(np_dtype))
                        for shape in ((T, batch, H), (batch, H), (batch, H))]
        self.identity_input = identity_input
        self.dtype = dtype
        self.depth = depth
        self.label = "%s, lengths %s, %s T, batch %d%s" % (
            dtype.name, lengths, "static" if static_time else "dynamic",
            batch, ", identity input weights" if identity_input else "")

    def _loss(self, outputs, c, h):
        w_out, w_c, w_h = self.weights
        return (tf.reduce_sum(outputs * w_out) + tf.reduce_sum(c * w_c)
                + tf.reduce_sum(h * w_h) + tf.reduce_sum(tf.square(h)))

    def _results(self, outputs, c, h, kernel, bias):
        """Named results: the forward values and the loss gradients. With
        ``identity_input`` only the recurrent rows of the kernel are
        compared (the input rows are the fixed identity) and the bias (zero,
        unused by the sequence side) is not."""
        loss = self._loss(outputs, c, h)
        d_x, d_kernel, d_bias, d_c0, d_h0 = tf.gradients(
            loss, [self.x, kernel, bias, self.c0, self.h0])
        results = {"outputs": outputs, "final c": c, "final h": h,
                   "d x": d_x, "d kernel": d_kernel, "d bias": d_bias,
                   "d c0": d_c0, "d h0": d_h0}
        if self.identity_input:
            results["d kernel"] = d_kernel[self.depth:]
            del results["d bias"]
        return results

    def reference(self):
        """LSTMCell under dynamic_rnn; its kernel and bias variables get
        the constants' values once the session starts (``compare``)."""
        cell = tf.nn.rnn_cell.LSTMCell(H, dtype=self.dtype)
        with tf.variable_scope(None, default_name="reference"):
            outputs, state = tf.nn.dynamic_rnn(
                cell, self.x, sequence_length=self.length, time_major=True,
                initial_state=tf.nn.rnn_cell.LSTMStateTuple(self.c0,
                                                            self.h0))
        kernel_var, bias_var = cell.weights
        self.assign = [kernel_var.assign(self.kernel),
                       bias_var.assign(self.bias)]
        return self._results(outputs, state.c, state.h, kernel_var,
                             bias_var)

    def sequence(self, **kwargs):
        """Hoisted projection + lstm_sequence on the same constants."""
        w_x, w_h = self.kernel[:self.depth], self.kernel[self.depth:]
        if self.identity_input:
            projected = self.x
        else:
            steps = tf.shape(self.x)[0]
            flat = tf.reshape(self.x, [-1, self.depth])
            projected = tf.reshape(tf.matmul(flat, w_x) + self.bias,
                                   [steps, -1, 4 * H])
        outputs, (c, h) = lstm_sequence(projected, w_h, self.c0, self.h0,
                                        sequence_length=self.length,
                                        **kwargs)
        self.outputs = outputs
        return self._results(outputs, c, h, self.kernel, self.bias)



def _compare(sess, problems, **kwargs):
    """Builds the reference and the sequence graph of every problem, runs
    them all in one session call (graph optimization dominates the time of
    these small cases) and asserts every named result agrees to the
    dtype's tolerance. Returns our values, one dict per problem."""
    pairs = [(problem.sequence(**kwargs), problem.reference())
             for problem in problems]
    feed = {}
    for problem in problems:
        feed.update(problem.feed)
    sess.run([problem.assign for problem in problems])
    results = sess.run(pairs, feed)
    for problem, (got, want) in zip(problems, results):
        tolerance = TOLERANCE[problem.dtype]
        assert sorted(got) == sorted(want)
        for name in sorted(want):
            np.testing.assert_allclose(
                got[name], want[name], rtol=tolerance, atol=tolerance,
                err_msg="%s (%s)" % (name, problem.label))
    return [got for got, _ in results]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64],
                         ids=["float32", "float64"])
@pytest.mark.parametrize("static_time", [True, False],
                         ids=["static_T", "dynamic_T"])
def test_matches_lstm_cell(sess, dtype, static_time):
    """Outputs, final state and the gradients w.r.t. x, the whole kernel
    (W_x and W_h rows), the bias and the initial state, without and with
    sequence lengths (mixed with a zero and one past T, all equal, all T).
    """
    names = sorted(LENGTHS)
    problems = [_Problem(dtype, LENGTHS[name], static_time, seed=seed)
                for seed, name in enumerate(names)]
    results = _compare(sess, problems)
    for name, got in zip(names, results):
        assert got["outputs"].shape == (T, B, H)
        for b, length in enumerate(LENGTHS[name] or []):
            assert not got["outputs"][length:, b].any()  # zero past it
    for problem in problems:
        assert problem.outputs.get_shape().as_list() == (
            [T if static_time else None, B, H])


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64],
                         ids=["float32", "float64"])
def test_gradient_of_projected_inputs(sess, dtype):
    """d loss / d projected_inputs itself: the reference's input weights
    are the identity (and its bias zero), so its input is the projection."""
    _compare(sess, [_Problem(dtype, LENGTHS[name], identity_input=True)
                    for name in ("none", "mixed")])


def test_batch_of_one(sess):
    _compare(sess, [_Problem(tf.float64, lengths, static_time, batch=1)
                    for lengths in (None, [2])
                    for static_time in (True, False)])


def test_parallel_iterations_and_swap_memory_give_the_same_result(sess):
    _compare(sess, [_Problem(tf.float64, LENGTHS["mixed"])],
             parallel_iterations=8, swap_memory=True)


@pytest.mark.parametrize("used", ["outputs", "final_state"])
def test_gradient_when_only_part_of_the_result_is_used(sess, used):
    """Unused results reach the gradient as zeros or None; both work."""
    rng = np.random.RandomState(1)
    projected = tf.constant(rng.randn(T, B, 4 * H))
    kernel = tf.constant(0.5 * rng.randn(H, 4 * H))
    c0 = tf.constant(rng.randn(B, H))
    h0 = tf.zeros([B, H], tf.float64)
    outputs, (c, h) = lstm_sequence(projected, kernel, c0, h0)
    cell = tf.nn.rnn_cell.LSTMCell(H, dtype=tf.float64)
    ref_outputs, ref_state = tf.nn.dynamic_rnn(
        cell, projected, time_major=True,
        initial_state=tf.nn.rnn_cell.LSTMStateTuple(c0, h0))
    kernel_var, bias_var = cell.weights
    assign = [kernel_var.assign(tf.concat([tf.eye(4 * H, dtype=tf.float64),
                                           kernel], 0)),
              bias_var.assign(tf.zeros([4 * H], tf.float64))]
    if used == "outputs":
        loss, ref_loss = (tf.reduce_sum(tf.sin(outputs)),
                          tf.reduce_sum(tf.sin(ref_outputs)))
    else:
        loss, ref_loss = (tf.reduce_sum(c * h),
                          tf.reduce_sum(ref_state.c * ref_state.h))
    got = tf.gradients(loss, [projected, kernel, c0])
    want = tf.gradients(ref_loss, [projected, kernel_var, c0])
    sess.run(tf.global_variables_initializer())
    sess.run(assign)
    got, want = sess.run([got, want])
    want[1] = want[1][4 * H:]
    tol = TOLERANCE[tf.float64]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("branch", [True, False])
def test_inside_tf_cond(sess, branch):
    """The backward loop is built in the forward's cond branch: gradients
    are right whichever branch runs."""
    rng = np.random.RandomState(2)
    projected = tf.constant(rng.randn(T, B, 4 * H))
    kernel = tf.constant(0.5 * rng.randn(H, 4 * H))
    c0 = tf.constant(rng.randn(B, H))
    pred = tf.placeholder(tf.bool, [])

    def run(fn):
        def taken():
            outputs, (c, _) = fn()
            return tf.reduce_sum(tf.sin(outputs)) + tf.reduce_sum(c)

        loss = tf.cond(pred, taken, lambda: tf.reduce_sum(projected) * 2.0)
        return [loss] + tf.gradients(loss, [projected, kernel, c0])

    got = run(lambda: lstm_sequence(projected, kernel, c0, c0 * 0.5))
    cell = tf.nn.rnn_cell.LSTMCell(H, dtype=tf.float64)
    want = run(lambda: tf.nn.dynamic_rnn(
        cell, projected, time_major=True,
        initial_state=tf.nn.rnn_cell.LSTMStateTuple(c0, c0 * 0.5)))
    kernel_var, bias_var = cell.weights
    assign = [kernel_var.assign(tf.concat([tf.eye(4 * H, dtype=tf.float64),
                                           kernel], 0)),
              bias_var.assign(tf.zeros([4 * H], tf.float64))]
    want = want[:2] + [tf.gradients(want[0], kernel_var)[0][4 * H:]] + (
        want[3:])
    sess.run(tf.global_variables_initializer())
    sess.run(assign)
    got, want = sess.run([got, want], {pred: branch})
    tol = TOLERANCE[tf.float64]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_inside_tf_while_loop(sess):
    """lstm_sequence on consecutive chunks of a sequence in an outer
    while loop (state carried) equals LSTMCell over the whole sequence."""
    chunks = 3
    rng = np.random.RandomState(3)
    projected = tf.constant(rng.randn(chunks, T, B, 4 * H))
    kernel = tf.constant(0.5 * rng.randn(H, 4 * H))
    c0 = tf.constant(rng.randn(B, H))

    def body(k, c, h, total):
        outputs, (c, h) = lstm_sequence(projected[k], kernel, c, h)
        return k + 1, c, h, total + tf.reduce_sum(tf.sin(outputs))

    _, c, _, total = tf.while_loop(
        lambda k, *_: k < chunks, body,
        (0, c0, c0, tf.constant(0.0, tf.float64)))
    loss = total + tf.reduce_sum(c)
    got = [loss] + tf.gradients(loss, [projected, kernel, c0])

    cell = tf.nn.rnn_cell.LSTMCell(H, dtype=tf.float64)
    whole = tf.reshape(projected, [chunks * T, B, 4 * H])
    outputs, state = tf.nn.dynamic_rnn(
        cell, whole, time_major=True,
        initial_state=tf.nn.rnn_cell.LSTMStateTuple(c0, c0))
    ref_loss = tf.reduce_sum(tf.sin(outputs)) + tf.reduce_sum(state.c)
    kernel_var, bias_var = cell.weights
    ref_grads = tf.gradients(ref_loss, [projected, kernel_var, c0])
    want = [ref_loss, ref_grads[0], ref_grads[1][4 * H:], ref_grads[2]]
    assign = [kernel_var.assign(tf.concat([tf.eye(4 * H, dtype=tf.float64),
                                           kernel], 0)),
              bias_var.assign(tf.zeros([4 * H], tf.float64))]
    sess.run(tf.global_variables_initializer())
    sess.run(assign)
    got, want = sess.run([got, want])
    tol = _tolerance(tf.float64, steps=chunks * T)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_gradient_after_meta_graph_import_and_saver_restore():
    """The gradient is found by its registered name and reads only the
    op: a graph exported without gradients, imported into a new graph and
    restored from a checkpoint trains there (a closure-based gradient
    would still point at the old graph)."""
    rng = np.random.RandomState(4)
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    directory = tempfile.mkdtemp()
    with tf.Graph().as_default():
        projected = tf.constant(rng.randn(T, B, 4 * H).astype(np.float32))
        kernel = tf.get_variable("kernel", [H, 4 * H])
        outputs, _ = lstm_sequence(projected, kernel, tf.zeros([B, H]),
                                   tf.zeros([B, H]),
                                   sequence_length=[T, 2, 0],
                                   parallel_iterations=4)
        loss = tf.reduce_sum(tf.square(outputs))
        tf.add_to_collection("loss", loss)
        want = tf.gradients(loss, kernel)[0]
        saver = tf.train.Saver()
        with tf.Session(config=config) as session:
            session.run(tf.global_variables_initializer())
            want_value = session.run(want)
            path = saver.save(session, os.path.join(directory, "model"),
                              write_meta_graph=False)
        meta_graph = tf.train.export_meta_graph(
            graph=tf.get_default_graph(),
            clear_devices=True)
    # Drop the gradient ops so the import has to build them again.
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(meta_graph)
        loss = tf.get_collection("loss")[0]
        kernel = tf.trainable_variables()[0]
        grad = tf.gradients(loss, kernel)[0]
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session(config=config) as session:
            saver.restore(session, path)
            # The gradient built again: its sums may be ordered otherwise.
            tol = TOLERANCE[tf.float32]
            np.testing.assert_allclose(session.run(grad), want_value,
                                       rtol=tol, atol=tol)
            before = session.run(loss)
            session.run(train)
            assert session.run(loss) < before


@pytest.mark.parametrize("change, error, message", [
    (dict(projected_inputs=np.zeros((T, B, 4 * H), np.int32)), TypeError,
     "projected_inputs"),
    (dict(projected_inputs=np.zeros((B, 4 * H), np.float32)), ValueError,
     "projected_inputs"),
    (dict(recurrent_kernel=np.zeros((H, 3 * H), np.float32)), ValueError,
     "recurrent_kernel"),
    (dict(recurrent_kernel=np.zeros((H, 4 * H), np.float64)), TypeError,
     "recurrent_kernel"),
    (dict(initial_c=np.zeros((B, H + 1), np.float32)), ValueError,
     r"number of units H .*initial_c.shape\[1\] = %d" % (H + 1)),
    (dict(initial_h=np.zeros((B + 1, H), np.float32)), ValueError,
     "initial_h"),
    (dict(sequence_length=[1.0, 2.0, 3.0]), TypeError, "sequence_length"),
    (dict(sequence_length=[[1, 2, 3]]), ValueError, "sequence_length"),
    (dict(sequence_length=[1, 2]), ValueError, "sequence_length"),
    (dict(forget_bias="1"), ValueError, "forget_bias"),  # check_real
    (dict(forget_bias=float("nan")), ValueError, "forget_bias"),
    (dict(parallel_iterations=0), ValueError, "parallel_iterations"),
    (dict(swap_memory=1), ValueError, "swap_memory"),  # _checks.check_bool
])
def test_bad_arguments_fail_early_naming_the_argument(change, error,
                                                      message):
    args = dict(projected_inputs=np.zeros((T, B, 4 * H), np.float32),
                recurrent_kernel=np.zeros((H, 4 * H), np.float32),
                initial_c=np.zeros((B, H), np.float32),
                initial_h=np.zeros((B, H), np.float32))
    args.update(change)
    with pytest.raises(error, match=message):
        lstm_sequence(**args)


@pytest.mark.parametrize("static_time", [True, False])
def test_no_steps_give_no_outputs_and_the_initial_state(sess, static_time):
    # A sequence of zero steps (static or fed) is valid: no outputs, the
    # initial state as the final one, and gradients that flow to the
    # initial state only (there was a gradient shape error before).
    rng = np.random.RandomState(3)
    c0, h0 = (tf.constant(rng.randn(B, H).astype(np.float32))
              for _ in range(2))
    kernel = tf.constant(rng.randn(H, 4 * H).astype(np.float32))
    value = np.zeros((0, B, 4 * H), np.float32)
    x = tf.constant(value) if static_time else \
        tf.placeholder(tf.float32, [None, B, 4 * H])
    feed = {} if static_time else {x: value}
    outputs, (c, h) = lstm_sequence(x, kernel, c0, h0)
    loss = tf.reduce_sum(outputs) + tf.reduce_sum(c * c) + tf.reduce_sum(h)
    grads = tf.gradients(loss, [x, kernel, c0, h0])
    out, c_v, h_v, g, c0_v, h0_v = sess.run(
        [outputs, c, h, grads, c0, h0], feed)
    assert out.shape == (0, B, H)
    np.testing.assert_array_equal(c_v, c0_v)
    np.testing.assert_array_equal(h_v, h0_v)
    assert g[0].shape == (0, B, 4 * H)
    np.testing.assert_array_equal(g[1], np.zeros((H, 4 * H)))
    # d(c * c)/dc = c + c: one exact doubling.
    np.testing.assert_array_equal(g[2], 2 * c0_v)
    np.testing.assert_array_equal(g[3], np.ones((B, H)))
