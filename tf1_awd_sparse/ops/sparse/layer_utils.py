"""Helpers shared by the sparse ops: parameter checks, gather, conv2d."""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base import control_flow
from tf1_awd_sparse.base.checks import (
    ParamsError, check_dim, check_ids, check_tensor)
from tf1_awd_sparse.base.scalar_checks import check_choice, check_positive_int

__all__ = ["check_params", "check_input", "check_matmul_input",
           "check_conv_input", "gather", "gather_pair", "conv2d",
           "broadcast_matmul", "broadcast_noise_shape"]


def _shape_str(value):
    shape = getattr(value, "shape", None)
    return str(tf.TensorShape(shape)) if shape is not None else "unknown"


def check_params(params, name="variational_params", rank=None):
    """Validates a (theta, aux) parameter pair and returns it as tensors.

    Args:
      params: tuple/list of two float tensors (or variables) of one shape
        and dtype, e.g. `(theta, log_sigma2)` or `(theta, log_alpha)`.
      name: argument name used in error messages.
      rank: if given, the static rank both tensors must have.

    Returns:
      (theta, aux) as tensors.

    Raises:
      ParamsError (a ValueError and a RuntimeError): `params` is not a
        2-tuple, the shapes or dtypes differ, a dtype is not a float, or
        the rank is not `rank`.
    """
    if not isinstance(params, (tuple, list)) or len(params) != 2:
        if isinstance(params, (tuple, list)):
            got = "a %s of length %d with shapes %s" % (
                type(params).__name__, len(params),
                ", ".join(_shape_str(p) for p in params))
        else:
            got = "a %s of shape %s" % (type(params).__name__,
                                        _shape_str(params))
        raise ParamsError(
            "%s must be a 2-tuple (theta, aux) of tensors of one shape, got %s"
            % (name, got))
    try:
        theta = check_tensor(params[0], name + "[0] (theta)", kind="float")
        aux = check_tensor(params[1], name + "[1] (aux)", kind="float")
    except (TypeError, ValueError) as error:
        raise ParamsError(str(error))
    if theta.dtype.base_dtype != aux.dtype.base_dtype:
        raise ParamsError(
            "%s: theta and its auxiliary parameter must have one dtype, got "
            "theta %s and aux %s" % (name, theta.dtype.base_dtype.name,
                                     aux.dtype.base_dtype.name))
    if not theta.shape.is_compatible_with(aux.shape):
        raise ParamsError(
            "%s: theta and its auxiliary parameter must have one shape, got "
            "theta %s and aux %s" % (name, theta.shape, aux.shape))
    if rank is not None and theta.shape.ndims not in (None, rank):
        raise ParamsError(
            "%s: expected rank-%d parameters, got theta of shape %s"
            % (name, rank, theta.shape))
    return theta, aux


def check_input(x, theta, axis, params_name, arg_name="x", rank=None,
                min_rank=None, row_axis=0):
    """Checks an op's input against the parameters it meets: a float tensor
    of theta's dtype whose `axis` has the size of theta's `row_axis` (the
    contraction of a matmul, the channels of a conv), so that a mismatch is
    named here and not by the inner MatMul / Conv2D.

    Args:
      x: the input.
      theta: the parameter tensor.
      axis: the axis of `x` that meets `theta`'s `row_axis`.
      params_name: the parameters' argument name, for the message.
      arg_name: the input's argument name.
      rank, min_rank: as for `_checks.check_tensor`.
      row_axis: the axis of `theta` that `x` meets.

    Returns:
      `x` as a tensor.

    Raises:
      TypeError: a dtype other than theta's.
      ValueError: a wrong rank or size.
    """
    x = check_tensor(x, arg_name, kind="float", dtype=theta.dtype,
                     dtype_of="the dtype of %s" % params_name, rank=rank,
                     min_rank=min_rank)
    if x.shape.ndims is not None and theta.shape.ndims is not None:
        check_dim(x, axis, theta.shape.as_list()[row_axis], arg_name,
                  "theta.shape[%d] of %s, shape %s" % (
                      row_axis, params_name, theta.shape))
    return x


