"""Recognising the batch norm after a layer op, fused
(``FusedBatchNorm``/``V2``/``V3``, NHWC) or unfused (``x * m + b`` with
``m = gamma * rsqrt(var + eps)`` and ``b = beta - mean * m``, what
``tf.layers.batch_normalization(fused=False)``, Keras and slim build), in
training (batch statistics, moving averages updated) or inference mode
(moving statistics)."""
from tf1_awd_sparse.base.compat import get_static_value
from tf1_awd_sparse.transforms.graph_quantize._graph import (
    only_consumer, weight_source)

__all__ = ["BatchNorm", "match"]

_FUSED_TYPES = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
_ADD_TYPES = ("Add", "AddV2")
# What tf.nn.moments reads its input with.
_MOMENT_TYPES = ("Mean", "SquaredDifference")


class BatchNorm(object):
    """The tensors of one batch norm (float32; per-channel vectors unless
    said).

    Attributes:
      output: what the batch norm's readers read (``[..., channels]``).
      gamma: the scale, or None (``scale=False``).
      beta: the offset (a vector of zeros when ``center=False``, fused).
      epsilon: Python float.
      mean, variance: the statistics the batch norm normalizes with: the
        batch's (variance without Bessel's correction) in training, else
        the moving ones.
      moving_mean, moving_variance: the moving statistics' values in
        training, None in inference (or when no update was found).
      updates: the ``Sub`` ops ``moving - batch`` that the moving averages'
        updates scale (zeroed once batch norm is frozen).
      fused_op: the FusedBatchNorm op (None if unfused).
      moments_of: for a fused batch norm in training, its input: the fold
        computes the batch's mean and variance of it again (the op's own
        have no gradient, and its variance has Bessel's correction), so
        that gradients go through the batch statistics as through an
        unfused batch norm's.
    """

    def __init__(self, output, gamma, beta, epsilon, mean, variance):
        self.output, self.gamma, self.beta = output, gamma, beta
        self.epsilon, self.mean, self.variance = epsilon, mean, variance
        self.moving_mean = self.moving_variance = None
        self.updates = []
        self.fused_op = self.moments_of = None

    @property
    def training(self):
        """Whether the batch norm uses the batch's statistics."""
        return self.moving_mean is not None


def _moving_update(stat, depth=2):
    """The ``Sub(moving, stat')`` op of a moving-average update, where
    ``stat'`` is ``stat`` or computed from it within ``depth`` ops."""
    frontier = [stat]
    for _ in range(depth):
        nxt = []
        for tensor in frontier:
            for op in tensor.consumers():
                if (op.type == "Sub" and op.inputs[1] is tensor
                        and weight_source(op.inputs[0]) == "variable"):
                    return op
                nxt.extend(op.outputs)
        frontier = nxt
    return None


def _with_moving(norm, batch_mean, batch_variance):
    mean_update = _moving_update(batch_mean)
    var_update = _moving_update(batch_variance)
    if mean_update is not None and var_update is not None:
        norm.moving_mean = mean_update.inputs[0]
        norm.moving_variance = var_update.inputs[0]
        norm.updates = [mean_update, var_update]
    return norm


def _fused(op):
    if op.get_attr("data_format") not in (b"NHWC", "NHWC"):
        return None
    x, gamma, beta, mean, variance = op.inputs[:5]
    epsilon = op.get_attr("epsilon")
    if not op.get_attr("is_training"):
        norm = BatchNorm(op.outputs[0], gamma, beta, epsilon, mean, variance)
    else:
        norm = _with_moving(BatchNorm(op.outputs[0], gamma, beta, epsilon,
                                      op.outputs[1], op.outputs[2]),
                            op.outputs[1], op.outputs[2])
        norm.moments_of = x
    norm.fused_op = op
    return norm


def _constant(tensor):
    value = get_static_value(tensor)
    return None if value is None or value.size != 1 else float(value)


def _multiplier(tensor):
    """``(gamma or None, variance, epsilon)`` of ``m = gamma * rsqrt(
    variance + epsilon)``, or None."""
    op, gamma = tensor.op, None
    if op.type == "Mul":
        rsqrt = [t for t in op.inputs if t.op.type == "Rsqrt"]
        if len(rsqrt) != 1:
            return None
        gamma = [t for t in op.inputs if t is not rsqrt[0]][0]
        op = rsqrt[0].op
    if op.type != "Rsqrt" or op.inputs[0].op.type not in _ADD_TYPES:
        return None
    variance, eps = op.inputs[0].op.inputs
    if _constant(eps) is None:
        return None
    return gamma, variance, _constant(eps)


def _unfused(mul, x):
    """The batch norm of ``x * m + (beta - mean * m)`` whose first op is
    ``mul``, or None."""
    m = [t for t in mul.inputs if t is not x]
    add = only_consumer(mul.outputs[0])
    if not m or add is None or add.type not in _ADD_TYPES:
        return None
    parts = _multiplier(m[-1])
    bias = [t for t in add.inputs if t is not mul.outputs[0]]
    if parts is None or len(bias) != 1 or bias[0].op.type != "Sub":
        return None
    beta, product = bias[0].op.inputs
    if product.op.type != "Mul" or not any(t is m[-1]
                                           for t in product.op.inputs):
        return None
    mean = [t for t in product.op.inputs if t is not m[-1]][0]
    gamma, variance, epsilon = parts
    return _with_moving(BatchNorm(add.outputs[0], gamma, beta, epsilon, mean,
                                  variance), mean, variance)


def _reshaped_fused(reshape):
    """A fused batch norm between two Reshapes (slim's batch norm of a 2-D
    ``[batch, channels]`` tensor, as ``[batch, 1, 1, channels]``), or
    None. Its output is the second Reshape's."""
    fused = only_consumer(reshape.outputs[0])
    if fused is None or fused.type not in _FUSED_TYPES:
        return None
    back = only_consumer(fused.outputs[0])
    norm = _fused(fused)
    if norm is None or back is None or back.type != "Reshape":
        return None
    norm.output = back.outputs[0]
    return norm


def match(out):
    """The batch norm that reads a layer's output, or None.

    Args:
      out: the output of a Conv2D / DepthwiseConv2dNative / MatMul (or of
        the BatchToSpaceND after a dilated Conv2D).

    Returns:
      a :class:`BatchNorm`, or None.
    """
    reader = only_consumer(out)
    # contrib folds through Identity ops between the layer and a fused batch
    # norm (conv -> Identity -> FusedBatchNorm, as some model code builds).
    through = reader
    while through is not None and through.type == "Identity":
        through = only_consumer(through.outputs[0])
    if through is not reader and through is not None and (
            through.type in _FUSED_TYPES):
        return _fused(through)
    if reader is not None and reader.type in _FUSED_TYPES:
        return _fused(reader)
    if reader is not None and reader.type == "Reshape":
        return _reshaped_fused(reader)
    # Unfused in training, the batch norm's moments read the output too.
    readers = out.consumers()
    muls = [op for op in readers if op.type == "Mul"]
    if len(muls) != 1 or any(op.type not in _MOMENT_TYPES
                             for op in readers if op is not muls[0]):
        return None
    return _unfused(muls[0], out)
