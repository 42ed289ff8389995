"""Helpers shared by the sparse ops: parameter checks, gather, conv2d."""
import tensorflow as tf
from tensorflow.python.ops import control_flow_util

from tf1_awd_sparse._checks import (  # noqa: F401  (the one check)
    TrainingFlagError, check_training, smart_cond)


def _shape_str(value):
    shape = getattr(value, "shape", None)
    return str(tf.TensorShape(shape)) if shape is not None else "unknown"


def check_params(params, name="variational_params", rank=None):
    """Validates a (theta, aux) parameter pair and returns it as tensors.

    Args:
      params: tuple/list of two tensors (or variables) of one shape, e.g.
        `(theta, log_sigma2)` or `(theta, log_alpha)`.
      name: argument name used in error messages.
      rank: if given, the static rank both tensors must have.

    Returns:
      (theta, aux) as tensors.

    Raises:
      RuntimeError: `params` is not a 2-tuple, the shapes differ, or the rank
        is not `rank`.
    """
    if not isinstance(params, (tuple, list)) or len(params) != 2:
        if isinstance(params, (tuple, list)):
            got = "a %s of length %d with shapes %s" % (
                type(params).__name__, len(params),
                ", ".join(_shape_str(p) for p in params))
        else:
            got = "a %s of shape %s" % (type(params).__name__,
                                        _shape_str(params))
        raise RuntimeError(
            "%s must be a 2-tuple (theta, aux) of tensors of one shape, got %s"
            % (name, got))
    theta = tf.convert_to_tensor(params[0])
    aux = tf.convert_to_tensor(params[1])
    if not theta.shape.is_compatible_with(aux.shape):
        raise RuntimeError(
            "%s: theta and its auxiliary parameter must have one shape, got "
            "theta %s and aux %s" % (name, theta.shape, aux.shape))
    if rank is not None and theta.shape.ndims not in (None, rank):
        raise RuntimeError(
            "%s: expected rank-%d parameters, got theta of shape %s"
            % (name, rank, theta.shape))
    return theta, aux


def in_xla_context():
    """True when ops are being built inside an XLA compilation context."""
    # TF 1.13 has no public accessor for the current control-flow context.
    graph = tf.get_default_graph()
    context = graph._get_control_flow_context()  # pylint: disable=W0212
    return control_flow_util.GetContainingXLAContext(context) is not None


def gather(params, indices, name=None):
    """`tf.gather(params, indices)` on axis 0.

    Inside an XLA context the gather is written as a one-hot matmul, which
    XLA handles well (its gather of large tables is slow).

    Args:
      params: tensor of shape [vocab, ...].
      indices: int32 or int64 tensor of any shape, values in [0, vocab).
      name: optional op name.

    Returns:
      tensor of shape indices.shape + params.shape[1:].
    """
    with tf.name_scope(name, "gather", [params, indices]):
        params = tf.convert_to_tensor(params)
        indices = tf.convert_to_tensor(indices)
        if not indices.dtype.is_integer:
            raise TypeError("indices must be int32 or int64, got %s"
                            % indices.dtype.name)
        if not in_xla_context():
            return tf.gather(params, indices)
        flat_ids = tf.reshape(indices, [-1])
        one_hot = tf.one_hot(flat_ids, tf.shape(params)[0],
                             dtype=params.dtype)
        rows = tf.reshape(params, [tf.shape(params)[0], -1])
        out = tf.matmul(one_hot, rows)
        out_shape = tf.concat([tf.shape(indices), tf.shape(params)[1:]], 0)
        out = tf.reshape(out, out_shape)
        out.set_shape(indices.shape.concatenate(params.shape[1:]))
        return out


def conv2d(x, filters, strides, padding, data_format="NHWC",
           dilations=None):
    """`tf.nn.conv2d` that also runs NCHW on CPU.

    TF 1.13's CPU Conv2D kernel supports NHWC only, so NCHW inputs are
    transposed to NHWC and the result back; `strides`/`dilations` are given
    in `data_format` order as for `tf.nn.conv2d`.

    Args:
      x: rank-4 input in `data_format`.
      filters: [height, width, in_channels, out_channels].
      strides: list of 4 ints in `data_format` order.
      padding: 'SAME' or 'VALID'.
      data_format: 'NHWC' or 'NCHW'.
      dilations: optional list of 4 ints in `data_format` order.

    Returns:
      rank-4 output in `data_format`.

    Raises:
      ValueError: unknown `data_format`.
    """
    dilations = list(dilations) if dilations is not None else [1, 1, 1, 1]
    if data_format == "NHWC":
        return tf.nn.conv2d(x, filters, strides, padding,
                            dilations=dilations)
    if data_format != "NCHW":
        raise ValueError("data_format must be 'NHWC' or 'NCHW', got %r"
                         % (data_format,))
    to_nhwc = [0, 2, 3, 1]
    y = tf.nn.conv2d(tf.transpose(x, to_nhwc), filters,
                     [strides[i] for i in to_nhwc], padding,
                     dilations=[dilations[i] for i in to_nhwc])
    return tf.transpose(y, [0, 3, 1, 2])


def broadcast_matmul(x, weights):
    """Contracts the last axis of `x` (rank >= 2) with rank-2 `weights`.

    Args:
      x: tensor of shape [batch, ..., in] with known rank.
      weights: tensor of shape [in, out].

    Returns:
      tensor of shape [batch, ..., out] with its static shape set.

    Raises:
      ValueError: `x` has unknown rank or rank < 2.
    """
    x = tf.convert_to_tensor(x)
    rank = _check_broadcast_rank(x)
    out = tf.tensordot(x, weights, [[rank - 1], [0]])
    out.set_shape(x.shape[:-1].concatenate(weights.shape[1:]))
    return out


def broadcast_noise_shape(x, units):
    """Shape [batch, 1, ..., 1, units] of noise shared across middle axes.

    Args:
      x: tensor of rank >= 2 (the input of a broadcast matmul).
      units: scalar int tensor or int, the output width.

    Returns:
      int32 vector of length rank(x).

    Raises:
      ValueError: `x` has unknown rank or rank < 2.
    """
    rank = _check_broadcast_rank(x)
    return tf.concat([tf.shape(x)[:1], tf.ones([rank - 2], tf.int32),
                      tf.reshape(tf.cast(units, tf.int32), [1])], 0)


def _check_broadcast_rank(x):
    rank = x.shape.ndims
    if rank is None or rank < 2:
        raise ValueError("x must have a known rank >= 2, got shape %s"
                         % x.shape)
    return rank