def check_matmul_input(x, theta, transpose_a, transpose_b, params_name):
    """`check_input` for `tf.matmul(x, theta, transpose_a, transpose_b)`:
    x of rank 2 whose contracted axis has the size of theta's."""
    return check_input(x, theta, 0 if transpose_a else 1, params_name,
                       rank=2, row_axis=1 if transpose_b else 0)


def check_conv_input(x, theta, data_format, params_name):
    """`check_input` for a conv2d of x by theta [h, w, in, out]: x of rank
    4 whose channel axis (by `data_format`) has theta's input channels.

    Raises:
      ValueError: also an unknown `data_format`.
    """
    check_choice(data_format, ("NHWC", "NCHW"), "data_format")
    return check_input(x, theta, 1 if data_format == "NCHW" else 3,
                       params_name, rank=4, row_axis=2)


def gather(params, indices, name=None, arg_name="indices"):
    """`tf.gather(params, indices)` on axis 0, with the ids checked.

    Inside an XLA context the gather is written as a one-hot matmul, which
    XLA handles well (its gather of large tables is slow).

    Ids outside [0, vocab) raise `InvalidArgumentError` naming `arg_name`
    when the graph runs (inside XLA, which drops run-time assertions, they
    are clamped into range instead); see `_checks.check_ids`.

    Args:
      params: tensor of shape [vocab, ...], rank >= 1.
      indices: int32 or int64 tensor of any shape, values in [0, vocab).
      name: optional op name.
      arg_name: the caller's name of `indices`, for the error messages.

    Returns:
      tensor of shape indices.shape + params.shape[1:].

    Raises:
      TypeError: `indices` not int32 / int64.
      ValueError: `params` of rank 0.
    """
    with tf.name_scope(name, "gather", [params, indices]):
        params = check_tensor(params, "params", min_rank=1)
        return _gather(params, check_ids(indices, tf.shape(params)[0],
                                         arg_name))


def gather_pair(params, ids, params_name, arg_name="ids"):
    """`gather` of both tensors of a checked (theta, aux) pair, the ids
    checked once (the embedding lookups of the sparse techniques).

    Args:
      params: (theta, aux) as `check_params` returns them, [vocab, ...].
      ids: int32 / int64 tensor, values in [0, vocab).
      params_name: the pair's argument name, for the messages.
      arg_name: the ids' argument name.

    Returns:
      (theta rows, aux rows), each ids.shape + theta.shape[1:].

    Raises:
      TypeError: ids not int32 / int64.
      ValueError: parameters of rank 0.
    """
    theta = check_tensor(params[0], params_name, min_rank=1)
    ids = check_ids(ids, tf.shape(theta)[0], arg_name)
    return _gather(theta, ids), _gather(params[1], ids)


def _gather(params, indices):
    """The gather of `gather`, on ids already checked."""
    if not control_flow.in_xla_context():
        return tf.gather(params, indices)
    flat_ids = tf.reshape(indices, [-1])
    one_hot = tf.one_hot(flat_ids, tf.shape(params)[0], dtype=params.dtype)
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
      ValueError: unknown `data_format` or `padding`, `strides` /
        `dilations` that are not 4 positive ints.
    """
    check_choice(data_format, ("NHWC", "NCHW"), "data_format")
    check_choice(padding, ("SAME", "VALID"), "padding")
    strides = _four_ints(strides, "strides")
    dilations = _four_ints([1, 1, 1, 1] if dilations is None else dilations,
                           "dilations")
    if data_format == "NHWC":
        return tf.nn.conv2d(x, filters, strides, padding,
                            dilations=dilations)
    to_nhwc = [0, 2, 3, 1]
    y = tf.nn.conv2d(tf.transpose(x, to_nhwc), filters,
                     [strides[i] for i in to_nhwc], padding,
                     dilations=[dilations[i] for i in to_nhwc])
    return tf.transpose(y, [0, 3, 1, 2])


def _four_ints(values, arg_name):
    """A list of 4 positive ints (strides, dilations)."""
    try:
        values = list(values)
    except TypeError:
        values = None
    if values is None or len(values) != 4:
        raise ValueError("%s must be 4 positive ints in data_format order, "
                         "got %r" % (arg_name, values))
    return [check_positive_int(v, arg_name) for v in values]


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
    return check_tensor(x, "x", min_rank=2).shape.ndims
