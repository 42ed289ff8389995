"""Comparison tolerances derived from the arithmetic, written once.

A test that compares numbers computed by TF, TFLite or numpy takes its
tolerance from here, so that it says what the computation can differ by
on ANY machine (issue 41: CI runs on whatever CPU; XNNPACK, oneDNN and
Eigen block and reorder sums by CPU features and thread count), not what
one machine happened to give.

The facts used (u = unit roundoff, half an ulp of 1):

* one rounding: ``|fl(x) - x| <= u |x|``; u = 2**-24 (float32),
  2**-53 (float64);
* a sum of n terms in ANY order (hence whatever blocking, vectorization
  or threading a kernel picks) is within ``gamma(n) * sum |term|`` of the
  exact sum, ``gamma(n) = n u / (1 - n u)`` (Higham, Accuracy and
  Stability of Numerical Algorithms, 3.1); a dot product of n terms is a
  sum of n rounded products: ``gamma(n) * sum |a_i b_i|``;
* exp, log, tanh, sigmoid (Eigen's, XNNPACK's, MKL's, numpy's) are
  within a few ulp: ``TRANSCENDENTAL_ULPS``;
* a quantized tensor differs from a float computation of it by up to one
  step of its grid (its ``scale``) for each re-quantization that may round
  the other way.

Exact equality is right only where the arithmetic is bit-identical by
construction (the same op on the same inputs in the same process, integer
ops, copies, masks, zeros that stay zero); such tests say so where they
compare.
"""
import math

import numpy as np

#: float32 / float64 unit roundoff.
U32 = 2.0 ** -24
U64 = 2.0 ** -53

#: ulp error of the transcendental kernels (exp, log, tanh, sigmoid) of
#: Eigen, XNNPACK, MKL and numpy: each is documented / tested within
#: 1-4 ulp; 4 ulp = 8 u.
TRANSCENDENTAL_ULPS = 4


def _np_dtype(dtype):
    """numpy dtype of a numpy or TF dtype (tf.float32 has as_numpy_dtype)."""
    return np.dtype(getattr(dtype, "as_numpy_dtype", dtype))


def unit_roundoff(dtype=np.float32):
    """u of ``dtype``: 2**-24 for float32, 2**-53 for float64."""
    return float(np.finfo(_np_dtype(dtype)).eps) / 2.0


def gamma(n_terms, dtype=np.float32):
    """Higham's gamma_n: a sum of ``n_terms`` in any order is within
    ``gamma(n) * sum |term|`` of the exact sum."""
    nu = n_terms * unit_roundoff(dtype)
    assert nu < 0.5, "bound meaningless for %d terms" % n_terms
    return nu / (1.0 - nu)


#: The probabilistic bound's lambda (Higham and Mary, "A new approach to
#: probabilistic rounding error analysis", SISC 2019): with roundings
#: independent and of mean zero, a sum of n terms is within lambda sqrt(n) u
#: sum |term| with probability >= 1 - 2 exp(-lambda**2 / 2) (6: 3e-8 per
#: element).
PROBABLE_LAMBDA = 6.0


def probable_gamma(n_terms, dtype=np.float32):
    """The probabilistic counterpart of ``gamma``: lambda sqrt(n) u. For
    chains of many sums (a stacked LSTM over many steps) where the worst
    case, every rounding the same way, is too loose to catch a wrong
    answer."""
    return PROBABLE_LAMBDA * math.sqrt(n_terms) * unit_roundoff(dtype)


def float32_sum_rtol(n_terms):
    """Relative tolerance of a float32 sum / dot product of ``n_terms``
    (relative to the sum of |terms|; for same-signed terms, to the sum)."""
    return gamma(n_terms, np.float32)


def transcendental_rtol(dtype=np.float32, ops=1):
    """``ops`` chained exp/log/tanh/sigmoid evaluations, each a few ulp."""
    return ops * TRANSCENDENTAL_ULPS * 2.0 * unit_roundoff(dtype)


def matmul_atol(a, b, dtype=np.float32):
    """Elementwise bound on ``fl(a @ b)`` against the exact product, for
    ``a @ b`` in ``dtype`` summed in any order: gamma(k + 1) (k products
    summed, plus rounding the inputs to ``dtype``) times max |a| @ |b|."""
    a, b = np.abs(np.asarray(a, np.float64)), np.abs(np.asarray(b, np.float64))
    k = a.shape[-1]
    return gamma(k + 1, dtype) * float(np.max(a @ b))


def conv2d_atol(images, filters, dtype=np.float32):
    """Elementwise bound on a float32 ``conv2d(images, filters)`` (NHWC,
    HWIO) against the exact one, summed in any order: gamma(K + 1), K =
    the filter's taps times input channels, times the largest sum |term|
    (at most max |image| times the largest output channel's sum |filter|)."""
    filters = np.abs(np.asarray(filters, np.float64))
    k = int(np.prod(filters.shape[:-1]))
    size = float(np.abs(images).max()) * float(
        filters.reshape(k, -1).sum(0).max())
    return gamma(k + 1, dtype) * size


