"""``WeightDropLSTM``: :class:`WeightDropLSTMCell`'s model run over whole
sequences, with the input projection of all steps in one matmul and the
recurrence (and its gradient) of ``tf1_awd_sparse.ops.lstm_sequence``.

Its scope and variables are :class:`SequenceLayerBase`'s plumbing; it reads
its cell (:mod:`.weight_drop_lstm_cell`, which cannot import this module
back) through the cell's public attributes only. The top-level
``weight_drop_lstm`` module gathers both classes for users.
"""
from __future__ import absolute_import, division, print_function

from tf1_awd_sparse.base.checks import (
    check_dim, check_float_dtype, check_tensor)
from tf1_awd_sparse.base.scalar_checks import check_bool
from tf1_awd_sparse.base.control_flow import (
    one_run, run_mode, with_assertions)
from tf1_awd_sparse.base.compat import dimension_value, tf
from tf1_awd_sparse.layers._cell_arguments import decoded_config
from tf1_awd_sparse.layers._sequence_base import SequenceLayerBase
from tf1_awd_sparse.layers.weight_drop_lstm_cell import WeightDropLSTMCell
from tf1_awd_sparse.ops.lstm_sequence import lstm_sequence

_LSTMStateTuple = tf.nn.rnn_cell.LSTMStateTuple

__all__ = ["WeightDropLSTM"]


