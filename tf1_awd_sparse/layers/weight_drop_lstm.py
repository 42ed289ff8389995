"""WeightDropLSTMCell: ``tf.nn.rnn_cell.LSTMCell`` with AWD-LSTM DropConnect.

DropConnect (Merity, Keskar, Socher 2017) zeroes entries of the recurrent
(hidden-to-hidden) weight matrix with **one mask for the whole sequence**.
Here the masked kernel is computed once per ``session.run``, outside any
``dynamic_rnn`` / ``tf.while_loop`` loop, and every time step multiplies by
that same tensor, so a training step costs about what ``LSTMCell`` costs.
"""
from __future__ import absolute_import, division, print_function

import contextlib
import math

from tf1_awd_sparse.base.compat import dimension_value, tf

LSTMStateTuple = tf.nn.rnn_cell.LSTMStateTuple

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.transforms import kernel as kernel_transforms_module
from tf1_awd_sparse.base.checks import (
    check_bool, check_dim, check_float_dtype, check_int,
    check_number, check_positive_int, check_real, check_tensor,
    check_training)
from tf1_awd_sparse.base.control_flow import once_per_run, with_assertions
from tf1_awd_sparse.ops.lstm_sequence import lstm_sequence
from tf1_awd_sparse.ops.quantized_lstm import LSTMQuantizer
from tf1_awd_sparse.transforms.kernel import (  # noqa: F401
    SPARSITY_CHOICES, DropConnect, PruningMask, SparseWeights,
    WeightFakeQuant, sparsity_technique)

__all__ = ["WeightDropLSTMCell", "WeightDropLSTM", "SPARSITY_CHOICES",
           "sparsity_technique"]