def lstm_atol(steps, terms, magnitude, dtype=np.float32, probable=False):
    """An LSTM of ``steps`` time steps whose gate pre-activations are sums
    of ``terms`` products (input depth + units (+ 1 bias)) of size at most
    ``magnitude`` in sum |term| (times ``dtype``'s rounding) against another
    evaluation order (or a float64 reference). Per step: the dot product
    (gamma(terms) * magnitude), then sigmoid / tanh (Lipschitz <= 1, a few
    ulp each: 3 for the gates, 2 for c and h, relative to values <= 1 in
    size, plus the c update's product and sum); c' = f c + i g with |f| <=
    1 carries an earlier error at most unchanged, so errors add over the
    steps: at most ``steps`` times the per-step bound (h = o tanh(c) reads
    it through Lipschitz-1 maps). With ``probable``, the sums' bound is
    ``probable_gamma`` and the steps' independent errors add in quadrature
    (sqrt(steps)); the transcendental kernels' errors stay worst-case."""
    u = unit_roundoff(dtype)
    if probable:
        return (math.sqrt(steps) * probable_gamma(terms, dtype) * magnitude
                + steps * (transcendental_rtol(dtype, ops=5) + 4 * u))
    per_step = (gamma(terms, dtype) * magnitude
                + transcendental_rtol(dtype, ops=5) + 4 * u)
    return steps * per_step


def lstm_magnitude(kernel, bias=None, input_max=1.0):
    """The largest sum |term| of an LSTM's gate pre-activations: for each
    gate column, max(|input|, |h| <= 1) times sum |kernel| plus |bias|
    (``kernel`` [depth + units, 4 units]; peepholes and a projection add
    terms of size <= |c|, a few: count them in the kernel's rows)."""
    kernel = np.abs(np.asarray(kernel, np.float64))
    size = max(float(input_max), 1.0) * kernel.sum(0)
    if bias is not None:
        size = size + np.abs(np.asarray(bias, np.float64))
    return float(size.max())


def stacked_lstm_atol(steps, layers, input_max, dtype=np.float32):
    """Probable ``lstm_atol`` of a stack (the worst case compounds over
    layers and steps to ~1e-2 for two layers of 12 steps, too loose to
    catch a wrong answer): ``layers`` is [(kernel, bias, depth)] from the
    bottom; each layer's own rounding plus the error of the h it reads from
    below, which enters its steps' sums through its input rows (times their
    largest column sum |W|), independent from step to step."""
    error, size = 0.0, input_max
    for kernel, bias, depth in layers:
        kernel = np.abs(np.asarray(kernel, np.float64))
        own = lstm_atol(steps, kernel.shape[0] + 1,
                        lstm_magnitude(kernel, bias, size), dtype,
                        probable=True)
        error = own + math.sqrt(steps) * float(
            kernel[:depth].sum(0).max()) * error
        size = 1.0  # |h| <= 1 above the bottom layer
    return error


def log_softmax_atol(logits, dtype=np.float32):
    """Elementwise bound on a float32 log-softmax (last axis) of
    ``logits`` (rounded to ``dtype`` once, e.g. divided by a temperature),
    computed as z - m - log(sum exp(z - m)), m = max: the input's and the
    two subtractions' roundings (u of |z|, of the spread and of spread +
    log V), the V exps (a few ulp each, of values <= 1) and their sum
    (gamma(V)), relative errors of the sum which the log turns into
    absolute ones, and the log's ulps of a value <= log V."""
    z = np.asarray(logits, np.float64)
    u, v = unit_roundoff(dtype), z.shape[-1]
    spread = float(np.max(z.max(-1) - z.min(-1)))
    return (u * (float(np.abs(z).max()) + 2 * spread + math.log(v))
            + transcendental_rtol(dtype) * (1 + math.log(v))
            + gamma(v, dtype))


def quant_step(scale):
    """One step of a quantization grid of ``scale`` (its value spacing)."""
    return float(scale)


def quant_atol(scale, requantizations=1):
    """A quantized result against the float (fake-quant) computation of
    the same function: up to one step per re-quantization that may round
    the other way (fixed-point multipliers against float rescaling, ties,
    the kernel's accumulation order)."""
    return requantizations * quant_step(scale)


def grid_value_atol(low, high, dtype=np.float32):
    """A value on the quantization grid of [low, high] (code * scale +
    the nudged min) computed by two float32 routes (TF's fake quant, a
    TFLite dequantize of the same code): each rounds the scale (relative
    u, times code * scale <= high - low), the product, the nudged min (two
    roundings of <= |low|) and the sum (<= max(|low|, |high|)):
    u (2 (high - low) + 3 max(|low|, |high|)) per route, two routes."""
    size = 2.0 * (high - low) + 3.0 * max(abs(low), abs(high))
    return 2.0 * unit_roundoff(dtype) * size


def printed_atol(decimals):
    """A value printed with ``decimals`` decimals is within half a unit of
    the last printed place of the value it printed."""
    return 0.5 * 10.0 ** -decimals


def perplexity_rtol(mean_log_prob_atol):
    """Perplexities exp(-mean log p) of two scorings whose per-token
    log-probabilities differ by ``mean_log_prob_atol`` on average (nats)
    differ relatively by at most expm1 of it (|mean d| <= mean |d|)."""
    return math.expm1(mean_log_prob_atol)