# On the library's own small base, not tf.compat.v1.layers.Layer: that one
# nests its own scope and, on TF 1.15 / 2.x, leaves the cell's variables
# out of `variables` (the tries are in _sequence_base's docstring).
class WeightDropLSTM(SequenceLayerBase):
    """A weight-dropped LSTM over whole sequences, faster than a cell under
    ``dynamic_rnn``.

    The same model as :class:`WeightDropLSTMCell` with the same arguments
    and the same variables under the same names (``<scope>/lstm_cell/
    kernel``, ``bias``, masks...; ``scope`` defaults to ``'rnn'`` as in
    ``tf.nn.dynamic_rnn``), so checkpoints move between this layer, the cell
    and ``tf.nn.rnn_cell.LSTMCell`` both ways. The difference is the
    schedule: the kernel transforms (sparsity, pruning mask, DropConnect)
    run once per ``session.run``; the input projection ``x_t @ W_x + b`` of
    **all** steps is one matmul (its weight gradient too); only
    ``h_{t-1} @ W_h`` is inside the loop, and the loop's gradient is
    hand-written (``tf1_awd_sparse.ops.lstm_sequence``): one backward loop and
    one whole-sequence matmul for ``W_h``'s gradient (measured against
    ``LSTMCell``: ``make bench``, ``docs/bench.md``).

    The fast path needs the plain LSTM step; with ``is_quant``,
    ``use_peepholes``, ``cell_clip``, ``num_proj``, ``state_is_tuple=False``,
    an infinite ``forget_bias`` or an activation other than tanh the layer
    runs its cell under
    ``tf.nn.dynamic_rnn`` (same results, the cell's speed); ``fast_path``
    says which. float16 inputs also take the ``dynamic_rnn`` path (the
    hand-written recurrence is float32 / float64).

    Args:
      num_units: int, the cell size.
      time_major: inputs and outputs ``[time, batch, depth]`` instead of
        ``[batch, time, depth]``.
      scope: the variable scope of the first call (a name or a
        ``VariableScope``; later calls without ``scope=`` reenter the first
        call's scope). If None, a unique one per layer, as ``tf.layers``
        name theirs: ``'rnn'`` (as ``tf.nn.dynamic_rnn``, so a single
        layer's variables are ``rnn/lstm_cell/kernel``... as
        ``dynamic_rnn(LSTMCell)``'s), then ``'rnn_1'``, ``'rnn_2'``... for
        the next layers built in the same enclosing scope. Also where
        :meth:`get_vd_update_op` creates the held mask when it is called
        before the first call.
      **cell_kwargs: every :class:`WeightDropLSTMCell` argument
        (``weight_drop_kr``, ``use_vd``, ``is_train``, ``sparsity``...).

    The layer is built once, by its first call (or by
    :meth:`get_vd_update_op`): later calls reuse its variables, on inputs
    of the same depth. ``variables`` are exactly the layer's (its cell's)
    variables.

    Raises:
      ValueError: as :class:`WeightDropLSTMCell`; a ``scope`` that is not a
        string or a ``VariableScope``.

    Example::

        layer = WeightDropLSTM(650, weight_drop_kr=0.5, is_train=is_train)
        outputs, final_state = layer(x)        # x: [batch, time, depth]
        upper = WeightDropLSTM(650, weight_drop_kr=0.5, is_train=is_train)
        outputs, _ = upper(outputs)            # variables under rnn_1/
    """

    def __init__(self, num_units, time_major=False, scope=None,
                 **cell_kwargs):
        self._time_major = check_bool(time_major, "time_major")
        # The scope, the cell and its variables: the base's plumbing.
        super(WeightDropLSTM, self).__init__(
            lambda: WeightDropLSTMCell(num_units, **cell_kwargs), scope)
        self._fast = self._cell.sequence_fast_path

    @property
    def fast_path(self):
        """True when calls use the whole-sequence recurrence."""
        return self._fast

    @property
    def effective_kernel(self):
        """The kernel of the run (after build), as the cell's."""
        return self._cell.effective_kernel

    def get_vd_update_op(self):
        """The held DropConnect mask's update op (see the cell's); before
        the first call the mask is created in the layer's scope (the one
        the first call then uses), so the variable names do not depend on
        when this is called."""
        if self._cell.built:
            return self._cell.get_vd_update_op()
        with self._variable_scope(None):
            return self._cell.get_vd_update_op()

    def get_config(self):
        """The cell's arguments plus ``time_major``."""
        config = self._cell.get_config()
        config.update(time_major=self._time_major, scope=self._scope)
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuilds a layer from :meth:`get_config`."""
        config = decoded_config(config)
        return cls(config.pop("num_units"), **config)

    def __call__(self, inputs, initial_state=None, sequence_length=None,
                 scope=None, dtype=None):
        """Runs the LSTM over ``inputs``.

        Args:
          inputs: float tensor ``[batch, time, depth]`` (``[time, batch,
            depth]`` with ``time_major``), known depth.
          initial_state: ``LSTMStateTuple(c, h)`` of ``[batch, num_units]``
            tensors, or None for zeros.
          sequence_length: optional int ``[batch]``, as for
            ``tf.nn.dynamic_rnn`` (outputs zero past each length, the state
            copied through; a length past the time steps means all of
            them); a negative length raises ``InvalidArgumentError`` naming
            ``sequence_length`` when the graph runs.
          scope: variable scope (default: the first call's, else the
            constructor's, else the layer's unique default, see the
            class). The variables are created once, by the first call;
            a call in another scope reuses them (its ops are there).
          dtype: the state's dtype when ``initial_state`` is None (default:
            the inputs' dtype).

        Returns:
          ``(outputs, final_state)``: ``[batch, time, num_units]`` (or time
          major) and ``LSTMStateTuple(c, h)``. A sequence of no steps gives
          no outputs and the initial state (on the ``dynamic_rnn`` path
          only when the zero is static: ``tf.nn.dynamic_rnn`` cannot stack
          zero steps of a batch of unknown size).

        Raises:
          ValueError: inputs not of rank 3 or of unknown depth, or of
            another depth than the layer was built for; an
            ``initial_state`` that is not a ``(c, h)`` pair of ``[batch,
            num_units]`` tensors; a ``sequence_length`` not of rank 1.
          TypeError: inputs not of a float dtype (as the cell: float32
            with ``is_quant``); ``initial_state`` not of the inputs' dtype;
            ``sequence_length`` not int32 / int64; ``dtype`` not a float
            dtype.
        """
        # Eagerly the call is one run (one dropped kernel); in graph mode
        # and inside tf.function this changes nothing.
        with one_run():
            return self._call(inputs, initial_state, sequence_length, scope,
                              dtype)

    def _call(self, inputs, initial_state, sequence_length, scope, dtype):
        """:meth:`__call__`, inside one run."""
        inputs = check_tensor(inputs, "inputs", kind="float")
        if inputs.get_shape().ndims != 3 or \
                dimension_value(inputs.get_shape()[2]) is None:
            raise ValueError("inputs must have rank 3 ([batch, time, depth]"
                             "%s) and a known depth, got shape %s" % (
                                 " time major" if self._time_major else "",
                                 inputs.get_shape()))
        if self._cell.built:
            check_dim(inputs, 2, self._cell.input_depth, "inputs",
                      "the input depth the layer was built for")
        if dtype is not None:
            dtype = check_float_dtype(dtype)
        if sequence_length is not None:
            sequence_length = check_tensor(sequence_length,
                                           "sequence_length", kind="int",
                                           rank=1)
            # A negative length would silently act as 0.
            sequence_length = with_assertions(sequence_length, [
                tf.debugging.assert_non_negative(
                    sequence_length,
                    message="sequence_length must be >= 0")])
        if initial_state is not None:
            initial_state = self._checked_state(initial_state,
                                                dtype or inputs.dtype)
        with self._variable_scope(scope) as varscope:
            if varscope.caching_device is None and \
                    not tf.executing_eagerly():
                varscope.set_caching_device(lambda op: op.device)
            time_axis = 0 if self._time_major else 1
            if dimension_value(inputs.get_shape()[time_axis]) == 0:
                return self._no_steps(inputs, initial_state, sequence_length,
                                      dtype)
            # The whole-sequence recurrence is a v1 graph loop with its own
            # gradient: eagerly and inside tf.function, dynamic_rnn steps.
            if not self._fast or inputs.dtype.base_dtype not in (
                    tf.float32, tf.float64) or run_mode() != "graph":
                return tf.nn.dynamic_rnn(
                    self._cell, inputs, sequence_length=sequence_length,
                    initial_state=initial_state, dtype=dtype or inputs.dtype,
                    time_major=self._time_major, scope=varscope)
            return self._fast_call(inputs, initial_state, sequence_length,
                                   dtype)

    def _checked_state(self, state, dtype):
        """``initial_state`` as an ``LSTMStateTuple`` of checked tensors
        (one checked ``[batch, c + h]`` tensor with
        ``state_is_tuple=False``).

        Raises:
          ValueError, TypeError: as :meth:`__call__` says.
        """
        size = self._cell.state_size
        if not isinstance(size, _LSTMStateTuple):
            state = check_tensor(state, "initial_state", dtype=dtype,
                                 dtype_of="the state's dtype", rank=2)
            check_dim(state, 1, size, "initial_state",
                      "the cell's state size, state_is_tuple=False")
            return state
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise ValueError("initial_state must be an LSTMStateTuple(c, h) "
                             "(or a (c, h) pair), got %r" % (state,))
        parts = []
        for part, size in zip(("c", "h"), self._cell.state_size):
            name = "initial_state.%s" % part
            tensor = check_tensor(getattr(state, part, None)
                                  if isinstance(state, _LSTMStateTuple)
                                  else state["ch".index(part)], name,
                                  dtype=dtype, dtype_of="the state's dtype",
                                  rank=2)
            check_dim(tensor, 1, size, name, "the cell's state size")
            parts.append(tensor)
        return _LSTMStateTuple(*parts)

    def _no_steps(self, inputs, initial_state, sequence_length, dtype):
        """A sequence of (statically) no steps: no outputs, the initial
        state. Built directly: ``tf.nn.dynamic_rnn`` cannot stack zero steps
        of an unknown batch (UnimplementedError). The results depend on
        ``sequence_length`` (its check still runs)."""
        batch = tf.shape(inputs)[1 if self._time_major else 0]
        dtype = dtype or inputs.dtype
        if initial_state is None:
            initial_state = self._cell.zero_state(batch, dtype)
        if not self._cell.built:
            # Creates the variables as a run over steps would.
            depth = dimension_value(inputs.get_shape()[2])
            self._cell(tf.zeros(tf.stack([batch, depth]), inputs.dtype),
                       initial_state)
        with tf.control_dependencies(
                [] if sequence_length is None else [sequence_length]):
            outputs = tf.zeros(tf.stack([0, batch, self._cell.output_size]),
                               dtype)
            if not self._time_major:
                outputs = tf.transpose(outputs, [1, 0, 2])
            if isinstance(initial_state, _LSTMStateTuple):
                return outputs, _LSTMStateTuple(tf.identity(initial_state.c),
                                                tf.identity(initial_state.h))
            return outputs, tf.identity(initial_state)

    def _fast_call(self, inputs, initial_state, sequence_length, dtype):
        """The whole-sequence path."""
        time_major = (inputs if self._time_major
                      else tf.transpose(inputs, [1, 0, 2]))
        batch = tf.shape(time_major)[1]
        depth = dimension_value(time_major.get_shape()[2])
        if initial_state is None:
            initial_state = self._cell.zero_state(batch,
                                                  dtype or inputs.dtype)
        c0, h0 = initial_state
        # Building the cell (on the first step's shape) creates its
        # variables in its scope, exactly as dynamic_rnn would, and the
        # per-run kernel; the one-step ops it adds are never run.
        if not self._cell.built:
            # On zeros of a step's shape, not on time_major[0]: a sequence
            # may have no steps.
            self._cell(tf.zeros(tf.stack([batch, depth]), inputs.dtype),
                       initial_state)
        kernel = self._cell.effective_kernel
        units = self._cell.output_size
        # tf.split: one concat in the gradient (two slices cost more).
        w_x, w_h = tf.split(tf.convert_to_tensor(kernel), [depth, units], 0)
        projected = tf.nn.bias_add(
            tf.matmul(tf.reshape(time_major, [-1, depth]), w_x),
            self._cell.bias)
        projected = tf.reshape(
            projected, tf.concat([tf.shape(time_major)[:2], [4 * units]], 0))
        outputs, (c, h) = lstm_sequence(
            projected, w_h, c0, h0, sequence_length=sequence_length,
            forget_bias=self._cell.forget_bias)
        if not self._time_major:
            outputs = tf.transpose(outputs, [1, 0, 2])
        return outputs, _LSTMStateTuple(c, h)
