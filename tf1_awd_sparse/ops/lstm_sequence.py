"""A whole-sequence LSTM recurrence with a hand-written, exact gradient.

``lstm_sequence`` runs the recurrent half of ``tf.nn.rnn_cell.LSTMCell``
over a time-major sequence whose input projection ``x_t @ W_x + b`` the
caller has already computed for all steps in one matmul. Only
``h_{t-1} @ W_h`` and the gate elementwise ops are inside the forward
``tf.while_loop``.

Why a hand-written gradient (measured on TF 1.13.1, CPU, batch 20):
autodiff of a ``tf.while_loop`` computes the ``[H, 4H]`` weight gradient
step by step (a thin ``[H, B] x [B, 4H]`` matmul whose output is the size
of the weight, plus an ``[H, 4H]`` accumulating add) and back-propagates
``h`` through ``matmul(dGates, W, transpose_b=True)``, which the CPU kernel
runs at 40-50 % of the speed of the same product with ``W^T`` stored (the
transpose is packed again in every step). The gradient here is one
backward loop that only computes the per-step gate gradients (kept in a
TensorArray) and ``dh_{t-1} = dGates_t @ W_h^T`` with ``W_h^T`` transposed
once, followed by one whole-sequence matmul ``H_prev^T @ dGates`` for the
weight gradient; ``d projected_inputs`` is ``dGates`` itself. The formulas
and TF's own gradient kernels (``SigmoidGrad``, ``TanhGrad``) are those of
autodiff through ``LSTMCell``, so the result equals it up to float
rounding.

The gradient is registered under a fixed name (``_GRADIENT_OP_TYPE``) at
import time for an ``IdentityN`` that carries the forward's results, saved
activations and inputs; it reads everything it needs from that op (loop
settings from its attrs, no Python closure), so it also works on a graph
imported from a MetaGraph into a new graph or process (once this module is
imported), inside ``tf.cond`` and inside an outer ``tf.while_loop``.
Second derivatives are not supported (the loops are built with
``back_prop=False``).
"""
from __future__ import absolute_import, division, print_function


from tf1_awd_sparse.base.compat import dimension_value, tf
from tensorflow.core.framework import attr_value_pb2
from tensorflow.python.ops import control_flow_util
from tensorflow.python.ops import gen_math_ops

from tf1_awd_sparse.base.checks import DtypeError, check_tensor
from tf1_awd_sparse.base.scalar_checks import (
    check_bool, check_positive_int, check_real)

__all__ = ["lstm_sequence"]

#: Gradient registered for the ``IdentityN`` op that carries the forward
#: results; ``gradient_override_map`` tags that op with this name, and the
#: tag is kept in the op's ``_gradient_op_type`` attr through export/import.
_GRADIENT_OP_TYPE = "TfAwdSparseLstmSequence"

# Order of the IdentityN inputs (and outputs), T' being the steps the loop
# ran (T, or max(sequence_length) >= 1). The saved activations come right
# after the three results; the differentiable inputs follow. With no
# gradient in the fetches grappler prunes the saved ones (measured: only
# the outputs' TensorArray is stacked in a forward-only run).
_OUTPUTS, _FINAL_C, _FINAL_H = 0, 1, 2
_SAVED = slice(3, 9)  # sigmoid(i), tanh(j), sigmoid(f + b_f), sigmoid(o),
#                       c_{t-1}, tanh(c_t); each [T', B, H]
_INPUTS = 9  # projected_inputs[:T'], recurrent_kernel, initial_c,
#             initial_h [, sequence_length]
_NUM_WITHOUT_LENGTH = 13
_PARALLEL_ITERATIONS_ATTR = "_lstm_sequence_parallel_iterations"
_SWAP_MEMORY_ATTR = "_lstm_sequence_swap_memory"


def _check_float_tensor(value, name, rank, dtype=None):
    """``value`` as a float32/float64 tensor of ``rank`` (``dtype``: the
    dtype it must have, that of ``projected_inputs``)."""
    tensor = check_tensor(value, name, kind="float", dtype=dtype,
                          dtype_of="the dtype of projected_inputs",
                          rank=rank)
    if tensor.dtype.base_dtype not in (tf.float32, tf.float64):
        raise DtypeError("%s must be float32 or float64, got %s"
                         % (name, tensor.dtype.name))
    return tensor


