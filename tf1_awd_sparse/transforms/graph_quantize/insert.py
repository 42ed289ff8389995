"""The FakeQuant ops the rewrite inserts, and the variables that hold
their ranges.

Each quantized tensor gets a name scope ``<scope>weights_quant``,
``act_quant``, ``conv_quant`` (a layer's output before a residual Add) or
``post_activation_bypass_quant`` (after one), with two non-trainable
float32 variables ``min`` and ``max`` (the names ``tf.contrib.quantize``
gives them, so a Saver finds the ranges under the same names):

* weights: in training, the range of the weights as they are this run
  (widened to contain 0, or made symmetric), stored in the variables; in
  evaluation, the stored range. Narrow range (codes ``1 .. 2**bits - 1``).
* activations: in training, a moving average (decay 0.999, without the
  bias of its zero start: the first run's range is that run's) of each
  run's min and max, clipped to contain 0 (or made symmetric); a third
  variable ``ema_steps`` counts the runs averaged. In evaluation the
  stored average. Full range.

Before ``quant_delay`` global steps the FakeQuant is bypassed (the tensor
passes unchanged) while the ranges are learned all the same.
"""
import numpy as np
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.base import scalar_checks as _scalar_checks
from tf1_awd_sparse.transforms.graph_quantize._graph import (
    reroute, variable_op)

__all__ = ["EMA_DECAY", "Settings", "quantize_weight", "quantize_activation"]

#: Decay per run of the activation ranges' moving averages.
EMA_DECAY = 0.999


class Settings(object):
    """What one rewrite does (the arguments of ``create_*_graph``).

    Args:
      training: Python bool: learn ranges (True) or read them (False).
      weight_bits, activation_bits: ints in [2, 8].
      symmetric: Python bool: ranges symmetric about 0.
      quant_delay: None or int >= 0: global step from which FakeQuant is on.
      freeze_bn_delay: None or int >= 0: global step from which batch
        norms use their moving statistics (training only).
      per_channel: Python bool: Conv2D weights get a symmetric range per
        output channel (int8 TFLite's form), other weights one symmetric
        range.

    Raises:
      ValueError: a bit width, delay or flag out of its domain.
    """

    def __init__(self, training, weight_bits=8, activation_bits=8,
                 symmetric=False, quant_delay=None, freeze_bn_delay=None,
                 per_channel=False):
        self.training = _scalar_checks.check_bool(training, "training")
        self.weight_bits = _scalar_checks.check_num_bits(weight_bits,
                                                         "weight_bits")
        self.activation_bits = _scalar_checks.check_num_bits(activation_bits,
                                                             "activation_bits")
        self.symmetric = _scalar_checks.check_bool(symmetric, "symmetric")
        self.quant_delay = _scalar_checks.check_nonnegative_int(
            quant_delay, "quant_delay", allow_none=True)
        self.freeze_bn_delay = _scalar_checks.check_nonnegative_int(
            freeze_bn_delay, "freeze_bn_delay", allow_none=True)
        self.per_channel = _scalar_checks.check_bool(per_channel,
                                                     "per_channel")
        self._reached = {}
        #: The weight FakeQuants made, by variable: one per weight.
        self.weight_quants = {}
        #: None, or the :class:`report.RewriteReport` the inserts record in.
        self.report = None

    def record(self, tensor, kind, scope):
        """Records a FakeQuant inserted on ``tensor`` in the report."""
        if self.report is not None:
            self.report.add_quantized(tensor, kind, scope)

    def reached(self, delay):
        """A scalar bool tensor, ``global_step >= delay`` (one op per
        delay and graph); the global step is created if there is none."""
        graph = tf.get_default_graph()
        key = (id(graph), delay)
        if key not in self._reached:
            with tf.name_scope(None):
                step = tf.train.get_or_create_global_step()
                self._reached[key] = tf.greater_equal(
                    step, tf.cast(delay, step.dtype.base_dtype),
                    name="quant_delay_reached" if delay == self.quant_delay
                    else "freeze_bn_reached")
        return self._reached[key]


def _variable(name, value, channels=None):
    initial = np.full([] if channels is None else [channels], value,
                      np.float32)
    return tf.Variable(initial, trainable=False, name=name,
                       dtype=tf.float32, use_resource=True)


def _range_of(tensor, bits, narrow, symmetric):
    """This run's ``(min, max)`` of ``tensor``: containing 0, or symmetric
    about it on the grid's own terms (a full-range grid has one code more
    below 0 than above)."""
    low = tf.reduce_min(tensor, name="BatchMin")
    high = tf.reduce_max(tensor, name="BatchMax")
    if not symmetric:
        return tf.minimum(low, 0.0), tf.maximum(high, 0.0)
    levels = float(2 ** bits)
    ratio = -1.0 if narrow else -(levels - 2.0) / levels
    return (tf.minimum(low, high / ratio), tf.maximum(high, low * ratio))


def _channel_range(tensor):
    """Per output channel (the last axis), ``(-a, a)`` with ``a`` the
    largest magnitude (at least 1e-6: an all-zero channel has no grid)."""
    axes = list(range(tensor.shape.ndims - 1))
    magnitude = tf.maximum(tf.reduce_max(tf.abs(tensor), axis=axes), 1e-6)
    return -magnitude, magnitude


