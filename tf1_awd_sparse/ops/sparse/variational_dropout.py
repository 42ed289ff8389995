"""Stateless train/eval ops of sparse variational dropout (Molchanov et al.
2017, "Variational Dropout Sparsifies Deep Neural Networks").

Parameters come as `variational_params = (theta, log_sigma2)`: the weight
means and the log-variances of the weights, two tensors of one shape.

Train ops use the local reparameterization trick: the pre-activation
`x @ W` with `W ~ N(theta, sigma^2)` is sampled directly as
`x @ theta + sqrt(x^2 @ sigma^2 + eps) * N(0, 1)`, one draw per example and
output unit. Eval ops use `theta` with the weights whose log(alpha) is at or
above `threshold` set to zero.

Numerics: the train ops compute sigma^2 = exp(log_sigma2) in the
parameters' dtype, so log_sigma2 must stay below log(max) of that dtype
(float32: 88; float16: 11, where a log_sigma2 of 30 overflows to inf and
the gradients are NaN: pass clip_alpha to bound log(alpha), or train in
float32). Numerical floors (`eps`) are at least the dtype's smallest normal
number (`common.dtype_eps`).
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base import _docs
from tf1_awd_sparse.ops.sparse import common
from tf1_awd_sparse.ops.sparse import layer_utils
from tf1_awd_sparse.ops.sparse.common import (
    EPSILON, THRESHOLD, check_sparse_options)
from tf1_awd_sparse.base.checks import check_tensor

__all__ = ["eval_weights", "train_weights", "matmul_train", "matmul_eval",
           "broadcast_matmul_train", "broadcast_matmul_eval", "conv2d_train",
           "conv2d_eval", "embedding_lookup_train", "embedding_lookup_eval",
           "negative_dkl"]

_PARAMS = "variational_params"

# Coefficients of Molchanov et al.'s approximation of -KL(q || log-uniform).
_K1, _K2, _K3 = 0.63576, 1.8732, 1.48695


def _eval_doc(train_op):
    """Docstring tail of an eval op whose other arguments mirror `train_op`."""
    return """
    Args:
      threshold: weights whose unclipped log(alpha) >= threshold are zero.
      eps: small constant inside the log.
      other arguments: as for `{0}`.

    Returns:
      as `{0}`, but deterministic.

    Raises:
      as `{0}`; ValueError: `threshold` not a finite number.
    """.format(train_op)


def _train_params(variational_params, clip_alpha, eps, rank=None):
    check_sparse_options(clip_alpha=clip_alpha, eps=eps)
    theta, log_sigma2 = layer_utils.check_params(variational_params, _PARAMS,
                                                 rank)
    return theta, common.clip_log_sigma2(log_sigma2, theta, clip_alpha, eps)


def _eval_params(variational_params, threshold, eps, rank=None):
    check_sparse_options(threshold=threshold, eps=eps)
    return layer_utils.check_params(variational_params, _PARAMS, rank)


# Half-precision inputs whose variance path runs in float32 (see _sample).
_HALF_TYPES = (tf.float16, tf.bfloat16)


def _sample(op, x, theta, log_sigma2, eps, noise_shape=None, noise=None):
    """op(x, theta) + sqrt(op(x^2, sigma^2) + eps) * noise, noise ~ N(0, 1).

    `noise` may be given (e.g. held across RNN time steps); otherwise it is
    drawn with `noise_shape` (default: the output's shape).

    In float16 / bfloat16 the standard deviation is computed in float32
    and cast back (eps still the half type's floor, `common.dtype_eps`):
    its gradient with respect to x is ``2 x (g / (2 std)) @ sigma^2``,
    whose middle factor overflows float16 (65504) already for sigma^2 = e^8
    and std at its floor, so that a zero input row got 0 * inf = NaN.
    """
    mean = op(x, theta)
    dtype = mean.dtype.base_dtype
    if dtype not in _HALF_TYPES:
        return _reparameterize(mean, op(tf.square(x), tf.exp(log_sigma2)),
                               eps, noise_shape, noise)
    x32 = tf.cast(x, tf.float32)
    variance = op(tf.square(x32), tf.exp(tf.cast(log_sigma2, tf.float32)))
    std = tf.cast(tf.sqrt(variance + common.dtype_eps(eps, dtype)), dtype)
    return _add_noise(mean, std, noise_shape, noise)


def _reparameterize(mean, variance, eps, noise_shape=None, noise=None):
    """mean + sqrt(variance + eps) * noise, noise ~ N(0, 1); eps at least
    the dtype's smallest normal number (`common.dtype_eps`: in float16 the
    default 1e-8 is 0, and a zero input row gave NaN gradients)."""
    eps = common.dtype_eps(eps, mean.dtype)
    return _add_noise(mean, tf.sqrt(variance + eps), noise_shape, noise)


def _add_noise(mean, std, noise_shape=None, noise=None):
    """mean + std * noise, noise ~ N(0, 1) of `noise_shape` unless given."""
    if noise is None:
        noise = common.standard_normal(
            tf.shape(mean) if noise_shape is None else noise_shape,
            dtype=mean.dtype)
    return mean + std * noise


def eval_weights(variational_params, threshold=THRESHOLD, eps=EPSILON):
    """theta with the weights of log(alpha) >= threshold set to zero.

    Args:
      variational_params: (theta, log_sigma2), tensors of one shape.
      threshold: log(alpha) at and above which a weight is dropped; the
        unclipped log(alpha) is compared (strict `<` keeps a weight).
      eps: small constant inside the log.

    Returns:
      tensor of theta's shape.

    Raises:
      ParamsError (a ValueError): malformed `variational_params`.
      ValueError: `threshold` or `eps` out of range.
    """
    theta, log_sigma2 = _eval_params(variational_params, threshold, eps)
    return common.vd_eval_weights(theta, log_sigma2, threshold, eps)


def train_weights(variational_params, clip_alpha=None, eps=EPSILON):
    """One sample W = theta + sqrt(sigma^2 + eps) * N(0, 1) of all weights.

    For weights that must be shared across examples (e.g. recurrent
    weights held over time steps); layers use the cheaper local
    reparameterization of `matmul_train` instead.

    Args:
      variational_params: (theta, log_sigma2), tensors of one shape.
      clip_alpha: None, or clip log(alpha) to [-clip_alpha, clip_alpha].
      eps: small constant added to sigma^2 under the square root.

    Returns:
      tensor of theta's shape.

    Raises:
      ParamsError (a ValueError): malformed `variational_params`.
      ValueError: `clip_alpha` or `eps` out of range.
    """
    theta, log_sigma2 = _train_params(variational_params, clip_alpha, eps)
    return _sample_weights(theta, log_sigma2, eps)


def _sample_weights(theta, log_sigma2, eps):
    return _reparameterize(theta, tf.exp(log_sigma2), eps)


def matmul_train(x, variational_params, transpose_a=False, transpose_b=False,
                 clip_alpha=None, eps=EPSILON, name=None, noise=None):
    """Training-time `x @ W`, W ~ N(theta, sigma^2), by local reparam.

    Returns `x @ theta + sqrt(x^2 @ sigma^2 + eps) * N(0, 1)` with fresh
    noise per example and output unit.

    Args:
      x: float tensor [batch, in] (or [in, batch] with `transpose_a`).
      variational_params: (theta, log_sigma2), each [in, out] (or [out, in]
        with `transpose_b`).
      transpose_a, transpose_b: as for `tf.matmul`.
      clip_alpha: None for no clipping; any number (0 included) clips
        log(alpha) to [-clip_alpha, clip_alpha] and recomputes log(sigma^2)
        from it before use.
      eps: small constant under the square root (finite gradients at 0).
      name: optional name scope.
      noise: optional N(0, 1) tensor broadcastable to [batch, out] used
        instead of fresh noise, e.g. to hold the noise over RNN time steps.

    Returns:
      float tensor [batch, out].

    Raises:
      ParamsError (a ValueError): `variational_params` is not a 2-tuple of
        float tensors of one shape, dtype and rank 2.
      ValueError: `x` not of rank 2 or of another inner dimension than
        theta's; `clip_alpha` or `eps` out of range.
      TypeError: `x` of another dtype than theta.
    """
    with tf.name_scope(name, "vd_matmul_train", [x]):
        theta, log_sigma2 = _train_params(variational_params, clip_alpha,
                                          eps, rank=2)
        x = layer_utils.check_matmul_input(x, theta, transpose_a,
                                           transpose_b, _PARAMS)
        return _sample(_matmul(transpose_a, transpose_b), x, theta,
                       log_sigma2, eps, noise=noise)


@_docs.append(_eval_doc("matmul_train"))
def matmul_eval(x, variational_params, transpose_a=False, transpose_b=False,
                threshold=THRESHOLD, eps=EPSILON, name=None):
    """Evaluation-time `x @ (theta * mask)`, mask = log(alpha) < threshold."""
    with tf.name_scope(name, "vd_matmul_eval", [x]):
        theta, log_sigma2 = _eval_params(variational_params, threshold, eps,
                                         rank=2)
        x = layer_utils.check_matmul_input(x, theta, transpose_a,
                                           transpose_b, _PARAMS)
        weights = common.vd_eval_weights(theta, log_sigma2, threshold, eps)
        return _matmul(transpose_a, transpose_b)(x, weights)


def _matmul(transpose_a, transpose_b):
    return lambda a, b: tf.matmul(a, b, transpose_a=transpose_a,
                                  transpose_b=transpose_b)


def broadcast_matmul_train(x, variational_params, clip_alpha=None,
                           eps=EPSILON, name=None):
    """`matmul_train` for x of rank >= 2, contracted on its last axis.

    The noise is shared across the middle axes (noise shape
    [batch, 1, ..., 1, out]), e.g. one draw per sequence and unit.

    Args:
      x: float tensor [batch, ..., in] of known rank >= 2.
      variational_params: (theta, log_sigma2), each [in, out].
      clip_alpha: None or clip bound of log(alpha) (see `matmul_train`).
      eps: small constant under the square root.
      name: optional name scope.

    Returns:
      float tensor [batch, ..., out], static shape set.

    Raises:
      ParamsError (a ValueError): malformed `variational_params` or not
        rank 2.
      ValueError: `x` of unknown rank or rank < 2, or a last dimension
        other than theta's rows; `clip_alpha` or `eps` out of range.
      TypeError: `x` of another dtype than theta.
    """
    with tf.name_scope(name, "vd_broadcast_matmul_train", [x]):
        theta, log_sigma2 = _train_params(variational_params, clip_alpha,
                                          eps, rank=2)
        x = layer_utils.check_input(x, theta, -1, _PARAMS, min_rank=2)
        noise_shape = layer_utils.broadcast_noise_shape(x,
                                                        tf.shape(theta)[1])
        return _sample(layer_utils.broadcast_matmul, x, theta, log_sigma2,
                       eps, noise_shape)


@_docs.append(_eval_doc("broadcast_matmul_train"))
def broadcast_matmul_eval(x, variational_params, threshold=THRESHOLD,
                          eps=EPSILON, name=None):
    """`matmul_eval` for x of rank >= 2, contracted on its last axis."""
    with tf.name_scope(name, "vd_broadcast_matmul_eval", [x]):
        theta, log_sigma2 = _eval_params(variational_params, threshold, eps,
                                         rank=2)
        x = layer_utils.check_input(x, theta, -1, _PARAMS, min_rank=2)
        return layer_utils.broadcast_matmul(
            x, common.vd_eval_weights(theta, log_sigma2, threshold, eps))


def conv2d_train(x, variational_params, strides, padding,
                 data_format="NHWC", clip_alpha=None, eps=EPSILON,
                 name=None):
    """Training-time conv2d with W ~ N(theta, sigma^2), by local reparam.

    Returns `conv(x, theta) + sqrt(conv(x^2, sigma^2) + eps) * N(0, 1)`,
    fresh noise per output element.

    Args:
      x: float tensor, rank 4, in `data_format`.
      variational_params: (theta, log_sigma2), each [h, w, in, out].
      strides: 4 ints in `data_format` order.
      padding: 'SAME' or 'VALID'.
      data_format: 'NHWC' or 'NCHW' (NCHW also runs on CPU).
      clip_alpha: None or clip bound of log(alpha) (see `matmul_train`).
      eps: small constant under the square root.
      name: optional name scope.

    Returns:
      float tensor, rank 4, in `data_format`.

    Raises:
      ParamsError (a ValueError): malformed `variational_params` or not
        rank 4.
      ValueError: unknown `data_format` or `padding`, bad `strides`, `x`
        not of rank 4 or with other input channels than theta;
        `clip_alpha` or `eps` out of range.
      TypeError: `x` of another dtype than theta.
    """
    with tf.name_scope(name, "vd_conv2d_train", [x]):
        theta, log_sigma2 = _train_params(variational_params, clip_alpha,
                                          eps, rank=4)
        x = layer_utils.check_conv_input(x, theta, data_format, _PARAMS)
        return _sample(_conv(strides, padding, data_format), x, theta,
                       log_sigma2, eps)


@_docs.append(_eval_doc("conv2d_train"))
def conv2d_eval(x, variational_params, strides, padding, data_format="NHWC",
                threshold=THRESHOLD, eps=EPSILON, name=None):
    """Evaluation-time conv2d with theta * (log(alpha) < threshold)."""
    with tf.name_scope(name, "vd_conv2d_eval", [x]):
        theta, log_sigma2 = _eval_params(variational_params, threshold, eps,
                                         rank=4)
        x = layer_utils.check_conv_input(x, theta, data_format, _PARAMS)
        return _conv(strides, padding, data_format)(
            x, common.vd_eval_weights(theta, log_sigma2, threshold, eps))


def _conv(strides, padding, data_format):
    return lambda a, w: layer_utils.conv2d(a, w, strides, padding,
                                           data_format)


def embedding_lookup_train(variational_params, ids, name=None,
                           clip_alpha=None, eps=EPSILON):
    """Training-time embedding lookup with noisy rows.

    Gathers the rows of theta and log_sigma2 first, then samples
    `theta_g + sqrt(sigma2_g + eps) * N(0, 1)` per looked-up element, so
    cost and memory scale with the number of ids, not the vocabulary.

    Args:
      variational_params: (theta, log_sigma2), each [vocab, dim].
      ids: int32 or int64 tensor of any shape.
      name: optional name scope.
      clip_alpha: None or clip bound of log(alpha) (see `matmul_train`),
        applied to the gathered rows.
      eps: small constant under the square root.

    Returns:
      float tensor ids.shape + [dim].

    Ids outside [0, vocab) raise `InvalidArgumentError` naming `ids` when
    the graph runs (clamped inside XLA, which drops run-time assertions:
    see `tf1_awd_sparse.base.checks.check_ids`).

    Raises:
      ParamsError (a ValueError): malformed `variational_params`.
      TypeError: ids not int32 / int64.
      ValueError: `clip_alpha` or `eps` out of range.
    """
    with tf.name_scope(name, "vd_embedding_lookup_train", [ids]):
        check_sparse_options(clip_alpha=clip_alpha, eps=eps)
        theta_g, log_sigma2_g = layer_utils.gather_pair(
            layer_utils.check_params(variational_params, _PARAMS), ids,
            _PARAMS)
        log_sigma2_g = common.clip_log_sigma2(log_sigma2_g, theta_g,
                                              clip_alpha, eps)
        return _sample_weights(theta_g, log_sigma2_g, eps)


@_docs.append(_eval_doc("embedding_lookup_train"))
def embedding_lookup_eval(variational_params, ids, name=None,
                          threshold=THRESHOLD, eps=EPSILON):
    """Evaluation-time embedding lookup: gathered theta * (log_alpha < t)."""
    with tf.name_scope(name, "vd_embedding_lookup_eval", [ids]):
        theta_g, log_sigma2_g = layer_utils.gather_pair(
            _eval_params(variational_params, threshold, eps), ids, _PARAMS)
        return common.vd_eval_weights(theta_g, log_sigma2_g, threshold, eps)


def negative_dkl(variational_params=None, clip_alpha=None, eps=EPSILON,
                 log_alpha=None, name=None):
    """KL(q || log-uniform prior) summed over all weights: the VD penalty.

    Uses Molchanov et al.'s approximation per weight,
    `-KL ~= k1 * sigmoid(k2 + k3 * log_alpha) - 0.5 * log1p(exp(-log_alpha))
    - k1` with k1, k2, k3 = 0.63576, 1.8732, 1.48695, and returns **minus**
    its sum, i.e. the KL itself (>= 0), the value to add to the loss. The
    historical name `negative_dkl` is kept for compatibility with code
    written against earlier sparse-VD libraries.

    Args:
      variational_params: (theta, log_sigma2); log(alpha) is computed from
        them (clipped to [-clip_alpha, clip_alpha] unless None).
      clip_alpha: None or clip bound of log(alpha); ignored with log_alpha.
      eps: small constant inside the log.
      log_alpha: alternatively, log(alpha) directly (any shape).
      name: optional name scope.

    Returns:
      float scalar tensor, the summed KL.

    Raises:
      ValueError: neither `variational_params` nor `log_alpha` given;
        `clip_alpha` or `eps` out of range.
      ParamsError (a ValueError): malformed `variational_params`.
      TypeError: `log_alpha` not a float tensor.
    """
    if variational_params is None and log_alpha is None:
        raise ValueError("negative_dkl needs variational_params=(theta, "
                         "log_sigma2) or log_alpha, got neither")
    check_sparse_options(clip_alpha=clip_alpha, eps=eps)
    with tf.name_scope(name, "vd_negative_dkl"):
        if log_alpha is None:
            theta, log_sigma2 = layer_utils.check_params(variational_params,
                                                         _PARAMS)
            log_alpha = common.compute_log_alpha(log_sigma2, theta, eps,
                                                 value_limit=clip_alpha)
        log_alpha = check_tensor(log_alpha, "log_alpha", kind="float")
        # softplus(-a) == log1p(exp(-a)) without overflow at a << 0.
        neg_kl = (_K1 * tf.sigmoid(_K2 + _K3 * log_alpha)
                  - 0.5 * tf.nn.softplus(-log_alpha) - _K1)
        return -tf.reduce_sum(neg_kl)
