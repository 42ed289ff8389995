"""WeightDropLSTMCell: ``tf.nn.rnn_cell.LSTMCell`` with AWD-LSTM DropConnect.

DropConnect (Merity, Keskar, Socher 2017) zeroes entries of the recurrent
(hidden-to-hidden) weight matrix with **one mask for the whole sequence**.
Here the masked kernel is computed once per ``session.run``, outside any
``dynamic_rnn`` / ``tf.while_loop`` loop, and every time step multiplies by
that same tensor, so a training step costs about what ``LSTMCell`` costs.
"""
from __future__ import absolute_import, division, print_function

import numbers

import tensorflow as tf
from tensorflow.python.ops.rnn_cell_impl import LSTMStateTuple

from tf1_awd_sparse.quantization.lstm import LSTMQuantizer
from sparse_layers import common as sparse_common
from sparse_layers.l0_regularization import nn as l0_nn
from sparse_layers.variational_dropout import nn as vd_nn
from variational_dropout import (apply_mask, bernoulli_mask,
                                 check_keep_prob, check_training,
                                 derived_seed, make_mask_variable,
                                 scaled_mask, smart_cond)

__all__ = ["WeightDropLSTMCell", "SPARSITY_CHOICES", "sparsity_technique"]

#: Accepted values of the ``sparsity`` argument.
SPARSITY_CHOICES = (None, "variational_dropout", "l0")

_MASK_VARIABLE_NAME = "weight_drop_mask"


class _Sparsity(object):
    """What a ``sparsity`` technique contributes to the cell: the auxiliary
    variable (name, initializer as in ``sparse_layers``' layers), the
    collection the ``(kernel, aux)`` pair joins, and the stateless
    ``train_weights`` / ``eval_weights`` ops of ``sparse_layers``."""

    def __init__(self, aux_name, make_initializer, collection, nn):
        self.aux_name = aux_name
        self.make_initializer = make_initializer
        self.collection = collection
        self.nn = nn


# Initial values as the sparse_layers layers document them: log_sigma2 =
# -10 (almost no noise); log_alpha ~ N(2.197 = log 9, 0.01) (gates open).
_SPARSITY = {
    "variational_dropout": _Sparsity(
        "log_sigma2", lambda: tf.constant_initializer(-10.),
        sparse_common.VD_COLLECTION, vd_nn),
    "l0": _Sparsity(
        "log_alpha",
        lambda: tf.random_normal_initializer(mean=2.197, stddev=0.01),
        sparse_common.L0_COLLECTION, l0_nn),
}


def sparsity_technique(sparsity):
    """What a ``sparsity`` choice of the cell uses for a sparse weight.

    Other layers that make a weight sparse the way the cell does (e.g. the
    language model's sparse embedding) take the same auxiliary variable,
    initial value and collection from here, so the ``sparse_layers`` losses
    and report cover them together with the cells' kernels.

    Args:
      sparsity: ``'variational_dropout'`` or ``'l0'``.

    Returns:
      An object with ``aux_name`` (str: ``'log_sigma2'`` or
      ``'log_alpha'``), ``make_initializer()`` (a new initializer for the
      auxiliary variable: constant -10, or N(2.197, 0.01)), ``collection``
      (the ``sparse_layers.common`` collection name the ``(weight, aux)``
      pair joins) and ``nn`` (the ``sparse_layers`` module with
      ``train_weights`` / ``eval_weights`` / ``embedding_lookup_*`` /
      ``matmul_*``).

    Raises:
      ValueError: ``sparsity`` is not one of the sparse choices.
    """
    if sparsity not in _SPARSITY:
        raise ValueError("sparsity: expected one of %s, got %r"
                         % (sorted(_SPARSITY), sparsity))
    return _SPARSITY[sparsity]


def _quant_variable_sync(name):
    """How a quantization variable is kept under a distribution strategy.

    The per-step accumulator (``quant/observed``) is replica-local scratch:
    each replica adds its own observations inside the RNN loop, where a
    cross-replica write cannot go. The ranges (and ``quant/initialized``)
    are model state: every write is averaged over the replicas, so all
    replicas hold the same ranges. No effect without a strategy.
    """
    if name.endswith("/observed"):
        return {"synchronization": tf.VariableSynchronization.ON_READ,
                "aggregation": tf.VariableAggregation.SUM}
    return {"aggregation": tf.VariableAggregation.MEAN}


