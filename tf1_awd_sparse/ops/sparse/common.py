"""Constants and math shared by sparse variational dropout and L0 gates.

Every formula of the package is written once, here, with its options'
defaults (`EPSILON`, `BETA`, `GAMMA`, `ZETA`, `THRESHOLD`) and the one
check of their ranges (`check_sparse_options`). The formulas that the
numpy-only checkpoint report also needs are written against a tiny "backend"
(`TF_MATH` or `NUMPY_MATH`) so that the graph and the numpy versions cannot
drift apart.
"""
import collections
import math as _py_math

import numpy as np
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_real

__all__ = ["EPSILON", "BETA", "GAMMA", "ZETA", "THRESHOLD",
           "check_sparse_options", "VD_COLLECTION",
           "L0_COLLECTION", "TF_MATH", "NUMPY_MATH", "dtype_eps",
           "compute_log_alpha", "compute_log_sigma2", "clip_log_sigma2",
           "vd_keep_mask", "vd_eval_weights", "hard_concrete_sample",
           "hard_concrete_mean", "l0_eval_weights", "standard_normal",
           "hard_concrete_nonzero_logit", "hard_concrete_nonzero_probability"]

# Numerical floor inside logs and square roots. In a dtype whose smallest
# normal number is larger (float16: 6.1e-5) that number is used instead
# (`dtype_eps`): 1e-8 rounds to 0 in float16, and the gradients of
# sqrt(0) and log(0) are infinite.
EPSILON = 1e-8
# Hard-concrete temperature and stretch interval (Louizos et al. 2018).
BETA = 2. / 3.
GAMMA = -0.1
ZETA = 1.1
# log(alpha) above which a variational-dropout weight is treated as zero.
THRESHOLD = 3.0


# Default of check_sparse_options' arguments: not passed, not checked.
_OMITTED = object()


def check_sparse_options(clip_alpha=_OMITTED, eps=_OMITTED,
                         threshold=_OMITTED, beta=_OMITTED, gamma=_OMITTED,
                         zeta=_OMITTED):
    """Validates the options of the sparse techniques given as Python
    numbers (the ones not passed are not checked; ``clip_alpha=None`` means
    no clipping, None is no value for the others).

    Args:
      clip_alpha: VD: None, or a finite number >= 0 (log(alpha) is clipped
        to ``[-clip_alpha, clip_alpha]``).
      eps: the numerical floor inside logs / square roots: finite, > 0.
      threshold: VD: the log(alpha) at which a weight is dropped: finite.
      beta: hard-concrete temperature: finite, > 0.
      gamma, zeta: hard-concrete stretch interval: ``gamma < 0`` and
        ``zeta > 1`` (so that the clipped gate can be exactly 0 and 1,
        Louizos et al. 2018).

    Raises:
      ValueError: a value outside its range, NaN or not a number, naming
        the option.
    """
    checks = {
        "clip_alpha": dict(low=0, allow_none=True),
        "eps": dict(low=0, low_open=True),
        "threshold": {},
        "beta": dict(low=0, low_open=True),
        "gamma": dict(high=0, high_open=True),
        "zeta": dict(low=1, low_open=True)}
    given = {"clip_alpha": clip_alpha, "eps": eps, "threshold": threshold,
             "beta": beta, "gamma": gamma, "zeta": zeta}
    for name in sorted(given):
        if given[name] is not _OMITTED:
            check_real(given[name], name, **checks[name])


# Graph collection keys of the registered (theta, aux) pairs of each
# technique. Register and read pairs only through
# `sparse_layers.techniques.register_pair` / `registered_pairs`: the items
# are encoded names, so that they survive a MetaGraph export.
VD_COLLECTION = "theta_logsigma2"
L0_COLLECTION = "theta_logalpha"

_Math = collections.namedtuple(
    "_Math", ["log", "square", "clip", "sigmoid", "logical_not", "equal",
              "cast"])

#: Elementwise ops for graph tensors.
TF_MATH = _Math(log=tf.math.log, square=tf.square, clip=tf.clip_by_value,
                sigmoid=tf.sigmoid, logical_not=tf.logical_not,
                equal=tf.equal, cast=tf.cast)


def _np_sigmoid(x):
    # exp of a negative magnitude only, so large |x| cannot overflow.
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1. / (1. + e), e / (1. + e))


#: The same ops for numpy arrays (used by the checkpoint report).
NUMPY_MATH = _Math(log=np.log, square=np.square, clip=np.clip,
                   sigmoid=_np_sigmoid, logical_not=np.logical_not,
                   equal=np.equal,
                   cast=lambda x, dtype: np.asarray(x).astype(dtype))


def dtype_eps(eps, dtype):
    """`eps`, raised to the smallest normal number of `dtype` when below it
    (only float16 and bfloat16 are concerned with the default `EPSILON`):
    a floor that rounds to zero would not keep logs and square roots and
    their gradients finite.

    Args:
      eps: Python float > 0.
      dtype: a float `tf.DType` or numpy dtype.

    Returns:
      Python float.
    """
    return max(float(eps), float(np.finfo(
        tf.as_dtype(dtype).as_numpy_dtype).tiny))


