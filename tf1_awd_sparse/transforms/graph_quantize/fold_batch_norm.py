"""Folding a batch norm into the layer before it, so that the weights that
get quantized are the ones inference multiplies by.

In inference (and for a batch norm that uses moving statistics) the layer
becomes ``op(x, w * m) + b`` with ``m = gamma / sqrt(moving_var + eps)``
and ``b = beta - moving_mean * m``.

In training the batch norm normalizes with the batch's statistics, but the
weights are scaled with the moving ones (they are what inference will use,
so the weight range learned is inference's):
``op(x, w * gamma / sigma_moving) * (sigma_moving / sigma_batch) + beta -
mean_batch * gamma / sigma_batch``, which is the batch norm's own output.
From ``freeze_bn_delay`` global steps on, the factor and the batch mean
give way to the moving statistics (the layer computes what inference
will), and the moving averages stop being updated.

The layer op is built again (``<name>_Fold``) on the folded weights; the
original keeps feeding the batch norm, whose batch statistics and moving
average updates stay as they were.
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.transforms.graph_quantize._graph import (
    reroute, run_after)

__all__ = ["fold"]

_ASSIGN_TYPES = ("AssignSub", "AssignSubVariableOp")


def _attr(op, name):
    value = op.get_attr(name)
    return value.decode() if isinstance(value, bytes) else value


def _clone_layer_op(op, weight, name):
    """``op`` (Conv2D, DepthwiseConv2dNative or MatMul) built again on its
    input 0 and ``weight``, with its attributes."""
    x = op.inputs[0]
    if op.type == "MatMul":
        return tf.matmul(x, weight, transpose_a=_attr(op, "transpose_a"),
                         transpose_b=_attr(op, "transpose_b"), name=name)
    options = dict(strides=_attr(op, "strides"), padding=_attr(op, "padding"),
                   data_format=_attr(op, "data_format"),
                   dilations=_attr(op, "dilations"), name=name)
    if op.type == "Conv2D":
        return tf.nn.conv2d(x, weight, **options)
    return tf.nn.depthwise_conv2d_native(x, weight, **options)


def _per_output(vector, op, weight):
    """``vector`` (one entry per output channel) shaped to multiply
    ``weight`` of ``op`` by output channel."""
    if op.type == "DepthwiseConv2dNative":
        return tf.reshape(vector, tf.shape(weight)[2:])
    if op.type == "MatMul" and _attr(op, "transpose_b"):
        return tf.reshape(vector, [-1, 1])
    return vector


def _batch_moments(norm):
    """The batch's ``(mean, variance)`` the batch norm normalizes with.

    For a fused batch norm: the op's own values (its variance without
    Bessel's correction), with the gradient of ``tf.nn.moments`` of its
    input (the op has none for them), as an unfused batch norm's.
    """
    if norm.moments_of is None:
        return norm.mean, norm.variance
    x = norm.moments_of
    mean, variance = tf.nn.moments(x, axes=list(range(x.shape.ndims - 1)))
    count = tf.cast(tf.size(x) // tf.shape(x)[-1], tf.float32)
    biased = norm.variance * ((count - 1.0) / count)
    # value + (g - g): the value as it is, the gradient of g.
    return (norm.mean + (mean - tf.stop_gradient(mean)),
            biased + (variance - tf.stop_gradient(variance)))


def _assign_ops(update):
    """The variable updates that the moving-average ``Sub`` op feeds."""
    found, frontier = [], [update]
    for _ in range(4):
        frontier = [c for op in frontier for out in op.outputs
                    for c in out.consumers()]
        found += [op for op in frontier if op.type in _ASSIGN_TYPES]
    return found


def _after(updates, ops):
    """Makes the moving averages' updates wait for ``ops``: the correction
    reads the moving statistics as they were before this step's update
    (nothing else orders a read and an update of one variable)."""
    for update in updates:
        for assign in _assign_ops(update):
            run_after(assign, ops)


def _training_terms(norm, gamma, settings):
    """``(scale, multiplier, bias, post_scale, offset)`` in training: the
    weights are multiplied by ``scale * multiplier``, the op's output by
    ``post_scale``, then ``offset`` and ``bias`` are added."""
    mean, variance = _batch_moments(norm)
    inv_batch = tf.rsqrt(variance + norm.epsilon)
    inv_moving = tf.rsqrt(norm.moving_variance + norm.epsilon)
    moving_mean = norm.moving_mean * inv_moving
    _after(norm.updates, [inv_moving.op, moving_mean.op])
    multiplier = gamma * inv_batch
    bias = norm.beta - mean * multiplier
    scale = tf.identity(inv_moving / inv_batch, name="correction_scale")
    post_scale = tf.reciprocal(scale)
    offset = None
    if settings.freeze_bn_delay is not None:
        frozen = settings.reached(settings.freeze_bn_delay)
        post_scale = tf.where(frozen, tf.ones_like(post_scale), post_scale,
                              name="correction_recip")
        delta = gamma * (mean * inv_batch - moving_mean)
        offset = tf.where(frozen, delta, tf.zeros_like(delta),
                          name="correction_offset")
        for update in norm.updates:
            old = update.outputs[0]
            readers = old.consumers()
            held = tf.where(frozen, tf.zeros_like(old), old,
                            name="freeze_moving_average")
            reroute(old, held, readers)
    return scale, multiplier, bias, post_scale, offset


def fold(layer, settings):
    """Folds ``layer.batch_norm`` into ``layer``: rewires the batch norm's
    readers to the folded layer and points ``layer.op`` / ``layer.weight``
    at the new op and its folded weights (whose FakeQuant comes next).

    Args:
      layer: a ``patterns.Layer`` with a batch norm.
      settings: the rewrite's ``insert.Settings``.
    """
    norm, op = layer.batch_norm, layer.op
    readers = norm.output.consumers()
    with tf.name_scope(layer.scope + "BatchNorm_Fold/"):
        gamma = 1.0 if norm.gamma is None else norm.gamma
        if norm.training:
            scale, multiplier, bias, post_scale, offset = _training_terms(
                norm, gamma, settings)
            factor = scale * multiplier
        else:
            multiplier = gamma * tf.rsqrt(norm.variance + norm.epsilon)
            bias = norm.beta - norm.mean * multiplier
            factor, post_scale, offset = multiplier, None, None
    with tf.name_scope(layer.scope):
        weight = tf.multiply(layer.weight, _per_output(factor, op,
                                                       layer.weight),
                             name="mul_fold")
        out = _clone_layer_op(op, weight, op.name.rpartition("/")[2] + "_Fold")
        new_op = out.op
        if layer.batch_to_space is not None:
            out = tf.batch_to_space_nd(out, *layer.batch_to_space.inputs[1:],
                                       name="BatchToSpaceND_Fold")
        if post_scale is not None:
            out = tf.multiply(out, post_scale, name="post_conv_mul")
        if offset is not None:
            out = tf.add(out, offset, name="correction_add")
        out = tf.add(out, bias, name="add_fold")
    reroute(norm.output, out, readers)
    layer.op, layer.weight, layer.folded_output = new_op, weight, out
