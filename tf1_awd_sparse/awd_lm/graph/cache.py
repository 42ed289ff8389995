"""The continuous cache pointer (Grave, Joulin, Usunier 2017, "Improving
Neural Language Models with a Continuous Cache"), applied at evaluation on
top of a language model's per-step outputs, in numpy.

At step t the model has read the stream up to x_t; its top layer's output
h_t (the tied decoder's input) gives the vocabulary distribution
p_vocab(. | x_<=t) of x_{t+1}. The cache holds the previous ``window``
steps' outputs h_i and the words that followed them, x_{i+1}:

    p_cache(w) = sum_{i: x_{i+1} = w} exp(theta h_t . h_i)
                 / sum_i exp(theta h_t . h_i)
    p(w) = (1 - lambda) p_vocab(w) + lambda p_cache(w)

over i in [t - window, t). At a stream's first step the cache is empty and
p = p_vocab; until ``window`` steps have been read it holds those there
are. Nothing is trained: window, theta and lambda are chosen on validation
text (`grid_search`), then applied unchanged to test text.
"""
import collections

import numpy as np

from tf1_awd_sparse.base.scalar_checks import check_positive_int, check_real

__all__ = ["CacheConfig", "check_config", "pointer_log_probs", "mix",
           "apply", "grid_search", "WINDOWS", "THETAS", "LAMBDAS"]

CacheConfig = collections.namedtuple("CacheConfig",
                                     ["window", "theta", "lambda_"])
CacheConfig.__doc__ = """The cache's parameters (see the module docstring).

Fields:
  window: int >= 1, previous steps held.
  theta: float >= 0, the inverse temperature of the dot products.
  lambda_: float in [0, 1), the cache's weight in the mixture (0: the
    model's own probabilities, exactly).
"""

#: The default grid of `grid_search` (and `LanguageModel.tune_cache`).
WINDOWS = (50, 100, 200, 300, 500, 1000, 2000, 4000)
THETAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 4.0)
LAMBDAS = (0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)

#: Steps whose dot products are computed at once.
_BLOCK = 256


def check_config(config, arg_name="cache"):
    """A `CacheConfig` (or a 3-sequence window, theta, lambda) checked.

    Returns:
      CacheConfig of an int and two floats.

    Raises:
      ValueError: not three values, or one out of range (named, e.g.
        ``cache.window must be an int >= 1, got 0``).
    """
    if not isinstance(config, (tuple, list)) or len(config) != 3:
        raise ValueError("%s must be a CacheConfig(window, theta, lambda_), "
                         "got %r" % (arg_name, config))
    window, theta, lambda_ = config
    return CacheConfig(
        check_positive_int(window, arg_name + ".window"),
        check_real(theta, arg_name + ".theta", low=0.0),
        check_real(lambda_, arg_name + ".lambda_", low=0.0, high=1.0,
                   high_open=True))


def pointer_log_probs(hidden, targets, window, thetas, past=None):
    """log p_cache of each step's target, for several thetas.

    Args:
      hidden: float ``[n, d]``, the top layer's output at each step.
      targets: int ``[n]``, the word that follows each step.
      window: int >= 1.
      thetas: sequence of floats.
      past: None or ``(hidden [k, d], targets [k])`` of the steps before
        (the same stream, read earlier); only the last ``window`` matter.

    Returns:
      ``(log_cache, filled)``: float64 ``[len(thetas), n]`` (``-inf`` where
      the target is not in the cache) and int ``[n]``, the entries each
      step's cache holds (0: empty, the mixture keeps p_vocab).

    Raises:
      ValueError: shapes that do not fit (named).
    """
    hidden = np.asarray(hidden, np.float64)
    targets = np.asarray(targets).astype(np.int64)
    if hidden.ndim != 2 or targets.shape != hidden.shape[:1]:
        raise ValueError("hidden must be [n, d] and targets [n], got shapes "
                         "%s and %s" % (hidden.shape, targets.shape))
    keys, words = hidden, targets
    if past is not None and len(past[1]):
        keys = np.concatenate([np.asarray(past[0], np.float64)[-window:],
                               hidden])
        words = np.concatenate([np.asarray(past[1], np.int64)[-window:],
                                targets])
    offset = keys.shape[0] - hidden.shape[0]
    n = hidden.shape[0]
    out = np.full([len(thetas), n], -np.inf)
    filled = np.minimum(window, offset + np.arange(n))
    for t0 in range(0, n, _BLOCK):
        t1 = min(n, t0 + _BLOCK)
        lo, hi = max(0, offset + t0 - window), offset + t1 - 1
        if hi <= lo:
            continue
        dots = hidden[t0:t1] @ keys[lo:hi].T
        at = offset + np.arange(t0, t1)[:, None]
        key = lo + np.arange(hi - lo)[None, :]
        valid = (key < at) & (key >= at - window)
        match = valid & (words[lo:hi][None, :] == targets[t0:t1, None])
        for j, theta in enumerate(thetas):
            scores = np.where(valid, theta * dots, -np.inf)
            top = scores.max(axis=1, keepdims=True)
            top[~np.isfinite(top)] = 0.0
            weights = np.exp(scores - top)
            with np.errstate(divide="ignore", invalid="ignore"):
                out[j, t0:t1] = np.log((weights * match).sum(axis=1)) - \
                    np.log(weights.sum(axis=1))
    out[:, filled == 0] = -np.inf
    return out, filled