def compute_log_alpha(log_sigma2, theta, eps=EPSILON, value_limit=8.,
                      math=TF_MATH):
    """log(alpha) = log(sigma^2) - log(theta^2 + eps), optionally clipped.

    Args:
      log_sigma2: float tensor (or array with `math=NUMPY_MATH`), any shape.
      theta: float tensor of the same shape, the weight means.
      eps: small constant that keeps the log finite at theta = 0 (at
        least the smallest normal number of theta's dtype, `dtype_eps`).
      value_limit: clip the result to [-value_limit, value_limit]; None
        disables clipping.
      math: `TF_MATH` (default) or `NUMPY_MATH`.

    Returns:
      log(alpha), same shape as `theta`.

    Raises:
      ValueError: `eps <= 0` or a `value_limit` that is not None or a
        number >= 0.
    """
    check_sparse_options(clip_alpha=value_limit, eps=eps)
    eps = dtype_eps(eps, theta.dtype)
    log_alpha = log_sigma2 - math.log(math.square(theta) + eps)
    if value_limit is not None:
        log_alpha = math.clip(log_alpha, -value_limit, value_limit)
    return log_alpha


def compute_log_sigma2(log_alpha, theta, eps=EPSILON):
    """log(sigma^2) = log(alpha) + log(theta^2 + eps), inverse of the above.

    Args:
      log_alpha: float tensor, any shape.
      theta: float tensor of the same shape.
      eps: small constant that keeps the log finite at theta = 0.

    Returns:
      log(sigma^2), same shape as `theta`.
    """
    theta = tf.convert_to_tensor(theta)
    eps = dtype_eps(eps, theta.dtype)
    return log_alpha + tf.log(tf.square(theta) + eps)


def clip_log_sigma2(log_sigma2, theta, clip_alpha, eps=EPSILON):
    """log(sigma^2) after clipping log(alpha) to [-clip_alpha, clip_alpha].

    Args:
      log_sigma2: float tensor, any shape.
      theta: float tensor of the same shape.
      clip_alpha: None (returns `log_sigma2` unchanged) or a number; 0 clips
        log(alpha) to exactly 0.
      eps: small constant inside the logs.

    Returns:
      The (possibly) clipped log(sigma^2), same shape.
    """
    if clip_alpha is None:
        return log_sigma2
    log_alpha = compute_log_alpha(log_sigma2, theta, eps,
                                  value_limit=clip_alpha)
    return compute_log_sigma2(log_alpha, theta, eps)


def vd_keep_mask(log_sigma2, theta, threshold=THRESHOLD, eps=EPSILON,
                 math=TF_MATH):
    """Boolean mask of the weights sparse VD keeps at evaluation.

    A weight is kept when its **unclipped** log(alpha) is strictly below
    `threshold`.

    Args:
      log_sigma2: float tensor (or numpy array with `math=NUMPY_MATH`).
      theta: float tensor of the same shape.
      threshold: log(alpha) at and above which a weight is dropped.
      eps: small constant inside the log.
      math: `TF_MATH` or `NUMPY_MATH`.

    Returns:
      bool tensor/array, same shape as `theta`.
    """
    return compute_log_alpha(log_sigma2, theta, eps, value_limit=None,
                             math=math) < threshold


def vd_eval_weights(theta, log_sigma2, threshold=THRESHOLD, eps=EPSILON,
                    math=TF_MATH):
    """Evaluation weights of sparse VD: theta * vd_keep_mask(...).

    Args:
      theta: float tensor (or numpy array with `math=NUMPY_MATH`).
      log_sigma2: float tensor/array of the same shape.
      threshold, eps, math: as for `vd_keep_mask`.

    Returns:
      theta with the dropped weights set to 0, theta's shape and dtype.
    """
    keep = vd_keep_mask(log_sigma2, theta, threshold, eps, math=math)
    return theta * math.cast(keep, theta.dtype)


def hard_concrete_sample(log_alpha, beta=BETA, gamma=GAMMA, zeta=ZETA,
                         eps=EPSILON):
    """One sample of the hard-concrete gate per element of `log_alpha`.

    u ~ U(0, 1); s = sigmoid((log(u + eps) - log(1 - u) + log_alpha) / beta);
    returns clip(s * (zeta - gamma) + gamma, 0, 1).

    Args:
      log_alpha: float tensor, any shape (the gate's location parameter).
      beta: temperature.
      gamma, zeta: stretch interval (gamma < 0 < 1 < zeta).
      eps: keeps log(u) finite at u = 0.

    Returns:
      float tensor of gates in [0, 1], the shape of `log_alpha`.

    Raises:
      ValueError: `beta <= 0`, `gamma >= 0`, `zeta <= 1`, `eps <= 0` or
        any of them not a finite number (the gates would be garbage).
    """
    check_sparse_options(beta=beta, gamma=gamma, zeta=zeta, eps=eps)
    log_alpha = tf.convert_to_tensor(log_alpha)  # a Variable's dtype is _ref
    u = tf.random_uniform(tf.shape(log_alpha), dtype=log_alpha.dtype)
    eps = dtype_eps(eps, log_alpha.dtype)
    s = tf.sigmoid((tf.log(u + eps) - tf.log(1. - u) + log_alpha) / beta)
    return _stretch_and_clip(s, gamma, zeta, TF_MATH)