def _fake_quant(tensor, low, high, bits, narrow, settings):
    # The ranges are set, not learned by gradient: none flows into them
    # (nor, through the weights' own min and max, into the weights).
    low, high = tf.stop_gradient(low), tf.stop_gradient(high)
    if low.shape.ndims:
        quantized = tf.quantization.fake_quant_with_min_max_vars_per_channel(
            tensor, low, high, num_bits=bits, narrow_range=narrow,
            name="FakeQuantWithMinMaxVarsPerChannel")
    else:
        quantized = tf.fake_quant_with_min_max_vars(
            tensor, low, high, num_bits=bits, narrow_range=narrow,
            name="FakeQuantWithMinMaxVars")
    if not settings.quant_delay:
        return quantized
    return tf.cond(settings.reached(settings.quant_delay),
                   lambda: quantized, lambda: tensor, name="delayed_quant")


def _scope(name):
    """An absolute, unused name scope ``name/`` of the default graph."""
    return tf.get_default_graph().unique_name(name, mark_as_used=False) + "/"


def quantize_weight(tensor, scope, settings, per_channel=False):
    """The weight FakeQuant of ``tensor`` (narrow range, weight_bits): one
    per variable, as contrib makes it: a second layer reading the same
    variable gets the first one's FakeQuant (and range variables, in the
    first layer's scope).

    Args:
      tensor: float32 weights.
      scope: name scope prefix (``'conv1/'``).
      settings: :class:`Settings`.
      per_channel: one symmetric range per entry of the last axis (a
        static dimension), in ``[C]`` variables.

    Returns:
      the quantized tensor (the caller rewires the layer op to it).
    """
    # The variable makes two weight tensors one weight (tf.make_template, a
    # variable read by two layers); a computed weight (folded) is its own.
    key = (variable_op(tensor) or tensor, per_channel)
    if key not in settings.weight_quants:
        settings.weight_quants[key] = _new_weight_quant(
            tensor, scope, settings, per_channel)
    return settings.weight_quants[key]


def _new_weight_quant(tensor, scope, settings, per_channel):
    bits = settings.weight_bits
    channels = dimension_value(tensor.shape[-1]) if per_channel else None
    with tf.name_scope(_scope(scope + "weights_quant")) as name:
        settings.record(tensor, "weights_quant", name)
        low_var = _variable("min", -6.0, channels)
        high_var = _variable("max", 6.0, channels)
        if settings.training:
            # int8 TFLite wants every weight's zero point at 0: with
            # per_channel, the layers that keep one range are symmetric.
            low, high = (_channel_range(tensor) if per_channel else
                         _range_of(tensor, bits, True, settings.symmetric
                                   or settings.per_channel))
            with tf.control_dependencies([
                    low_var.assign(low, name="AssignMinLast",
                                   read_value=False),
                    high_var.assign(high, name="AssignMaxLast",
                                    read_value=False)]):
                low, high = tf.identity(low), tf.identity(high)
        else:
            low, high = low_var.read_value(), high_var.read_value()
        return _fake_quant(tensor, low, high, bits, True, settings)


def _ema(variable, steps, value, name):
    """The zero-debiased moving average after one more run, assigned."""
    runs = steps.read_value()
    biased = variable.read_value() * (1.0 - tf.pow(EMA_DECAY, runs))
    biased = EMA_DECAY * biased + (1.0 - EMA_DECAY) * value
    new = biased / (1.0 - tf.pow(EMA_DECAY, runs + 1.0))
    assign = variable.assign(new, name=name, read_value=False)
    return getattr(assign, "op", assign), new


def quantize_activation(tensor, scope, kind, settings, readers=None,
                        symmetric=None):
    """Inserts the activation FakeQuant of ``tensor`` and rewires its
    readers to it.

    Args:
      tensor: float32 activation.
      scope: name scope prefix (``'conv1/'``).
      kind: ``'act_quant'``, ``'conv_quant'`` or
        ``'post_activation_bypass_quant'`` (the name scope).
      settings: :class:`Settings`.
      readers: the ops to rewire (default: every reader of ``tensor``).
      symmetric: None (``settings.symmetric``) or a bool for this range.

    Returns:
      the quantized tensor.
    """
    readers = list(tensor.consumers() if readers is None else readers)
    bits = settings.activation_bits
    with tf.name_scope(_scope(scope + kind)) as name:
        settings.record(tensor, kind, name)
        low_var, high_var = _variable("min", 0.0), _variable("max", 6.0)
        if settings.training:
            steps = _variable("ema_steps", 0.0)
            low, high = _range_of(tensor, bits, False, settings.symmetric
                                  if symmetric is None else symmetric)
            low_op, low = _ema(low_var, steps, low, "AssignMinEma")
            high_op, high = _ema(high_var, steps, high, "AssignMaxEma")
            with tf.control_dependencies([low_op, high_op]):
                count = steps.assign_add(1.0, read_value=False)
            with tf.control_dependencies([low_op, high_op, count]):
                low, high = tf.identity(low), tf.identity(high)
        else:
            low, high = low_var.read_value(), high_var.read_value()
        quantized = _fake_quant(tensor, low, high, bits, False, settings)
    reroute(tensor, quantized, readers)
    return quantized