def mix(log_vocab, log_cache, filled, lambda_):
    """log((1 - lambda) p_vocab + lambda p_cache) per step; p_vocab alone
    where the cache is empty (``filled == 0``). ``lambda_ = 0`` returns
    ``log_vocab`` exactly. Arrays broadcast; float64."""
    log_vocab = np.asarray(log_vocab, np.float64)
    if lambda_ == 0:
        return log_vocab.copy()
    with np.errstate(divide="ignore"):
        mixed = np.logaddexp(np.log1p(-lambda_) + log_vocab,
                             np.log(lambda_) + log_cache)
    return np.where(np.asarray(filled) > 0, mixed, log_vocab)


def apply(config, log_vocab, hidden, targets, past=None):
    """The mixture of one stream's steps with a cache of ``config``.

    Args:
      config: CacheConfig (checked).
      log_vocab: float ``[n]``, the model's log-probability of each target.
      hidden, targets, past: as `pointer_log_probs`.

    Returns:
      ``(log_probs [n] float64, past)``: the mixed log-probabilities and
      the history to pass with the stream's next steps.
    """
    config = check_config(config)
    log_cache, filled = pointer_log_probs(hidden, targets, config.window,
                                          [config.theta], past)
    mixed = mix(log_vocab, log_cache[0], filled, config.lambda_)
    keys, words = np.asarray(hidden), np.asarray(targets)
    if past is not None:
        keys = np.concatenate([past[0], keys])
        words = np.concatenate([past[1], words])
    return mixed, (keys[-config.window:], words[-config.window:])


def grid_search(log_vocab, hidden, targets, windows=WINDOWS, thetas=THETAS,
                lambdas=LAMBDAS, on_window=None):
    """The cache parameters of least cross-entropy over one stream (the
    validation text: choosing on test text would report a tuned figure).

    Args:
      log_vocab, hidden, targets: as `apply`, ``[n]``, ``[n, d]``, ``[n]``.
      windows, thetas, lambdas: the grid (non-empty sequences).
      on_window: None or a callable called with no argument after each
        window's part of the grid (a progress display's tick).

    Returns:
      ``(CacheConfig, its mean cross-entropy in nats, the model's alone)``;
      ties go to the first in grid order (windows, then thetas, lambdas).

    Raises:
      ValueError: an empty grid or a value out of range (named).
    """
    for name, grid in (("windows", windows), ("thetas", thetas),
                       ("lambdas", lambdas)):
        if not isinstance(grid, (tuple, list)) or not grid:
            raise ValueError("%s must be a non-empty sequence, got %r"
                             % (name, grid))
    for config in [(w, t, l) for w in windows for t in thetas
                   for l in lambdas]:
        check_config(config, "grid entry")
    log_vocab = np.asarray(log_vocab, np.float64)
    best = (None, np.inf)
    for window in windows:
        log_cache, filled = pointer_log_probs(hidden, targets, window,
                                              thetas)
        for j, theta in enumerate(thetas):
            for lambda_ in lambdas:
                xent = -float(mix(log_vocab, log_cache[j], filled,
                                  lambda_).mean())
                if xent < best[1]:
                    best = (CacheConfig(int(window), float(theta),
                                        float(lambda_)), xent)
        if on_window is not None:
            on_window()
    return best[0], best[1], -float(log_vocab.mean())