def _outer_control_inputs():
    """Control inputs active at the call site that live outside every
    control-flow context: the ones an op built outside a loop may keep."""
    graph = tf.get_default_graph()
    # pylint: disable=protected-access
    return [op for op in graph._current_control_dependencies()
            if op._get_control_flow_context() is None]


class WeightDropLSTMCell(tf.nn.rnn_cell.LSTMCell):
    """LSTM cell with DropConnect on the recurrent weights (AWD-LSTM).

    Every ``tf.nn.rnn_cell.LSTMCell`` argument keeps its meaning (same
    positions, same variables ``kernel``, ``bias``, ``w_f_diag``/``w_i_diag``/
    ``w_o_diag``, ``projection/kernel``, and the same default scope name
    ``lstm_cell``), so with ``weight_drop_kr=1.0`` or ``is_train=False`` the
    cell computes exactly what ``LSTMCell`` computes and checkpoints move
    between the two.

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
      use_vd: if True the mask is a non-trainable variable
        ``<scope>/weight_drop_mask`` of shape ``[rows, 4 * num_units]`` that
        changes only when :meth:`get_vd_update_op` runs; if False a new mask
        is drawn once per ``session.run``. No effect when the keep rate is 1.
      input_size: optional input depth; if given it must match the inputs
        (checked in ``build``). Needed only to call
        :meth:`get_vd_update_op` before the cell is built with
        ``drop_input_weights=True``.
      drop_input_weights: also DropConnect the input-to-hidden rows.
      is_train: Python bool or scalar bool tensor. False: no dropout (the
        plain kernel, deterministic). A tensor (e.g.
        ``tf.placeholder_with_default(True, [])``) lets one graph train and
        evaluate.
      sparsity: ``None``, ``'variational_dropout'`` or ``'l0'``: the
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
      ValueError: ``weight_drop_kr`` outside ``(0, 1]``, an unknown
        ``sparsity``, a non-bool ``use_vd``/``drop_input_weights``, an
        ``is_train`` that is neither a bool nor a scalar bool tensor, a
        ``num_units``/``input_size`` that is not a positive int, or
        ``sparsity`` with ``num_unit_shards``; with ``is_quant``: bad
        bit widths, delay or ``quant_activation``, a non-float32 dtype or a
        custom ``activation``.

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
                 quant_activation="standard", **kwargs):
        if (isinstance(num_units, bool)
                or not isinstance(num_units, numbers.Integral)
                or num_units <= 0):
            raise ValueError("num_units must be a positive int, got %r"
                             % (num_units,))
        weight_drop_kr = check_keep_prob(weight_drop_kr, "weight_drop_kr")
        for arg_name, value in (("use_vd", use_vd),
                                ("drop_input_weights", drop_input_weights)):
            if not isinstance(value, bool):
                raise ValueError("%s must be a Python bool, got %r"
                                 % (arg_name, value))
        if input_size is not None and (
                isinstance(input_size, bool)
                or not isinstance(input_size, numbers.Integral)
                or input_size <= 0):
            raise ValueError("input_size must be None or a positive int, "
                             "got %r" % (input_size,))
        if sparsity not in SPARSITY_CHOICES:
            raise ValueError("sparsity must be one of %s, got %r"
                             % (SPARSITY_CHOICES, sparsity))
        if sparsity is not None and num_unit_shards is not None:
            raise ValueError("sparsity=%r needs an unpartitioned kernel; got "
                             "num_unit_shards=%r" % (sparsity,
                                                     num_unit_shards))
        is_train = check_training(is_train, "is_train")
        super(WeightDropLSTMCell, self).__init__(
            num_units, use_peepholes=use_peepholes, cell_clip=cell_clip,
            initializer=initializer, num_proj=num_proj, proj_clip=proj_clip,
            num_unit_shards=num_unit_shards, num_proj_shards=num_proj_shards,
            forget_bias=forget_bias, state_is_tuple=state_is_tuple,
            activation=activation, reuse=reuse,
            # Unnamed, the default scope is "lstm_cell" (uniquified to
            # lstm_cell_1, ... as LSTMCell's), so checkpoints interchange.
            name=name or "lstm_cell", dtype=dtype, **kwargs)
        self._weight_drop_kr = weight_drop_kr
        self._use_vd = use_vd
        self._input_size = None if input_size is None else int(input_size)
        self._drop_input_weights = drop_input_weights
        self._is_train = is_train
        self._sparsity = sparsity
        self._seed = seed
        self._input_depth = None
        self._mask_var = None
        self._vd_update_ops = []
        self._step_kernel = None
        self._sparse_aux = None
        self._is_quant = bool(is_quant)
        self._quantizer = LSTMQuantizer(
            num_units, num_proj=num_proj, use_peepholes=use_peepholes,
            cell_clip=cell_clip, proj_clip=proj_clip, forget_bias=forget_bias,
            weight_bits=weight_bits, activation_bits=activation_bits,
            quant_activation=quant_activation, quant_delay=quant_delay)
        if self._is_quant and activation not in (None, tf.tanh, "tanh"):
            raise ValueError("is_quant=True computes tanh (or ReLU with "
                             "quant_activation='hard'); got activation=%r"
                             % (activation,))
        if self._is_quant and dtype not in (None, tf.float32, "float32"):
            raise ValueError("is_quant=True needs float32 (fake-quant ops "
                             "are float32 only); got dtype=%r" % (dtype,))

    # ------------------------------------------------------------------
    # Properties.
    # ------------------------------------------------------------------
    @property
    def weight_drop_kr(self):
        """DropConnect keep rate (Python float)."""
        return self._weight_drop_kr

    @property
    def effective_kernel(self):
        """The kernel every step of a run multiplies by (after build):
        DropConnect applied in training; the ``kernel`` variable itself
        when no dropout can apply; None before build."""
        return self._step_kernel

    @property
    def quantizer(self):
        """The ``quantization.lstm.LSTMQuantizer`` used when ``is_quant``
        (its ``run_ranges`` hold the per-run range tensors after build)."""
        return self._quantizer

    @property
    def sparse_aux_variable(self):
        """``log_sigma2`` / ``log_alpha`` with ``sparsity`` (after build),
        else None."""
        return self._sparse_aux

    @property
    def mask_variable(self):
        """The DropConnect mask variable (``use_vd=True``), else None."""
        return self._mask_var

    @property
    def _h_depth(self):
        return self._num_units if self._num_proj is None else self._num_proj

    def _drops_weights(self):
        """True when the graph may apply DropConnect at all."""
        return self._weight_drop_kr < 1.0 and self._is_train is not False

    def _needs_mask_variable(self):
        return self._use_vd and self._drops_weights()

    def _mask_shape(self, input_depth):
        rows = self._h_depth
        if self._drop_input_weights:
            rows += input_depth
        return [rows, 4 * self._num_units]

    # ------------------------------------------------------------------
    # Variables.
    # ------------------------------------------------------------------
    def _create_mask_variable(self, input_depth):
        """Creates the mask variable and its update op, once (see
        ``variational_dropout.make_mask_variable``)."""
        self._mask_var, update = make_mask_variable(
            lambda name, shape, dtype, init: self.add_variable(
                name, shape=shape, dtype=dtype, initializer=init,
                trainable=False, use_resource=True),
            _MASK_VARIABLE_NAME, self._mask_shape(input_depth),
            self._weight_drop_kr, seed=self._seed)
        self._vd_update_ops = [update]

    def build(self, inputs_shape):
        """Creates the LSTMCell variables (same names), the mask variable
        when ``use_vd``, and the per-run effective kernel.

        Raises:
          ValueError: unknown input depth, or ``input_size`` given and
            different from it.
        """
        inputs_shape = tf.TensorShape(inputs_shape)
        input_depth = inputs_shape[-1].value
        if input_depth is None:
            raise ValueError("Expected inputs.shape[-1] to be known, saw "
                             "shape: %s" % (inputs_shape,))
        if self._input_size is not None and self._input_size != input_depth:
            raise ValueError("input_size=%d was given but the inputs have "
                             "depth %d" % (self._input_size, input_depth))
        if self._mask_var is not None:
            built_rows = self._mask_var.get_shape()[0].value
            if built_rows != self._mask_shape(input_depth)[0]:
                raise ValueError("the mask was built for input depth %d but "
                                 "the inputs have depth %d"
                                 % (built_rows - self._h_depth, input_depth))
        elif self._needs_mask_variable():
            # Before LSTMCell.build: it marks the layer built, after which
            # add_variable would only reuse existing variables.
            self._create_mask_variable(input_depth)
        self._input_depth = input_depth
        if self._is_quant and self._quantizer.ranges.min_vars is None:
            # Before LSTMCell.build, like the mask variable.
            with tf.control_dependencies(None):
                self._quantizer.create_variables(
                    lambda name, shape, init: self.add_variable(
                        name, shape=shape, initializer=init,
                        trainable=False, use_resource=True,
                        **_quant_variable_sync(name)))
        if self._sparsity is not None and self._sparse_aux is None:
            technique = sparsity_technique(self._sparsity)
            self._sparse_aux = self.add_variable(
                technique.aux_name,
                shape=[input_depth + self._h_depth, 4 * self._num_units],
                initializer=technique.make_initializer())
        super(WeightDropLSTMCell, self).build(inputs_shape)
        if self._sparsity is not None:
            sparse_common.add_to_collection(
                sparsity_technique(self._sparsity).collection,
                (self._kernel, self._sparse_aux))
        # Built once per graph, outside any while loop (control_dependencies
        # (None) also clears the control-flow context), so the mask is drawn
        # and applied once per run; control inputs of the call site that are
        # outside loops (e.g. an update op around dynamic_rnn) still apply.
        outer_deps = _outer_control_inputs()
        with tf.control_dependencies(None), \
                tf.control_dependencies(outer_deps), \
                tf.name_scope("effective_kernel"):
            self._step_kernel = self._effective_kernel()
            if self._is_quant:
                peepholes = ((self._w_i_diag, self._w_f_diag, self._w_o_diag)
                             if self._use_peepholes else None)
                self._quantizer.prepare(
                    self._is_train, tf.convert_to_tensor(self._step_kernel),
                    tf.convert_to_tensor(self._bias), peepholes,
                    self._proj_kernel if self._num_proj is not None
                    else None)
        self.built = True

    def _effective_kernel(self):
        """The kernel each step multiplies by, built once per graph.

        Training: the ``sparsity`` weight sample (if any), then DropConnect
        (mask drawn per run, or read from the mask variable). Eval: the
        ``sparsity`` eval weights, else the plain ``kernel``.

        Returns:
          ``[input_depth + h_depth, 4 * num_units]`` tensor, or the kernel
          variable itself when neither dropout nor sparsity applies.
        """
        kernel = self._kernel
        if self._sparsity is None and not self._drops_weights():
            return kernel
        technique = (None if self._sparsity is None
                     else sparsity_technique(self._sparsity))

        def eval_weights():
            if technique is None:
                return tf.convert_to_tensor(kernel)
            return technique.nn.eval_weights((kernel, self._sparse_aux))

        def train_weights():
            if technique is None:
                weights = tf.convert_to_tensor(kernel)
            else:
                weights = technique.nn.train_weights(
                    (kernel, self._sparse_aux))
            if self._weight_drop_kr == 1.0:
                return weights
            if self._use_vd:
                mask = self._mask_var.read_value()
            else:
                mask = bernoulli_mask(self._mask_shape(self._input_depth),
                                      self._weight_drop_kr, weights.dtype,
                                      derived_seed(self._seed, 2))
            if self._drop_input_weights:
                return apply_mask(weights, mask, self._weight_drop_kr)
            # Input rows get a multiplier of exactly 1. One full-size
            # multiply (and one in the gradient) is cheaper than splitting
            # and re-concatenating the kernel.
            multiplier = tf.pad(
                scaled_mask(mask, self._weight_drop_kr, weights.dtype),
                [[self._input_depth, 0], [0, 0]], constant_values=1)
            return weights * multiplier

        return smart_cond(self._is_train, train_weights, eval_weights)

    # ------------------------------------------------------------------
    # Step.
    # ------------------------------------------------------------------
    def call(self, inputs, state):
        """One LSTM step with the effective kernel.

        Args:
          inputs: ``[batch, input_depth]`` tensor.
          state: ``LSTMStateTuple(c, m)`` (or their concatenation with
            ``state_is_tuple=False``).

        Returns:
          ``(m, new_state)`` as ``LSTMCell`` returns them.
        """
        sigmoid = tf.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = tf.slice(state, [0, 0], [-1, self._num_units])
            m_prev = tf.slice(state, [0, self._num_units],
                              [-1, self._h_depth])

        if self._is_quant:
            m, c = self._quantizer.step(inputs, c_prev, m_prev)
            new_state = (LSTMStateTuple(c, m) if self._state_is_tuple
                         else tf.concat([c, m], 1))
            return m, new_state

        # i = input_gate, j = new_input, f = forget_gate, o = output_gate
        lstm_matrix = tf.matmul(tf.concat([inputs, m_prev], 1),
                                self._step_kernel)
        lstm_matrix = tf.nn.bias_add(lstm_matrix, self._bias)
        i, j, f, o = tf.split(value=lstm_matrix, num_or_size_splits=4, axis=1)

        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev)
                 * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = (sigmoid(f + self._forget_bias) * c_prev
                 + sigmoid(i) * self._activation(j))
        if self._cell_clip is not None:
            c = tf.clip_by_value(c, -self._cell_clip, self._cell_clip)

        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)

        if self._num_proj is not None:
            m = tf.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = tf.clip_by_value(m, -self._proj_clip, self._proj_clip)

        new_state = (LSTMStateTuple(c, m) if self._state_is_tuple
                     else tf.concat([c, m], 1))
        return m, new_state

    # ------------------------------------------------------------------
    # Mask updates and config.
    # ------------------------------------------------------------------
    def get_vd_update_op(self):
        """Ops that resample the DropConnect mask variable.

        The same ops on every call (built once, outside any loop, and added
        to ``tf.GraphKeys.UPDATE_OPS`` once), so it also works on a finalized
        graph. Called before the cell is built, it creates the mask variable
        now, fixing the cell's variable scope to the current one.

        Returns:
          A list with the update op, or ``[]`` when there is no mask variable
          (``use_vd=False``, keep rate 1, or ``is_train=False``).

        Raises:
          ValueError: called before build with ``drop_input_weights=True``
            and no ``input_size``.
        """
        if not self._needs_mask_variable():
            return []
        if self._mask_var is None:
            if self._drop_input_weights and self._input_size is None:
                raise ValueError(
                    "get_vd_update_op() before the cell is built needs "
                    "input_size when drop_input_weights=True (the mask "
                    "covers the input rows); got input_size=None")
            self._create_mask_variable(self._input_size or 0)
        return list(self._vd_update_ops)

    def get_config(self):
        """Every constructor argument (LSTMCell's plus this cell's), so
        ``WeightDropLSTMCell.from_config(cell.get_config())`` rebuilds an
        equal cell. A tensor ``is_train`` is stored as the tensor itself."""
        config = {
            "weight_drop_kr": self._weight_drop_kr,
            "use_vd": self._use_vd,
            "input_size": self._input_size,
            "drop_input_weights": self._drop_input_weights,
            "is_train": self._is_train,
            "sparsity": self._sparsity,
            "seed": self._seed,
            "is_quant": self._is_quant,
            "quant_delay": self._quantizer.quant_delay,
            "weight_bits": self._quantizer.weight_bits,
            "activation_bits": self._quantizer.activation_bits,
            "quant_activation": self._quantizer.quant_activation,
        }
        base_config = super(WeightDropLSTMCell, self).get_config()
        base_config.update(config)
        return base_config