class WeightDropLSTMCell(tf.nn.rnn_cell.LSTMCell):
    """LSTM cell with DropConnect on the recurrent weights (AWD-LSTM).

    Every ``tf.nn.rnn_cell.LSTMCell`` argument keeps its meaning (same
    positions, same variables ``kernel``, ``bias``, ``w_f_diag``/``w_i_diag``/
    ``w_o_diag``, ``projection/kernel``, and the same default scope name
    ``lstm_cell``), so with ``weight_drop_kr=1.0`` or ``is_train=False`` the
    cell computes exactly what ``LSTMCell`` computes and checkpoints move
    between the two.

    Architecture: the kernel each step multiplies by is computed once per
    ``session.run``, outside the RNN loop, by an ordered list of kernel
    transforms (``tf1_awd_sparse.transforms``) built from the arguments:
    sparse weights (``sparsity``) -> a fixed pruning mask
    (``pruning_mask``) -> DropConnect (``weight_drop_kr``, ``use_vd``) ->
    weight fake-quant (``is_quant``). The step itself is ``LSTMCell``'s, or
    with ``is_quant`` the quantization-aware step of
    ``tf1_awd_sparse.ops.quantized_lstm``, chosen once at construction.

    DropConnect: an element-wise Bernoulli(``weight_drop_kr``) mask on the
    hidden-to-hidden rows of the ``[input_depth + h_depth, 4 * num_units]``
    kernel (all rows with ``drop_input_weights``), scaled by
    ``1 / weight_drop_kr``; the mask is the same at every time step and for
    every batch element of one ``session.run``.

    Args:
      num_units, use_peepholes, cell_clip, initializer, num_proj, proj_clip,
      num_unit_shards, num_proj_shards, forget_bias, state_is_tuple,
      activation, reuse, name, dtype: as for ``tf.nn.rnn_cell.LSTMCell``.
      weight_drop_kr: keep rate of DropConnect, a Python number in ``(0, 1]``.
      use_vd: (the AWD-LSTM port's name: "mask held in a variable", not
        sparse variational dropout) if True the DropConnect mask is a
        non-trainable local variable ``<scope>/weight_drop_mask`` of shape
        ``[rows, 4 * num_units]`` that changes only when the op of
        :meth:`get_vd_update_op` runs; if False a new mask is drawn once per
        ``session.run``. No effect when the keep rate is 1.
      input_size: optional input depth (the width of the inputs, not of the
        state); if given it must match the inputs (checked in ``build``).
        Needed only to call :meth:`get_vd_update_op` before the cell is
        built with ``drop_input_weights=True``.
      drop_input_weights: also DropConnect the input-to-hidden rows.
      is_train: Python bool or scalar bool tensor. False: no dropout (the
        plain kernel, deterministic). A tensor (e.g.
        ``tf.placeholder_with_default(True, [])``) lets one graph train and
        evaluate.
      sparsity: ``None``, ``'variational_dropout'`` (sparse variational
        dropout, Molchanov et al. 2017) or ``'l0'``: the
        ``kernel`` becomes theta of a ``(kernel, log_sigma2)`` /
        ``(kernel, log_alpha)`` pair (aux variable of the kernel's shape,
        initialized as ``sparse_layers``' layers do) that joins the
        technique's collection, so ``sparse_layers.losses`` and
        ``sparse_layers.report`` include the cell. Training uses one weight
        sample (VD: ``theta + sigma * N(0, 1)``; L0: ``theta * z``, z
        hard-concrete) per run, shared by all steps and examples, from
        ``sparse_layers.<technique>.nn.train_weights``; eval uses
        ``eval_weights`` (VD: weights with log(alpha) >= 3 zeroed; L0:
        theta times the mean gate). DropConnect applies on top when
        ``weight_drop_kr < 1``. The projection is not sparsified.
      seed: optional op seed for the masks.
      pruning_mask: if True, a fixed 0/1 mask ``<scope>/pruning_mask``
        (ones at first; model state, saved with the weights) multiplies the
        kernel in training and evaluation, before DropConnect and weight
        fake-quant: pruned weights stay exactly zero.
      updates_collection: collection the held mask's update op joins
        (default ``tf.GraphKeys.UPDATE_OPS``, ordered after the mask's
        reads, see ``variational_dropout.HeldMask``); None keeps it out of
        every collection.
      kernel_transforms: advanced: a list of
        ``tf1_awd_sparse.transforms.KernelTransform`` to use instead of the
        ones ``sparsity`` / ``pruning_mask`` / ``weight_drop_kr`` build (give
        one or the other); weight fake-quant is appended when ``is_quant``.
      is_quant: quantization-aware training: fake quantization of the
        weights after the DropConnect mask and of every tensor of the step,
        with learned ranges in ``<scope>/quant/<tensor>/min|max`` (see the
        ``quantization`` package). Ranges are learned (EMA, once per run)
        while ``is_train`` is True and frozen when it is False. Same weight
        variables as the float cell, so a float checkpoint restores into it
        (initialize the new ``quant/`` variables). float32 only.
      quant_delay: global step before which fake quantization is bypassed
        in training (ranges are still learned); needs a global step.
      weight_bits, activation_bits: bit widths in [2, 8].
      quant_activation: ``'standard'`` (sigmoid / tanh on TFLite's fixed
        uint8 output ranges [0, 1) and [-1, 1)) or ``'hard'`` (hard sigmoid
        ``clip(0.2 x + 0.5, 0, 1)`` and ReLU).
      **kwargs: base layer keywords (``trainable``...), as for ``LSTMCell``.

    Raises:
      ValueError: ``weight_drop_kr`` outside ``(0, 1]`` (a Python number:
        tensors are not accepted), an unknown ``sparsity``, a non-bool
        ``use_vd``/``drop_input_weights``, an ``is_train`` that is neither
        a bool nor a scalar bool tensor, a ``num_units``/``input_size``/
        ``num_proj``/shard count that is not a positive int (a bool
        neither: ``LSTMCell`` fails on it on TF 2.21), a ``cell_clip``/
        ``proj_clip``/``forget_bias`` that is not a number (a Python or
        numpy real or bool, +-inf included, NaN not: every number
        ``LSTMCell`` computes with is taken as it takes it, 0 or a
        negative clip included), a ``seed`` that is not an int,
        ``sparsity`` with ``num_unit_shards``, or
        ``kernel_transforms`` together with the arguments that build them;
        with ``is_quant``: bit widths outside [2, 8], a delay that is not
        an int >= 0, an unknown ``quant_activation``, a non-float32 dtype,
        a custom ``activation``, a clip that is not a finite number > 0
        (it bounds a fake-quant range) or an infinite ``forget_bias``.

    Calling the cell raises TypeError for inputs that are not of a float
    dtype (float32 with ``is_quant``) or not of the cell's dtype, and
    ValueError for inputs of another depth than the cell was built for.

    Example::

        cell = WeightDropLSTMCell(num_units=650, weight_drop_kr=0.5,
                                  use_vd=True)
        outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        ...
        sess.run(cell.get_vd_update_op())   # new mask for the next batches
    """

    def __init__(self, num_units, use_peepholes=False, cell_clip=None,
                 initializer=None, num_proj=None, proj_clip=None,
                 num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, weight_drop_kr=1.0,
                 use_vd=False, input_size=None, drop_input_weights=False,
                 is_train=True, sparsity=None, seed=None, is_quant=False,
                 quant_delay=0, weight_bits=8, activation_bits=8,
                 quant_activation="standard", pruning_mask=False,
                 updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS,
                 kernel_transforms=None, **kwargs):
        input_size = check_positive_int(input_size, "input_size",
                                        allow_none=True)
        checked_is_train = check_training(is_train, "is_train")
        (num_units, num_proj, num_unit_shards, num_proj_shards, cell_clip,
         proj_clip, forget_bias) = _check_lstm_arguments(
             num_units, num_proj, cell_clip, proj_clip, forget_bias,
             num_unit_shards, num_proj_shards, seed)
        is_quant = check_bool(is_quant, "is_quant")
        if is_quant:
            _check_quant_arguments(activation, dtype, cell_clip, proj_clip,
                                   num_proj, forget_bias)
        # The record: the ordered kernel transforms (the flags make them).
        record = _kernel_record(
            kernel_transforms, seed, updates_collection,
            {"weight_drop_kr": weight_drop_kr, "use_vd": use_vd,
             "drop_input_weights": drop_input_weights,
             "sparsity": sparsity, "pruning_mask": pruning_mask})
        if num_unit_shards is not None and any(
                isinstance(t, SparseWeights) for t in record):
            raise ValueError("sparsity=%r needs an unpartitioned kernel; got "
                             "num_unit_shards=%r" % (sparsity,
                                                     num_unit_shards))
        # The cell's other options, for get_config (LSTMCell keeps its own).
        self._own_config = {
            "input_size": input_size,
            # As given (a tensor itself, not the checked read of it).
            "is_train": True if is_train is None else is_train,
            "seed": seed, "is_quant": is_quant, "quant_delay": quant_delay,
            "weight_bits": weight_bits, "activation_bits": activation_bits,
            "quant_activation": quant_activation,
            "updates_collection": updates_collection}
        super(WeightDropLSTMCell, self).__init__(
            num_units, use_peepholes=use_peepholes, cell_clip=cell_clip,
            initializer=initializer, num_proj=num_proj, proj_clip=proj_clip,
            num_unit_shards=num_unit_shards, num_proj_shards=num_proj_shards,
            forget_bias=forget_bias, state_is_tuple=state_is_tuple,
            activation=activation, reuse=reuse,
            # Unnamed, the default scope is "lstm_cell" (uniquified to
            # lstm_cell_1, ... as LSTMCell's), so checkpoints interchange.
            name=name or "lstm_cell", dtype=dtype, **kwargs)
        self._input_size = input_size
        self._given_activation = activation
        self._record = tuple(record)
        kernel_transforms = list(record)
        self._built_depth = None
        self._is_train = checked_is_train
        self._step_kernel = None
        self._quantizer = None
        self._step = self._float_step
        if is_quant:
            self._quantizer = LSTMQuantizer(
                num_units, num_proj=num_proj, use_peepholes=use_peepholes,
                cell_clip=cell_clip, proj_clip=proj_clip,
                forget_bias=forget_bias, weight_bits=weight_bits,
                activation_bits=activation_bits,
                quant_activation=quant_activation, quant_delay=quant_delay)
            kernel_transforms.append(WeightFakeQuant(self._quantizer))
            self._step = self._quantized_step
        self._transforms = tuple(kernel_transforms)

    # ------------------------------------------------------------------
    # Properties.
    # ------------------------------------------------------------------
    @property
    def weight_drop_kr(self):
        """DropConnect keep rate (Python float; 1.0 without DropConnect)."""
        drop = self._transform(DropConnect)
        return 1.0 if drop is None else drop.keep_prob

    @property
    def kernel_transforms(self):
        """The kernel transforms, in the order they apply (a tuple)."""
        return self._transforms

    @property
    def effective_kernel(self):
        """The kernel every step of a run multiplies by (after build): the
        result of the kernel transforms, or the ``kernel`` variable itself
        when there are none; None before build."""
        return self._step_kernel

    @property
    def quantizer(self):
        """The ``LSTMQuantizer`` of an ``is_quant`` cell (its ``run_ranges``
        hold the per-run range tensors after build), else None."""
        return self._quantizer

    @property
    def sparse_aux_variable(self):
        """``log_sigma2`` / ``log_alpha`` with ``sparsity`` (after build),
        else None."""
        sparse = self._transform(SparseWeights)
        return None if sparse is None else sparse.aux

    @property
    def mask_variable(self):
        """The held DropConnect mask variable (``use_vd=True``), else
        None."""
        drop = self._transform(DropConnect)
        return None if drop is None else drop.mask_variable

    @property
    def pruning_mask_variable(self):
        """The ``pruning_mask`` variable (``pruning_mask=True``, after
        build), else None."""
        prune = self._transform(PruningMask)
        return None if prune is None else prune.mask

    @property
    def input_depth(self):
        """The depth of the inputs the cell was built for (None before
        build)."""
        return self._built_depth

    @property
    def _h_depth(self):
        return self._num_units if self._num_proj is None else self._num_proj

    def _transform(self, kind):
        for transform in self._transforms:
            if isinstance(transform, kind):
                return transform
        return None

    # ------------------------------------------------------------------
    # Variables and the per-run kernel.
    # ------------------------------------------------------------------
    def build(self, inputs_shape):
        """Creates the LSTMCell variables (same names), the transforms'
        variables and the per-run effective kernel.

        Raises:
          ValueError: unknown input depth, or ``input_size`` given and
            different from it.
        """
        _compat.require_graph_mode(type(self).__name__)
        inputs_shape = tf.TensorShape(inputs_shape)
        input_depth = dimension_value(inputs_shape[-1])
        if input_depth is None:
            raise ValueError("Expected inputs.shape[-1] to be known, saw "
                             "shape: %s" % (inputs_shape,))
        if self._input_size is not None and self._input_size != input_depth:
            raise ValueError("input_size=%d was given but the inputs have "
                             "depth %d" % (self._input_size, input_depth))
        self._built_depth = input_depth
        shape = [input_depth + self._h_depth, 4 * self._num_units]
        # Before LSTMCell.build: it marks the layer built, after which
        # add_weight would only reuse existing variables. (add_weight, not
        # its alias add_variable: on 2.x that one warns it is deprecated.)
        for transform in self._transforms:
            transform.build(self.add_weight, shape, input_depth,
                            self._is_train)
            transform.mark_built()
        if self._quantizer is not None and not self._quantizer.created:
            self._quantizer.create_variables(self)
        super(WeightDropLSTMCell, self).build(inputs_shape)
        with once_per_run(type(self).__name__), \
                tf.name_scope("effective_kernel"):
            if self._quantizer is not None:
                self._quantizer.begin_run(self._is_train)
            kernel = self._kernel
            for transform in self._transforms:
                with tf.name_scope(transform.name):
                    kernel = transform.apply(kernel, self._is_train,
                                             self._kernel)
            self._step_kernel = kernel
            if self._quantizer is not None:
                self._quantizer.prepare(
                    kernel, self._bias,
                    (self._w_i_diag, self._w_f_diag, self._w_o_diag)
                    if self._use_peepholes else None,
                    self._proj_kernel if self._num_proj is not None
                    else None)
        self.built = True

    # ------------------------------------------------------------------
    # Step.
    # ------------------------------------------------------------------
    def __call__(self, inputs, state, *args, **kwargs):
        """Checks ``inputs`` (before the base layer builds variables of
        their dtype) and runs one step; as ``LSTMCell.__call__``."""
        quant = self._quantizer is not None
        dtype = tf.float32 if quant else self.dtype
        inputs = check_tensor(
            inputs, "inputs", kind="float", dtype=dtype,
            dtype_of="is_quant=True needs float32" if quant
            else "the cell's dtype" if dtype else None)
        if self.built and inputs.shape.ndims is not None:
            check_dim(inputs, -1, self._built_depth, "inputs",
                      "the input depth the cell was built for")
        self._check_state(state)
        return super(WeightDropLSTMCell, self).__call__(inputs, state, *args,
                                                        **kwargs)

    def _check_state(self, state):
        """Checks the state's structure and static widths against
        ``state_size`` (under ``dynamic_rnn`` the first step's state is the
        ``initial_state``; a wrong width surfaced as a MatMul / Mul
        dimension error inside the loop).

        Raises:
          ValueError: not an ``LSTMStateTuple(c, h)`` pair with
            ``state_is_tuple``, or a part of another static width than
            ``state_size`` says.
        """
        size = self.state_size
        if isinstance(size, LSTMStateTuple):
            if isinstance(state, tf.Tensor) or not isinstance(
                    state, (tuple, list)) or len(state) != 2:
                raise ValueError(
                    "state must be an LSTMStateTuple(c, h) (or a (c, h) "
                    "pair) with state_is_tuple=True, got %r" % (state,))
            parts = (("state.c", state[0], size.c, "num_units"),
                     ("state.h", state[1], size.h,
                      "num_units" if self._num_proj is None else "num_proj"))
        else:
            parts = (("state", state, size, "num_units + %s, "
                      "state_is_tuple=False" % ("num_units" if
                                                self._num_proj is None
                                                else "num_proj")),)
        for name, part, width, what in parts:
            shape = tf.TensorShape(getattr(part, "shape", None))
            if shape.ndims and dimension_value(shape[-1]) not in (None,
                                                                 width):
                raise ValueError(
                    "%s must be %d wide (the cell's state size, %s; the "
                    "initial_state under dynamic_rnn), got shape %s"
                    % (name, width, what, shape))

    @_compat.do_not_convert
    def call(self, inputs, state):
        """One LSTM step with the effective kernel.

        Args:
          inputs: ``[batch, input_depth]`` tensor.
          state: ``LSTMStateTuple(c, m)`` (or their concatenation with
            ``state_is_tuple=False``).

        Returns:
          ``(m, new_state)`` as ``LSTMCell`` returns them.
        """
        return self._step(inputs, state)

    def _float_step(self, inputs, state):
        """``LSTMCell``'s step, multiplying by the effective kernel."""
        kernel, self._kernel = self._kernel, self._step_kernel
        try:
            return super(WeightDropLSTMCell, self).call(inputs, state)
        finally:
            self._kernel = kernel

    def _quantized_step(self, inputs, state):
        """The quantization-aware step (``LSTMQuantizer.step``)."""
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = tf.slice(state, [0, 0], [-1, self._num_units])
            m_prev = tf.slice(state, [0, self._num_units],
                              [-1, self._h_depth])
        m, c = self._quantizer.step(inputs, c_prev, m_prev)
        new_state = (LSTMStateTuple(c, m) if self._state_is_tuple
                     else tf.concat([c, m], 1))
        return m, new_state

    # ------------------------------------------------------------------
    # Mask updates and config.
    # ------------------------------------------------------------------
    def get_vd_update_op(self):
        """The op that resamples the held DropConnect mask, in a list.

        Fetch it after the cell is built: the update is then ordered after
        the cell's read of the mask (a step trains on the current mask and
        leaves a new one), unless the cell was built under
        ``tf.control_dependencies(cell.get_vd_update_op())`` (the AWD-LSTM
        port's pattern: the step uses the fresh mask); see
        ``variational_dropout.HeldMask``. Called before the cell is built,
        it creates the mask variable now, fixing the cell's variable scope
        to the current one.

        Returns:
          A list with the update op, or ``[]`` when there is no held mask
          (``use_vd=False``, keep rate 1, or ``is_train=False``).

        Raises:
          ValueError: called before build with ``drop_input_weights=True``
            and no ``input_size``.
        """
        drop = self._transform(DropConnect)
        if drop is None or not drop.held or not drop.active(self._is_train):
            return []
        if drop.mask_variable is None:
            if drop.drop_input_weights and self._input_size is None:
                raise ValueError(
                    "get_vd_update_op() before the cell is built needs "
                    "input_size when drop_input_weights=True (the mask "
                    "covers the input rows); got input_size=None")
            drop.create_held_mask(
                self.add_weight, drop.mask_rows(self._input_size or 0, self._h_depth),
                4 * self._num_units)
        return drop.update_ops()

    @property
    def sequence_fast_path(self):
        """True when ``WeightDropLSTM`` can run this cell through the
        whole-sequence recurrence: every kernel transform allows it
        (``sequence_ok``) and the step is LSTMCell's plain one (no
        quantization, peepholes, clip or projection; tuple state; tanh;
        a finite forget bias)."""
        activation = self._given_activation
        plain_step = not (
            self._quantizer is not None or self._use_peepholes
            or self._cell_clip is not None or self._num_proj is not None
            or not self._state_is_tuple
            or not math.isfinite(self._forget_bias)
            # Falsy activations are LSTMCell's tanh.
            or (activation and activation not in (tf.tanh, tf.nn.tanh,
                                                  "tanh")))
        return plain_step and all(t.sequence_ok for t in self._transforms)

    def get_config(self):
        """The cell's record and options: LSTMCell's arguments, this cell's
        options, ``kernel_transforms`` (the serialized ordered transforms,
        the record ``build`` composes) and, for reading, the convenience
        flags that describe them (``weight_drop_kr``, ``use_vd``,
        ``sparsity``...). ``WeightDropLSTMCell.from_config(cell.get_config())``
        rebuilds an equal cell from the record. A tensor ``is_train`` is
        stored as the tensor itself."""
        config = super(WeightDropLSTMCell, self).get_config()
        config.update(self._own_config)
        # The record, and the flags that describe it (for reading only:
        # from_config rebuilds from the record).
        config.update(kernel_transforms_module.flags_of(self._record))
        config["kernel_transforms"] = [
            kernel_transforms_module.serialize(t) for t in self._record]
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuilds a cell from :meth:`get_config`."""
        return cls(**_decoded_config(config))


class WeightDropLSTM(object):
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
        self._scope = _check_scope(scope, "scope")
        # The variable scope of the first call (or of get_vd_update_op
        # before it): where the variables are, reentered by later calls.
        self._built_scope = None
        self._cell = WeightDropLSTMCell(num_units, **cell_kwargs)
        self._fast = self._cell.sequence_fast_path

    @property
    def cell(self):
        """The :class:`WeightDropLSTMCell` holding the variables."""
        return self._cell

    @property
    def fast_path(self):
        """True when calls use the whole-sequence recurrence."""
        return self._fast

    @property
    def effective_kernel(self):
        """The kernel of the run (after build), as the cell's."""
        return self._cell.effective_kernel

    @property
    def built(self):
        """True once a call created the variables."""
        return self._cell.built

    @property
    def scope_name(self):
        """The name of the layer's variable scope (None before the first
        call or :meth:`get_vd_update_op`)."""
        return None if self._built_scope is None else self._built_scope.name

    @property
    def variables(self):
        """Every variable of the layer (its cell's: kernel, bias, masks,
        sparse aux, quantization ranges...), trainable ones first; ``[]``
        before the first call."""
        return self._cell.weights

    @property
    def trainable_variables(self):
        """The layer's trainable variables."""
        return self._cell.trainable_weights

    @property
    def non_trainable_variables(self):
        """The layer's non-trainable variables (masks, ranges...)."""
        return self._cell.non_trainable_weights

    @property
    def weights(self):
        """The cell's variables (as :attr:`variables`)."""
        return self._cell.weights

    def get_vd_update_op(self):
        """The held DropConnect mask's update op (see the cell's); before
        the first call the mask is created in the layer's scope (the one
        the first call then uses), so the variable names do not depend on
        when this is called."""
        if self._cell.built:
            return self._cell.get_vd_update_op()
        with self._variable_scope(None):
            return self._cell.get_vd_update_op()

    @contextlib.contextmanager
    def _variable_scope(self, scope):
        """Enters the scope of a call: ``scope`` if given, else the one
        of the first call, else the constructor's, else a new unique
        ``rnn``/``rnn_<n>`` (``tf.layers``' uniquification by
        ``default_name``). The first one entered is recorded."""
        scope = _check_scope(scope, "scope")
        if scope is None:
            scope = self._built_scope or self._scope
        with tf.variable_scope(scope, default_name="rnn") as varscope:
            if self._built_scope is None:
                self._built_scope = varscope
            yield varscope

    def get_config(self):
        """The cell's arguments plus ``time_major``."""
        config = self._cell.get_config()
        config.update(time_major=self._time_major, scope=self._scope)
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuilds a layer from :meth:`get_config`."""
        config = _decoded_config(config)
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
        _compat.require_graph_mode(type(self).__name__)
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
            if varscope.caching_device is None:
                varscope.set_caching_device(lambda op: op.device)
            time_axis = 0 if self._time_major else 1
            if dimension_value(inputs.get_shape()[time_axis]) == 0:
                return self._no_steps(inputs, initial_state, sequence_length,
                                      dtype)
            if not self._fast or inputs.dtype.base_dtype not in (
                    tf.float32, tf.float64):
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
        if not isinstance(size, LSTMStateTuple):
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
                                  if isinstance(state, LSTMStateTuple)
                                  else state["ch".index(part)], name,
                                  dtype=dtype, dtype_of="the state's dtype",
                                  rank=2)
            check_dim(tensor, 1, size, name, "the cell's state size")
            parts.append(tensor)
        return LSTMStateTuple(*parts)

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
            if isinstance(initial_state, LSTMStateTuple):
                return outputs, LSTMStateTuple(tf.identity(initial_state.c),
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
            self._cell._bias)  # pylint: disable=protected-access
        projected = tf.reshape(
            projected, tf.concat([tf.shape(time_major)[:2], [4 * units]], 0))
        outputs, (c, h) = lstm_sequence(
            projected, w_h, c0, h0, sequence_length=sequence_length,
            forget_bias=self._cell._forget_bias)  # pylint: disable=W0212
        if not self._time_major:
            outputs = tf.transpose(outputs, [1, 0, 2])
        return outputs, LSTMStateTuple(c, h)


def _check_scope(scope, arg_name):
    """A variable scope argument: None, a non-empty string or a
    ``VariableScope``.

    Raises:
      ValueError: anything else.
    """
    if scope is None or isinstance(scope, tf.VariableScope) or (
            isinstance(scope, str) and scope):
        return scope
    raise ValueError("%s must be None, a non-empty string or a "
                     "tf.VariableScope, got %r" % (arg_name, scope))


def _decoded_config(config):
    """A copy of a ``get_config`` dict with its kernel transforms rebuilt
    from their serialized form (the flags beside them dropped).

    Raises:
      ValueError: a flag that contradicts the record.
    """
    config = dict(config)
    if config.get("kernel_transforms") is not None:
        config["kernel_transforms"] = [
            kernel_transforms_module.from_config(c)
            for c in config["kernel_transforms"]]
        # The flags beside the record only describe it: one edited by hand
        # would be ignored, so it is refused.
        described = kernel_transforms_module.flags_of(
            config["kernel_transforms"])
        for flag in kernel_transforms_module.FLAG_DEFAULTS:
            if flag in config and config.pop(flag) != described[flag]:
                raise ValueError(
                    "config[%r] contradicts config['kernel_transforms'], "
                    "which makes %s=%r: edit the record, or drop "
                    "'kernel_transforms' to build from the flags"
                    % (flag, flag, described[flag]))
    return config


def _check_lstm_arguments(num_units, num_proj, cell_clip, proj_clip,
                          forget_bias, num_unit_shards, num_proj_shards,
                          seed):
    """Checks the ``LSTMCell`` arguments that ``LSTMCell`` itself takes as
    given: every value it computes with on every supported TF version
    passes, as Python arithmetic reads it (a ``True`` clip or forget bias
    is 1, a clip of 0 or below clips to a constant, an infinite clip or
    forget bias is what it is); values it fails on later, from an inner op
    (0 units, ``num_proj=0``, 0 shards, a string; a bool count on TF
    2.21), and a NaN (no clip on 1.x, NaN states on 2.x) are refused
    here.

    Returns:
      The counts as ints and the numbers as floats, in argument order
      (``num_units, num_proj, num_unit_shards, num_proj_shards,
      cell_clip, proj_clip, forget_bias``).

    Raises:
      ValueError: naming the argument.
    """
    # Not True as 1: LSTMCell fails on a bool count on TF 2.21 (a bool
    # TensorShape dimension), so it is no value LSTMCell takes everywhere.
    counts = [check_positive_int(value, name, allow_none=name != "num_units")
              for value, name in ((num_units, "num_units"),
                                  (num_proj, "num_proj"),
                                  (num_unit_shards, "num_unit_shards"),
                                  (num_proj_shards, "num_proj_shards"))]
    reals = [check_number(cell_clip, "cell_clip", allow_none=True),
             check_number(proj_clip, "proj_clip", allow_none=True),
             check_number(forget_bias, "forget_bias")]
    check_int(seed, "seed", allow_none=True)
    return tuple(counts + reals)


def _check_quant_arguments(activation, dtype, cell_clip, proj_clip,
                           num_proj, forget_bias):
    """Checks what ``is_quant=True`` computes with: tanh (any falsy
    activation is ``LSTMCell``'s tanh), float32, clips that bound a
    fake-quant range (finite, > 0) and a finite forget bias (folded into
    the quantized bias).

    Raises:
      ValueError: naming the argument and ``is_quant``.
    """
    if activation and activation not in (tf.tanh, tf.nn.tanh, "tanh"):
        raise ValueError("is_quant=True computes tanh (or ReLU with "
                         "quant_activation='hard'); got activation=%r"
                         % (activation,))
    if dtype is not None and tf.as_dtype(dtype).base_dtype != tf.float32:
        raise ValueError("is_quant=True needs float32 (fake-quant ops "
                         "are float32 only); got dtype=%r" % (dtype,))
    for value, name in ((cell_clip, "cell_clip"), (proj_clip if num_proj
                                                   else None, "proj_clip")):
        check_real(value, "%s with is_quant=True (it bounds a fake-quant "
                   "range)" % name, low=0, low_open=True, allow_none=True)
    check_real(forget_bias, "forget_bias with is_quant=True")


def _kernel_record(given, seed, updates_collection, flags):
    """The cell's ordered kernel transforms: made from the convenience
    ``flags`` (``kernel.transforms_from_flags``), or the ``given`` list,
    checked and copied.

    Raises:
      ValueError: a bad flag (named); ``given`` not a list of
        KernelTransform, holding a weight fake-quant, or given together
        with flags that make transforms.
    """
    if given is None:
        return kernel_transforms_module.transforms_from_flags(
            flags, seed=seed, updates_collection=updates_collection)
    clashes = kernel_transforms_module.clashing_flags(flags)
    if clashes:
        raise ValueError("kernel_transforms replaces the transforms that %s "
                         "build; give one or the other" % ", ".join(clashes))
    transforms = list(given)
    for transform in transforms:
        if not isinstance(transform, kernel_transforms_module.KernelTransform):
            raise ValueError("kernel_transforms must be KernelTransform "
                             "objects, got %r" % (transform,))
        if isinstance(transform, WeightFakeQuant):
            raise ValueError("kernel_transforms: weight fake-quant is added "
                             "by is_quant=True; leave it out")
    # Copies: one list may configure several cells (a MultiRNNCell).
    return [transform.copy() for transform in transforms]
