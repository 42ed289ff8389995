"""The quantization-aware LSTM time step used by ``WeightDropLSTMCell`` when
``is_quant=True``.

It computes what ``tf.nn.rnn_cell.LSTMCell`` computes (gate order i, j, f, o;
optional peepholes, cell clip, projection and projection clip), with every
tensor a full-integer graph needs fake-quantized:

* weights after their DropConnect / sparsity mask (last value, narrow range);
* the ``[x, h]`` concatenation, on the union of the input's learned range
  and the output range (TFLite's Concatenation requantizes its inputs to its
  output grid), which quantizes the step's input;
* ``matmul + bias``, every product and sum, the gates (fixed TFLite output
  ranges), the cell state (``state`` range), the output (``output`` range)
  and the projection. The carried state is therefore on its grids already;
  it is not quantized again (a zero initial state is on every grid, and the
  export quantizes its state inputs onto the same grids).

Because each Add and Mul inside the step is followed directly by its own
fake-quant, ``tf.contrib.quantize.create_training_graph`` /
``create_eval_graph`` add nothing inside the cell (they skip tensors already
followed by a FakeQuant, and the kernel reaching MatMul is a FakeQuant output,
not a variable read or a Mul). For that the step builds no ``tf.cond``
inside the loop (a cond's Switch between an op and its fake-quant would
hide the fake-quant from the rewrites): every train/eval choice is made
once per run, outside the loop, and reaches the step as a tensor
(``tf.where`` selects, a 0/1 weight on the range statistics).

The forget bias is folded into the ``f`` block of the bias (so TFLite sees a
single FullyConnected), and clips are realized by bounding the ``state`` /
``output`` ranges to the clip value (the fake-quant saturates there).
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.checks import check_training
from tf1_awd_sparse.base.scalar_checks import (
    check_choice, check_nonnegative_int, check_num_bits)
from tf1_awd_sparse.base.control_flow import smart_cond
from tf1_awd_sparse.ops import fake_quant as fq

__all__ = ["QUANT_ACTIVATIONS", "HARD_SIGMOID_SLOPE", "HARD_SIGMOID_OFFSET",
           "range_names", "fold_forget_bias", "LSTMQuantizer"]

QUANT_ACTIVATIONS = ("standard", "hard")

# Hard sigmoid clip(slope * x + offset, 0, 1), as in the Keras / TF1 port.
HARD_SIGMOID_SLOPE = 0.2
HARD_SIGMOID_OFFSET = 0.5


def range_names(use_peepholes, has_projection):
    """Names of the learned ranges an LSTM step needs.

    Args:
      use_peepholes: whether the cell has diagonal peephole weights.
      has_projection: whether the cell has ``num_proj``.

    Returns:
      list of str.
    """
    names = ["input", "gates", "forget_state", "input_state", "state",
             "output"]
    if use_peepholes:
        for gate in "ifo":
            names += ["peephole_" + gate, "gate_" + gate]
    if has_projection:
        names.append("cell_output")
    return names


def fold_forget_bias(bias, forget_bias, num_units):
    """Adds ``forget_bias`` to the ``f`` block of an ``[4 * num_units]`` bias
    laid out as i, j, f, o.

    Args:
      bias: float tensor of shape ``[4 * num_units]``.
      forget_bias: Python float.
      num_units: int.

    Returns:
      Tensor like ``bias``.
    """
    if not forget_bias:
        return bias
    offset = tf.concat([tf.zeros([2 * num_units], bias.dtype),
                        tf.fill([num_units], tf.cast(forget_bias, bias.dtype)),
                        tf.zeros([num_units], bias.dtype)], 0)
    return bias + offset


class LSTMQuantizer(object):
    """Fake-quantization state and step math for one LSTM cell.

    Life cycle: :meth:`create_variables` in the cell's ``build``; once per
    graph, outside any while loop, :meth:`begin_run` (ranges, whether
    quantization is active), the kernel transforms (whose last is
    :meth:`quantize_weight`) and :meth:`prepare` (the other weights); then
    :meth:`step` at every time step.

    Args:
      num_units: int, cell size.
      num_proj: int or None, projection size.
      use_peepholes: bool.
      cell_clip, proj_clip: float or None, as in ``LSTMCell``.
      forget_bias: float.
      weight_bits, activation_bits: ints in [2, 8].
      quant_activation: ``'standard'`` (sigmoid / tanh with TFLite's fixed
        output ranges) or ``'hard'`` (hard sigmoid and ReLU).
      quant_delay: int >= 0; in training, fake quantization is bypassed while
        the global step is below it (ranges are still learned).
      ema_decay: float in [0, 1), per run.

    Raises:
      ValueError: for a bad bit width, activation mode or delay.
    """

    def __init__(self, num_units, num_proj=None, use_peepholes=False,
                 cell_clip=None, proj_clip=None, forget_bias=1.0,
                 weight_bits=8, activation_bits=8,
                 quant_activation="standard", quant_delay=0,
                 ema_decay=0.999):
        self.weight_bits = check_num_bits(weight_bits, "weight_bits")
        self.activation_bits = check_num_bits(activation_bits,
                                              "activation_bits")
        check_choice(quant_activation, QUANT_ACTIVATIONS,
                     "quant_activation")
        quant_delay = check_nonnegative_int(quant_delay, "quant_delay")
        self.num_units, self.num_proj = num_units, num_proj
        self.use_peepholes, self.forget_bias = use_peepholes, forget_bias
        self.cell_clip, self.proj_clip = cell_clip, proj_clip
        self.quant_activation, self.quant_delay = quant_activation, quant_delay
        # Clips are realized by bounding the ranges of the clipped tensors.
        self.ranges = fq.RangeSet(
            range_names(use_peepholes, bool(num_proj)), ema_decay=ema_decay,
            limits={"state": cell_clip,
                    "output": proj_clip if num_proj else None})
        self.run_ranges = self._weights = None
        self._active, self._training, self._observe_weight = True, False, 1.0
        # Set (before build) to compute the same function in float: every
        # fake-quant bypassed, hard activations kept (float export).
        self.float_only = False

    def create_variables(self, layer):
        """Creates the range variables (see :class:`fake_quant.RangeSet`)
        through ``layer.add_weight``: non-trainable resource variables in
        the layer's scope, kept as :func:`variable_sync` says, listed in
        ``mask_placement.QUANT_VARIABLES``.

        Args:
          layer: the cell.
        """
        # Outside any control dependency of the call site.
        with tf.control_dependencies(None):
            self.ranges.create_variables(
                fq.range_variable_creator(layer.add_weight))

    @property
    def created(self):
        """True once :meth:`create_variables` ran."""
        return self.ranges.min_vars is not None

    def begin_run(self, training):
        """The run's ranges and quantization switch; call once per graph,
        outside any while loop, before :meth:`quantize_weight`.

        Args:
          training: Python bool or scalar bool tensor.

        Raises:
          ValueError: if ``quant_delay > 0`` and the graph has no global
            step while ``training`` may be True.
          TrainingFlagError: a bad ``training``.
        """
        training = check_training(training)
        self._training = training
        self._active = (False if self.float_only
                        else fq.quantization_active(self.quant_delay,
                                                    training))
        # Range statistics count in training only; with a flag tensor the
        # choice is this 0/1 weight, not a cond inside the loop.
        self._observe_weight = fq.observe_weight(training)
        self.run_ranges = self.ranges.run_ranges(training)

    def quantize_weight(self, weight):
        """Fake-quantizes a weight (last value, narrow range) when
        quantization is active this run.

        Args:
          weight: float32 tensor.

        Returns:
          A tensor like ``weight``.
        """
        weight = tf.convert_to_tensor(weight)
        return smart_cond(
            self._active, lambda: fq.quantize_weight(weight, self.weight_bits),
            lambda: tf.identity(weight))

    def prepare(self, kernel, bias, peepholes=None, projection=None):
        """Builds the per-run weights; call after :meth:`begin_run`.

        Args:
          kernel: ``[input_depth + h_depth, 4 * num_units]`` float32, the
            kernel the run multiplies by (after the kernel transforms,
            :meth:`quantize_weight` the last of them).
          bias: ``[4 * num_units]`` float32.
          peepholes: ``(w_i_diag, w_f_diag, w_o_diag)`` or None.
          projection: ``[num_units, num_proj]`` float32 or None.
        """
        weights = {"kernel": tf.convert_to_tensor(kernel),
                   "bias": fold_forget_bias(tf.convert_to_tensor(bias),
                                            self.forget_bias,
                                            self.num_units)}
        if peepholes is not None:
            for gate, diag in zip("ifo", peepholes):
                weights["w_%s_diag" % gate] = self.quantize_weight(diag)
        if projection is not None:
            weights["projection"] = self.quantize_weight(projection)
        self._weights = weights
        in_lo, in_hi = self.run_ranges["input"]
        out_lo, out_hi = self.run_ranges["output"]
        self.run_ranges["concat"] = (tf.minimum(in_lo, out_lo),
                                     tf.maximum(in_hi, out_hi))

    def _quant(self, x, rng, bypass=None):
        """Fake-quantizes ``x`` on ``rng`` when quantization is active, else
        returns ``bypass(x)`` (or ``x``). Called inside the loop: with a
        run-time switch (``quant_delay`` in training) both are computed and
        ``tf.where`` selects, so ``x`` feeds its fake-quant directly."""
        bits = self.activation_bits
        if self._active is True:
            return fq.fake_quant(x, rng[0], rng[1], bits)
        plain = x if bypass is None else bypass(x)
        if self._active is False:
            return plain
        return tf.where(tf.fill(tf.shape(x), self._active),
                        fq.fake_quant(x, rng[0], rng[1], bits), plain)

    def _learned(self, x, name, seen, bypass=None):
        """Quantizes ``x`` on its learned range and records it for the EMA."""
        seen[name] = x
        return self._quant(x, self.run_ranges[name], bypass)

    def _gate(self, x, x_range):
        """sigmoid (or hard sigmoid) of a quantized pre-activation."""
        fixed = fq.fixed_output_range("sigmoid", self.activation_bits)
        if self.quant_activation == "standard":
            return self._quant(tf.sigmoid(x), fixed)
        # clip(slope * x + offset, 0, 1): the product gets the range derived
        # from the input's; the sum is quantized on the sigmoid's fixed
        # range, which performs the clip (the Add saturates in TFLite too).
        scaled = self._quant(x * HARD_SIGMOID_SLOPE,
                             (x_range[0] * HARD_SIGMOID_SLOPE,
                              x_range[1] * HARD_SIGMOID_SLOPE))
        return self._quant(scaled + HARD_SIGMOID_OFFSET, fixed,
                           lambda t: tf.clip_by_value(t, 0.0, 1.0))

    def _squash(self, x, x_range):
        """tanh (or ReLU) of a quantized tensor."""
        if self.quant_activation == "standard":
            return self._quant(tf.tanh(x),
                               fq.fixed_output_range("tanh",
                                                     self.activation_bits))
        # TFLite 1.13 has no uint8 Relu kernel; max(x, 0) stays on the
        # input's grid (0 is on it), so it keeps the input's range.
        return self._quant(tf.maximum(x, 0.0), x_range)

    def _peephole(self, pre, gate, c, seen):
        """``pre + w_<gate>_diag * c`` with both ops quantized."""
        product = self._learned(self._weights["w_%s_diag" % gate] * c,
                                "peephole_" + gate, seen)
        return (self._learned(pre + product, "gate_" + gate, seen),
                self.run_ranges["gate_" + gate])

    def step(self, inputs, c_prev, m_prev):
        """One quantization-aware LSTM time step.

        Args:
          inputs: ``[batch, input_depth]`` float32.
          c_prev: ``[batch, num_units]`` float32.
          m_prev: ``[batch, num_proj or num_units]`` float32.

        Returns:
          ``(m, c)``: the output / new ``h`` and the new cell state.
        """
        ranges, seen = self.run_ranges, {}
        # The input is quantized once, by the concatenation, on the union of
        # the input's learned range and the output range (TFLite's
        # Concatenation requantizes to its output grid). A separate input
        # fake-quant would requantize an already-quantized tensor (the layer
        # below's output), which TOCO does not convert faithfully.
        # The incoming state is not quantized again: every step's c and m
        # leave it on the state / output grids, and a zero initial state is
        # on every grid (the export quantizes its state inputs explicitly).
        seen["input"] = inputs
        joined = self._quant(tf.concat([inputs, m_prev], 1),
                             ranges["concat"])
        gates = self._learned(
            tf.nn.bias_add(tf.matmul(joined, self._weights["kernel"]),
                           self._weights["bias"]), "gates", seen)
        i, j, f, o = tf.split(gates, 4, axis=1)
        i_range = f_range = o_range = ranges["gates"]
        if self.use_peepholes:
            i, i_range = self._peephole(i, "i", c_prev, seen)
            f, f_range = self._peephole(f, "f", c_prev, seen)
        kept = self._learned(self._gate(f, f_range) * c_prev, "forget_state",
                             seen)
        added = self._learned(self._gate(i, i_range)
                              * self._squash(j, ranges["gates"]),
                              "input_state", seen)
        clip = self.cell_clip
        c = self._learned(kept + added, "state", seen,
                          None if clip is None else
                          lambda t: tf.clip_by_value(t, -clip, clip))
        if self.use_peepholes:
            o, o_range = self._peephole(o, "o", c, seen)
        m = self._gate(o, o_range) * self._squash(c, ranges["state"])
        clip = None
        if self.num_proj:
            m = self._learned(m, "cell_output", seen)
            clip = self.proj_clip
            m = tf.matmul(m, self._weights["projection"])
        seen["output"] = m
        return self._observed_output(
            m, seen, None if clip is None else
            lambda t: tf.clip_by_value(t, -clip, clip)), c

    def _observed_output(self, m, seen, bypass):
        """Quantizes the step's output; in training only after the step's
        statistics were accumulated (the output feeds the loop, so the
        accumulation runs at every step)."""
        if self._observe_weight is None:  # an evaluation-only graph
            return self._quant(m, self.run_ranges["output"], bypass)
        observe = self.ranges.observe(seen, weight=self._observe_weight)
        with tf.control_dependencies([observe]):
            return self._quant(m, self.run_ranges["output"], bypass)