def hard_concrete_mean(log_alpha, gamma=GAMMA, zeta=ZETA, math=TF_MATH):
    """Deterministic hard-concrete gate used at evaluation.

    clip(sigmoid(log_alpha) * (zeta - gamma) + gamma, 0, 1).

    Args:
      log_alpha: float tensor (or numpy array with `math=NUMPY_MATH`).
      gamma, zeta: stretch interval.
      math: `TF_MATH` or `NUMPY_MATH`.

    Returns:
      gates in [0, 1], the shape of `log_alpha`.

    Raises:
      ValueError: `gamma >= 0`, `zeta <= 1` or either not a finite number.
    """
    check_sparse_options(gamma=gamma, zeta=zeta)
    return _stretch_and_clip(math.sigmoid(log_alpha), gamma, zeta, math)


def l0_eval_weights(theta, log_alpha, gamma=GAMMA, zeta=ZETA, math=TF_MATH):
    """Evaluation weights of L0: theta * hard_concrete_mean(log_alpha).

    Args:
      theta: float tensor (or numpy array with `math=NUMPY_MATH`).
      log_alpha: float tensor/array of the same shape.
      gamma, zeta, math: as for `hard_concrete_mean`.

    Returns:
      theta scaled by its deterministic gate, theta's shape and dtype.
    """
    # The numpy sigmoid computes in float64; the gate takes theta's dtype
    # so that both backends multiply in the same precision.
    gate = hard_concrete_mean(log_alpha, gamma, zeta, math=math)
    return theta * math.cast(gate, theta.dtype)


def _stretch_and_clip(s, gamma, zeta, math):
    return math.clip(s * (zeta - gamma) + gamma, 0., 1.)


def standard_normal(shape, dtype=tf.float32):
    """N(0, 1) samples by the Box-Muller transform written with TF ops.

    Same distribution as `tf.random_normal` (which also applies Box-Muller
    to 23-bit uniforms), but TF 1.13's CPU kernel evaluates the transform
    in scalar code; as vectorized ops it costs about half, which is most of
    the overhead of the VD train ops over a plain matmul.

    Args:
      shape: 1-D int list or tensor, the output shape.
      dtype: float dtype.

    Returns:
      tensor of `shape` and `dtype`; seeded by `tf.set_random_seed`.
    """
    dtype = tf.as_dtype(dtype)
    shape = tf.convert_to_tensor(shape, dtype=tf.int32)
    size = tf.reduce_prod(shape)
    # One uniform pair gives two normals: radius r and angle t.
    u = tf.random_uniform(tf.stack([2, (size + 1) // 2]),
                          minval=np.finfo(dtype.as_numpy_dtype).tiny,
                          maxval=1., dtype=dtype)
    radius = tf.sqrt(-2. * tf.log(u[0]))
    angle = (2. * _py_math.pi) * u[1]
    normals = tf.concat([radius * tf.cos(angle), radius * tf.sin(angle)], 0)
    return tf.reshape(normals[:size], shape)


def hard_concrete_nonzero_logit(log_alpha, beta=BETA, gamma=GAMMA,
                                zeta=ZETA):
    """The logit of P(z != 0) of each hard-concrete gate,
    ``log_alpha - beta * log(-gamma / zeta)``: ordered as the probability
    but never saturating (a final cut ranks gates by it without ties at
    1.0).

    Args:
      log_alpha: float tensor or numpy array.
      beta, gamma, zeta: temperature and stretch interval (gamma < 0).

    Returns:
      logits, the shape of `log_alpha`.

    Raises:
      ValueError: options out of range (see
        `hard_concrete_nonzero_probability`).
    """
    check_sparse_options(beta=beta, gamma=gamma, zeta=zeta)
    return log_alpha - beta * np.log(-gamma / zeta)


def hard_concrete_nonzero_probability(log_alpha, beta=BETA, gamma=GAMMA,
                                      zeta=ZETA, math=TF_MATH):
    """P(z != 0) of each hard-concrete gate.

    sigmoid(log_alpha - beta * log(-gamma / zeta)); its sum is the expected
    L0 norm.

    Args:
      log_alpha: float tensor (or numpy array with `math=NUMPY_MATH`).
      beta, gamma, zeta: temperature and stretch interval (gamma < 0).
      math: `TF_MATH` or `NUMPY_MATH`.

    Returns:
      probabilities, the shape of `log_alpha`.

    Raises:
      ValueError: `beta <= 0`, `gamma >= 0`, `zeta <= 1` or any of them not
        a finite number (the log of `-gamma / zeta` would be NaN).
    """
    return math.sigmoid(hard_concrete_nonzero_logit(log_alpha, beta, gamma,
                                                    zeta))