def _validate(projected_inputs, recurrent_kernel, initial_c, initial_h,
              sequence_length, forget_bias, parallel_iterations,
              swap_memory):
    """Converts and checks the arguments of ``lstm_sequence``."""
    inputs = _check_float_tensor(projected_inputs, "projected_inputs", 3)
    dtype = inputs.dtype
    kernel = _check_float_tensor(recurrent_kernel, "recurrent_kernel", 2,
                                 dtype)
    c0 = _check_float_tensor(initial_c, "initial_c", 2, dtype)
    h0 = _check_float_tensor(initial_h, "initial_h", 2, dtype)
    check_real(forget_bias, "forget_bias")
    check_positive_int(parallel_iterations, "parallel_iterations")
    check_bool(swap_memory, "swap_memory")

    time = inputs.get_shape()[0]
    gate_dims = []
    for tensor, name in ((kernel, "recurrent_kernel"),
                         (inputs, "projected_inputs")):
        dim = (dimension_value(tensor.get_shape()[-1])
               if tensor.get_shape().ndims else None)
        if dim is not None:
            if dim % 4:
                raise ValueError("%s's last dimension must be 4H (gates i, "
                                 "j, f, o), got shape %s"
                                 % (name, tensor.get_shape()))
            gate_dims.append(("%s.shape[-1] / 4" % name, dim // 4))
    units = _merged_dimension(
        "the number of units H", [
            ("recurrent_kernel.shape[0]", _dim(kernel, 0)),
            ("initial_c.shape[1]", _dim(c0, 1)),
            ("initial_h.shape[1]", _dim(h0, 1))] + gate_dims)
    batch_dims = [("projected_inputs.shape[1]", _dim(inputs, 1)),
                  ("initial_c.shape[0]", _dim(c0, 0)),
                  ("initial_h.shape[0]", _dim(h0, 0))]

    length = None
    if sequence_length is not None:
        length = check_tensor(sequence_length, "sequence_length",
                              kind="int", rank=1)
        batch_dims.append(("sequence_length.shape[0]", _dim(length, 0)))
        length = tf.cast(length, tf.int32)
    batch = _merged_dimension("the batch size B", batch_dims)
    return inputs, kernel, c0, h0, length, time, batch, units


def _dim(tensor, axis):
    """Static size of ``tensor`` along ``axis`` (None if unknown)."""
    if tensor.get_shape().ndims is None:
        return None
    return dimension_value(tensor.get_shape()[axis])


def _merged_dimension(what, named_sizes):
    """The one size that all known ``(name, size)`` pairs agree on, as a
    ``tf.Dimension``; a ValueError naming every argument if they do not."""
    known = set(size for _, size in named_sizes if size is not None)
    if len(known) > 1:
        raise ValueError("%s disagrees between the arguments: %s" % (
            what, ", ".join("%s = %s" % (name, size)
                            for name, size in named_sizes)))
    return tf.Dimension(known.pop() if known else None)


def _with_gradient(carried, parallel_iterations, swap_memory):
    """Passes the forward results, the saved activations and the inputs
    through one ``IdentityN`` whose registered gradient is the hand-written
    backward loop; returns its first three outputs (outputs, final c, final
    h)."""
    with tf.get_default_graph().gradient_override_map(
            {"IdentityN": _GRADIENT_OP_TYPE}):
        carried = tf.identity_n(carried)
    # The gradient's loop settings travel with the op (NodeDef attrs
    # survive MetaGraph export / import; a closure would not).
    # pylint: disable=protected-access
    carried[0].op._set_attr(_PARALLEL_ITERATIONS_ATTR,
                            attr_value_pb2.AttrValue(i=parallel_iterations))
    carried[0].op._set_attr(_SWAP_MEMORY_ATTR,
                            attr_value_pb2.AttrValue(b=swap_memory))
    # pylint: enable=protected-access
    return carried[:3]


def lstm_sequence(projected_inputs, recurrent_kernel, initial_c, initial_h,
                  sequence_length=None, forget_bias=1.0,
                  parallel_iterations=1, swap_memory=False, name=None):
    """Runs an LSTM over a whole time-major sequence of projected inputs.

    Computes, for t = 0 .. T-1, with gates in ``LSTMCell``'s order i, j, f, o
    (``gates = projected_inputs[t] + h_{t-1} @ recurrent_kernel`` split in
    four along the last axis)::

        c_t = sigmoid(f + forget_bias) * c_{t-1} + sigmoid(i) * tanh(j)
        h_t = sigmoid(o) * tanh(c_t)

    which is ``tf.nn.rnn_cell.LSTMCell(H, forget_bias=forget_bias)`` under
    ``tf.nn.dynamic_rnn(time_major=True)`` when ``projected_inputs[t] =
    x_t @ kernel[:D] + bias`` and ``recurrent_kernel = kernel[D:]``.

    The gradient (w.r.t. all but ``sequence_length``) is a registered
    hand-written one (module docstring), equal to autodiff through
    ``LSTMCell`` up to float rounding.

    Args:
      projected_inputs: float32 or float64 tensor ``[T, B, 4H]``, the input
        projection plus bias of every step (T static or dynamic, T >= 0:
        no steps give no outputs and the initial state).
      recurrent_kernel: ``[H, 4H]``, same dtype: the hidden-to-hidden weight
        (apply any DropConnect mask before the call; it is used as given).
      initial_c: ``[B, H]``, same dtype: the cell state before step 0.
      initial_h: ``[B, H]``, same dtype: the hidden state before step 0.
      sequence_length: optional integer vector ``[B]`` with
        ``tf.nn.dynamic_rnn`` semantics: for ``t >= sequence_length[b]``
        the output row is zero and the state is copied through, so the
        final state is the state after each example's last valid step
        (the initial state for a zero length). The loop stops after
        ``max(sequence_length)`` steps (at least one, at most T).
      forget_bias: Python float added to the forget gate pre-activation.
      parallel_iterations, swap_memory: ``tf.while_loop``'s, for the forward
        and the backward loop (each step depends on the previous one: 32
        measured the same as 1, or up to 3 % slower, on 2 cores).
      name: name scope of the ops.

    Returns:
      ``(outputs, (final_c, final_h))``: ``outputs`` ``[T, B, H]`` (zero
      rows past each sequence length), ``final_c`` and ``final_h`` ``[B, H]``,
      all of the input dtype.

    Raises:
      TypeError: a non-float32/float64 input, mismatched dtypes or a
        ``sequence_length`` that is not int32 / int64 (``DtypeError``, also
        a ValueError).
      ValueError: statically known ranks or shapes that do not fit the
        above (``recurrent_kernel`` not ``[H, 4H]``, batch or H mismatch,
        T = 0); a ``forget_bias`` that is not a finite number.
    """
    with tf.name_scope(name, "lstm_sequence",
                       [projected_inputs, recurrent_kernel, initial_c,
                        initial_h, sequence_length]):
        (inputs, kernel, c0, h0, length, time, batch,
         units) = _validate(projected_inputs, recurrent_kernel, initial_c,
                            initial_h, sequence_length, forget_bias,
                            parallel_iterations, swap_memory)
        total_steps = num_steps = tf.shape(inputs)[0]
        if length is not None:
            # As dynamic_rnn: stop after the longest sequence (>= 1 step so
            # the TensorArrays get a shape); later outputs are zero.
            num_steps = tf.minimum(num_steps,
                                   tf.maximum(1, tf.reduce_max(length)))
        outputs, final_c, final_h, saved = _forward(
            inputs, kernel, c0, h0, length, float(forget_bias), num_steps,
            tf.TensorShape([batch, units]), parallel_iterations,
            swap_memory)
        if length is not None:   # the gradient of the steps that ran
            inputs = inputs[:num_steps]   # (the slice pads it back to T)
        outputs, final_c, final_h = _with_gradient(
            [outputs, final_c, final_h] + saved + [inputs, kernel, c0, h0]
            + ([] if length is None else [length]),
            parallel_iterations, swap_memory)
        if length is not None:
            outputs = _pad_time(outputs, total_steps)
        outputs.set_shape(tf.TensorShape([time, batch, units]))
        return outputs, (final_c, final_h)


def _pad_time(tensor, num_steps):
    """Zero rows appended to ``tensor`` [T', ...] up to ``num_steps``."""
    extra = num_steps - tf.shape(tensor)[0]
    rank = tensor.get_shape().ndims
    return tf.pad(tensor, [[0, extra]] + [[0, 0]] * (rank - 1))


def _stack(array, static_shape, dynamic_shape):
    """``array.stack()``, also of zero steps: TensorFlow packs a zero-size
    TensorArray only when its element shape is fully defined, so with an
    unknown batch the empty result ``[0] + dynamic_shape`` is built by a
    cond instead (it failed with UnimplementedError before)."""
    if static_shape.is_fully_defined():
        return array.stack()
    stacked = tf.cond(
        array.size() > 0, array.stack,
        lambda: tf.zeros(tf.concat([[0], dynamic_shape], 0), array.dtype))
    stacked.set_shape(tf.TensorShape([None]).concatenate(static_shape))
    return stacked


def _step_reader(t, one):
    """A function ``x -> x[t]`` for tensors [T, ...] inside a loop body.

    ``x[t]`` would build its own begin / end / strides ops for every
    tensor read in every iteration; these share one begin and end per
    iteration (``one``, the constant vector [1], comes from outside the
    loop). A leading-axis slice of an aligned step is a view, not a copy,
    which is why the sequences are sliced rather than unstacked into
    TensorArrays (an unstack copies all of them first).
    """
    begin = tf.expand_dims(t, 0)
    end = begin + one

    def read(tensor, step_shape):
        step = tf.strided_slice(tensor, begin, end, one, shrink_axis_mask=1)
        # Shape inference of a slice at a non-constant index loses the
        # static sizes, and the caller's tensor may not know them all: an
        # unknown batch of what is a batch of 1 would broadcast the loop
        # variables to an unknown size.
        step.set_shape(tensor.get_shape()[1:].merge_with(step_shape))
        return step
    return read


def _forward(inputs, kernel, c0, h0, length, forget_bias, num_steps,
             state_shape, parallel_iterations, swap_memory):
    """The forward loop: outputs [T', B, H], final c and h, and the saved
    activations the gradient reads (see ``_SAVED``)."""
    dtype = inputs.dtype

    def new_array():
        return tf.TensorArray(dtype, size=num_steps,
                              element_shape=state_shape)

    units = dimension_value(state_shape[1])
    gate_shape = state_shape[:1].concatenate(
        [None if units is None else 4 * units])
    one = tf.constant([1])

    def body(t, c_prev, h_prev, arrays):
        read = _step_reader(t, one)
        gates = read(inputs, gate_shape) + tf.matmul(h_prev, kernel)
        i, j, f, o = tf.split(gates, 4, axis=1)
        i = tf.sigmoid(i)
        j = tf.tanh(j)
        # Same op order as LSTMCell: sigmoid(f + forget_bias).
        f = tf.sigmoid(f + forget_bias) if forget_bias else tf.sigmoid(f)
        o = tf.sigmoid(o)
        c = f * c_prev + i * j
        tanh_c = tf.tanh(c)
        h = o * tanh_c
        if length is not None:
            valid = t < length
            output = tf.where(valid, h, tf.zeros_like(h))
            c = tf.where(valid, c, c_prev)
            h = tf.where(valid, h, h_prev)
        else:
            output = h
        values = (output, i, j, f, o, c_prev, tanh_c)
        arrays = tuple(a.write(t, v) for a, v in zip(arrays, values))
        return t + 1, c, h, arrays

    arrays = tuple(new_array() for _ in range(7))
    _, final_c, final_h, arrays = tf.while_loop(
        lambda t, *_: t < num_steps, body,
        (tf.constant(0), c0, h0, arrays),
        parallel_iterations=parallel_iterations, swap_memory=swap_memory,
        back_prop=False, name="forward")
    # Every saved value (output, gates after the split, c_prev, tanh_c) is
    # [B, H].
    stacked = [_stack(a, state_shape, tf.shape(c0)) for a in arrays]
    return stacked[0], final_c, final_h, stacked[1:]


def _backward(saved, outputs, kernel, c0, h0, length, d_outputs, d_c, d_h,
              parallel_iterations, swap_memory):
    """The backward loop and the whole-sequence matmuls.

    Returns (d_inputs [T', B, 4H], d_kernel [H, 4H], d_c0, d_h0)."""
    i_all, j_all, f_all, o_all, c_prev_all, tanh_c_all = saved
    dtype = kernel.dtype
    num_steps = tf.shape(i_all)[0]
    # Transposed once: matmul(dG, kernel, transpose_b=True) in the loop runs
    # at about a third of the speed on TF 1.13's CPU kernel.
    kernel_t = tf.transpose(kernel)
    if d_c is None:
        d_c = tf.zeros_like(c0)
    if d_h is None:
        d_h = tf.zeros_like(h0)

    state_shape = c0.get_shape().merge_with(h0.get_shape()).merge_with(
        saved[0].get_shape()[1:])
    one = tf.constant([1])

    def body(t, dc, dh, d_gates):
        read = _step_reader(t, one)
        i, j, f, o, c_prev, tanh_c = [read(x, state_shape) for x in saved]
        if d_outputs is not None:
            dh_cell = dh + read(d_outputs, state_shape)
        else:
            dh_cell = dh
        if length is not None:
            valid = t < length
            zeros = tf.zeros_like(dh)
            dh_cell = tf.where(valid, dh_cell, zeros)
            dc_cell = tf.where(valid, dc, zeros)
        else:
            dc_cell = dc
        # h = o * tanh(c); c = f * c_prev + i * j (i, j, f, o activated).
        dc_cell = dc_cell + gen_math_ops.tanh_grad(tanh_c, dh_cell * o)
        d_o = gen_math_ops.sigmoid_grad(o, dh_cell * tanh_c)
        d_i = gen_math_ops.sigmoid_grad(i, dc_cell * j)
        d_j = gen_math_ops.tanh_grad(j, dc_cell * i)
        d_f = gen_math_ops.sigmoid_grad(f, dc_cell * c_prev)
        grads = tf.concat([d_i, d_j, d_f, d_o], axis=1)
        dh_prev = tf.matmul(grads, kernel_t)
        dc_prev = dc_cell * f
        if length is not None:
            # Past the length the state was copied through, so is its
            # gradient (the gate gradients of those rows are zero).
            dh_prev = tf.where(valid, dh_prev, dh)
            dc_prev = tf.where(valid, dc_prev, dc)
        return t - 1, dc_prev, dh_prev, d_gates.write(t, grads)

    d_gates = tf.TensorArray(dtype, size=num_steps,
                             element_shape=i_all.get_shape()[1:2].concatenate(
                                 kernel.get_shape()[1:2]))
    _, d_c0, d_h0, d_gates = tf.while_loop(
        lambda t, *_: t >= 0, body,
        (num_steps - 1, d_c, d_h, d_gates),
        parallel_iterations=parallel_iterations, swap_memory=swap_memory,
        back_prop=False, name="backward")
    d_gates = _stack(d_gates, i_all.get_shape()[1:2].concatenate(
        kernel.get_shape()[1:2]), tf.shape(i_all)[1:] * tf.constant([1, 4]))
    # dW_h = sum_t h_{t-1}^T dG_t as one [H, T'B] x [T'B, 4H] matmul. Rows
    # past a sequence length have dG = 0, so the zero outputs there (rather
    # than the copied-through state) do not matter.
    # h0 sliced to at most num_steps rows: a sequence without steps has no
    # h_{-1} either (outputs[:-1] of no outputs is empty, not one short).
    h_prev = tf.concat([h0[None][:num_steps], outputs[:-1]], axis=0)
    units = tf.shape(kernel)[0]
    d_kernel = tf.matmul(tf.reshape(h_prev, [-1, units]),
                         tf.reshape(d_gates, [-1, 4 * units]),
                         transpose_a=True)
    return d_gates, d_kernel, d_c0, d_h0


@tf.RegisterGradient(_GRADIENT_OP_TYPE)
def _lstm_sequence_grad(op, *grads):
    """Gradient of the IdentityN that carries ``lstm_sequence``'s results.

    Reads the forward's saved activations and inputs from ``op.inputs``
    and returns gradients for ``projected_inputs``, ``recurrent_kernel``,
    ``initial_c`` and ``initial_h`` (None for the carried forward results,
    so autodiff never enters the forward loop, and for sequence_length).
    """
    inputs = list(op.inputs)
    has_length = len(inputs) > _NUM_WITHOUT_LENGTH
    saved = inputs[_SAVED]
    outputs = inputs[_OUTPUTS]
    kernel, c0, h0 = inputs[_INPUTS + 1:_INPUTS + 4]
    length = inputs[_INPUTS + 4] if has_length else None
    # pylint: disable=protected-access
    context = op._get_control_flow_context()
    # pylint: enable=protected-access
    if control_flow_util.GetContainingWhileContext(context) is not None:
        # Called inside a tf.while_loop: tf.gradients has entered that
        # loop's gradient context. Reading a forward tensor here makes it
        # stack the per-iteration values in the forward loop and pop them
        # in the gradient loop; a read from inside the nested backward loop
        # below would not get that treatment (and fail).
        saved = [tf.identity(x) for x in saved]
        outputs, kernel, c0, h0 = [tf.identity(x)
                                   for x in (outputs, kernel, c0, h0)]
        if has_length:
            length = tf.identity(length)
        context = None

    # Outside while loops, build the backward loop in the forward op's cond
    # context (as autodiff does for a while loop inside tf.cond), so it
    # only runs when that branch did.
    if context is not None:
        context.Enter()
    try:
        d_gates, d_kernel, d_c0, d_h0 = _backward(
            saved, outputs, kernel, c0, h0, length, grads[_OUTPUTS],
            grads[_FINAL_C], grads[_FINAL_H],
            op.get_attr(_PARALLEL_ITERATIONS_ATTR),
            op.get_attr(_SWAP_MEMORY_ATTR))
    finally:
        if context is not None:
            context.Exit()
    result = [None] * len(inputs)
    result[_INPUTS:_INPUTS + 4] = [d_gates, d_kernel, d_c0, d_h0]
    return result
