"""WeightDropLSTMCell: ``tf.nn.rnn_cell.LSTMCell`` with AWD-LSTM DropConnect
(users import it from the top-level ``weight_drop_lstm``, whose docstring
says what DropConnect does here; the sequence layer built on it is
:mod:`tf1_awd_sparse.layers.weight_drop_lstm`)."""
from __future__ import absolute_import, division, print_function

import math

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.checks import check_dim, check_tensor, check_training
from tf1_awd_sparse.base.scalar_checks import check_bool, check_positive_int
from tf1_awd_sparse.base.control_flow import PerRun
from tf1_awd_sparse.base.compat import dimension_value, tf
from tf1_awd_sparse.layers._cell_arguments import (
    check_lstm_arguments, check_quant_arguments, decoded_config,
    kernel_record)
from tf1_awd_sparse.ops.quantized_lstm import LSTMQuantizer
from tf1_awd_sparse.transforms.kernel import (
    DropConnect, PruningMask, SparseWeights, WeightFakeQuant, flags_of,
    serialize)

LSTMStateTuple = tf.nn.rnn_cell.LSTMStateTuple

__all__ = ["WeightDropLSTMCell"]


class WeightDropLSTMCell(tf.nn.rnn_cell.LSTMCell):
    """LSTM cell with DropConnect on the recurrent weights (AWD-LSTM).

    Every ``tf.nn.rnn_cell.LSTMCell`` argument keeps its meaning (same
    positions, same variables ``kernel``, ``bias``, ``w_f_diag``/``w_i_diag``/
    ``w_o_diag``, ``projection/kernel``, and the same default scope name
    ``lstm_cell``), so with ``weight_drop_kr=1.0`` or ``is_train=False`` the
    cell computes exactly what ``LSTMCell`` computes and checkpoints move
    between the two.

    Architecture: the kernel each step multiplies by is computed once per
    run, outside the RNN loop (in graph mode once per ``session.run``;
    eagerly once per call of ``dynamic_rnn`` / ``static_rnn`` /
    ``WeightDropLSTM``; inside ``tf.function`` once per call of the
    function: docs/cells.md), by an ordered list of kernel
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
        :meth:`get_vd_update_op` runs (eagerly: is called); if False a new
        mask is drawn once per run. No effect when the keep rate is 1.
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
    ValueError for inputs of another depth than the cell was built for;
    with ``is_quant``, ``GraphModeError`` eagerly, inside ``tf.function``
    or under TF 2.x control flow v2 (quantization-aware training needs a
    v1 graph).

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
         proj_clip, forget_bias) = check_lstm_arguments(
             num_units, num_proj, cell_clip, proj_clip, forget_bias,
             num_unit_shards, num_proj_shards, seed)
        is_quant = check_bool(is_quant, "is_quant")
        if is_quant:
            check_quant_arguments(activation, dtype, cell_clip, proj_clip,
                                   num_proj, forget_bias)
        # The record: the ordered kernel transforms (the flags make them).
        record = kernel_record(
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
        self._per_run = PerRun(type(self).__name__)
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
        return self._per_run.value

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
    def bias(self):
        """The ``bias`` variable, ``[4 * num_units]`` of the cell's dtype,
        gates in ``LSTMCell``'s order (i, j, f, o) and without the forget
        bias (added at each step); None before build."""
        return getattr(self, "_bias", None)

    @property
    def forget_bias(self):
        """The constant added to the forget gate's pre-activation at each
        step: the constructor's ``forget_bias`` as a Python float (True is
        1.0; +-inf allowed)."""
        return self._forget_bias

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
        if not tf.executing_eagerly():
            # Graph mode: the run's kernel now (eagerly and inside
            # tf.function, build runs outside the run: the first step
            # computes it).
            self._run_kernel()
        self.built = True

    # ------------------------------------------------------------------
    # Step.
    # ------------------------------------------------------------------
    def __call__(self, inputs, state, *args, **kwargs):
        """Checks ``inputs`` (before the base layer builds variables of
        their dtype) and runs one step; as ``LSTMCell.__call__``.

        Raises:
          GraphModeError: ``is_quant`` eagerly, inside ``tf.function`` or
            a control-flow-v2 loop (docs/versions.md); here, before the
            base layer would wrap the message.
        """
        quant = self._quantizer is not None
        if quant:
            what = "%s(is_quant=True)" % type(self).__name__
            _compat.require_graph_mode(what)
            _compat.require_v1_control_flow(what)
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

    def _run_kernel(self):
        """The effective kernel of the current run (base.control_flow's
        ``run_key``), computed by its first step outside the RNN loop."""
        return self._per_run.get(self._compute_kernel)

    def _compute_kernel(self):
        """The kernel transforms applied to the kernel (and the quantizer's
        per-run tensors), in the current graph; under ``once_per_run``."""
        with tf.name_scope("effective_kernel"):
            if self._quantizer is not None:
                self._quantizer.begin_run(self._is_train)
            kernel = self._kernel
            for transform in self._transforms:
                with tf.name_scope(transform.name):
                    kernel = transform.apply(kernel, self._is_train,
                                             self._kernel)
            if self._quantizer is not None:
                self._quantizer.prepare(
                    kernel, self._bias,
                    (self._w_i_diag, self._w_f_diag, self._w_o_diag)
                    if self._use_peepholes else None,
                    self._proj_kernel if self._num_proj is not None
                    else None)
        return kernel

    def _float_step(self, inputs, state):
        """``LSTMCell``'s step, multiplying by the effective kernel."""
        kernel, self._kernel = self._kernel, self._run_kernel()
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
        self._run_kernel()   # the run's quantized weights and ranges
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
        to the current one. Eagerly the list holds a callable that
        resamples the mask when called; inside ``tf.function`` a new assign
        op, run where it is made (``HeldMask.update_ops``).

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
        config.update(flags_of(self._record))
        config["kernel_transforms"] = [
            serialize(t) for t in self._record]
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuilds a cell from :meth:`get_config`."""
        return cls(**decoded_config(config))
