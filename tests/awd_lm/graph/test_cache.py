"""`awd_lm.graph.cache`, the continuous cache pointer in numpy, against a
loop written from the formula (step by step, the softmax over the window's
dot products): across the blocks it computes at once, with a history
carried from an earlier call, and the grid search against every grid
point's cross-entropy. (`LanguageModel`'s cache option, on a trained
model: tests/awd_lm/inference/test_lm_cache.py.)"""
import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.graph import cache


def _reference(hidden, targets, window, theta, lambda_, log_vocab):
    """log p of each step's target and log p_cache (-inf: not in the
    cache; nan: the cache is empty), one step at a time from the
    formula."""
    mixed, log_cache = [], []
    for t in range(len(targets)):
        history = range(max(0, t - window), t)
        if not history:
            mixed.append(log_vocab[t])
            log_cache.append(np.nan)
            continue
        dots = np.asarray([theta * hidden[t].dot(hidden[i])
                           for i in history])
        weights = np.exp(dots - dots.max())
        weights /= weights.sum()
        p_cache = sum(w for i, w in zip(history, weights)
                      if targets[i] == targets[t])
        with np.errstate(divide="ignore"):
            log_cache.append(np.log(p_cache))
        mixed.append(np.log((1 - lambda_) * np.exp(log_vocab[t])
                            + lambda_ * p_cache))
    return np.asarray(mixed), np.asarray(log_cache)


def _stream(n, d=6, vocab=5, seed=0):
    rng = np.random.RandomState(seed)
    hidden = rng.randn(n, d)
    targets = rng.randint(vocab, size=n)
    log_vocab = np.log(rng.dirichlet(np.ones(vocab), size=n)[
        np.arange(n), targets])
    return hidden, targets, log_vocab


def test_uniform_attention_is_the_word_frequency_of_the_window():
    # h = 0: every entry weighs the same, p_cache(w) = count(w) / filled.
    targets = np.asarray([3, 1, 3, 3, 2])
    log_cache, filled = cache.pointer_log_probs(np.zeros([5, 4]), targets,
                                                3, [1.0])
    np.testing.assert_array_equal(filled, [0, 1, 2, 3, 3])
    with np.errstate(divide="ignore"):
        expected = np.log([np.nan, 0.0, 1 / 2., 2 / 3., 0.0])
    # float64 log of a count ratio against numpy's: 1e-7 (the default) is
    # far above a few roundings of 2**-53.
    np.testing.assert_allclose(log_cache[0, 1:], expected[1:])
    assert log_cache[0, 0] == -np.inf


# More steps than the 256 computed at once, a window longer than the
# stream, and theta 0 (uniform weights).
@pytest.mark.parametrize("window", [1, 7, 400])
def test_the_pointer_is_the_formula_across_blocks(window):
    hidden, targets, log_vocab = _stream(300)
    thetas = [0.0, 0.5, 2.0]
    log_cache, filled = cache.pointer_log_probs(hidden, targets, window,
                                                thetas)
    np.testing.assert_array_equal(filled, np.minimum(window,
                                                     np.arange(300)))
    for j, theta in enumerate(thetas):
        _, expected = _reference(hidden, targets, window, theta, 0.5,
                                 log_vocab)
        expected[0] = -np.inf   # an empty cache: -inf, as not found
        # float64 sums of a window's weights in another order.
        np.testing.assert_allclose(log_cache[j], expected, rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("lambda_", [0.0, 0.3, 0.9])
def test_applied_in_two_parts_with_the_history_is_applied_at_once(lambda_):
    hidden, targets, log_vocab = _stream(40, seed=1)
    config = cache.CacheConfig(5, 1.5, lambda_)
    whole, past = cache.apply(config, log_vocab, hidden, targets)
    expected, _ = _reference(hidden, targets, 5, 1.5, lambda_, log_vocab)
    np.testing.assert_allclose(whole, expected, rtol=1e-10, atol=1e-12)
    first, carried = cache.apply(config, log_vocab[:17], hidden[:17],
                                 targets[:17])
    np.testing.assert_array_equal(carried[1], targets[12:17])
    second, last = cache.apply(config, log_vocab[17:], hidden[17:],
                               targets[17:], past=carried)
    np.testing.assert_allclose(np.concatenate([first, second]), whole,
                               rtol=1e-12, atol=0)
    np.testing.assert_array_equal(last[0], past[0])
    np.testing.assert_array_equal(last[1], targets[-5:])
    if lambda_ == 0:   # exactly the model's own
        np.testing.assert_array_equal(whole, log_vocab)


def test_the_grid_search_finds_the_least_cross_entropy():
    # Targets that repeat: some cache helps the model.
    hidden, targets, log_vocab = _stream(60, vocab=3, seed=2)
    grid = dict(windows=(2, 10), thetas=(0.0, 1.0), lambdas=(0.1, 0.5))
    ticks = []
    config, xent, base = cache.grid_search(
        log_vocab, hidden, targets, on_window=lambda: ticks.append(1),
        **grid)
    xents = {(w, t, l): -_reference(hidden, targets, w, t, l,
                                    log_vocab)[0].mean()
             for w in grid["windows"] for t in grid["thetas"]
             for l in grid["lambdas"]}
    best = min(xents, key=xents.get)
    assert tuple(config) == best and ticks == [1, 1]
    assert type(config.window) is int and type(config.theta) is float
    assert xent == pytest.approx(xents[best], rel=1e-12)
    assert base == pytest.approx(-log_vocab.mean(), rel=1e-12)
    # h = 0: every theta weighs alike; the tie goes to the first.
    tied = cache.grid_search(log_vocab, np.zeros_like(hidden), targets,
                             windows=(10,), thetas=(2.0, 0.5),
                             lambdas=(0.5,))[0]
    assert tied == (10, 2.0, 0.5)
    with pytest.raises(ValueError, match="thetas must be a non-empty"):
        cache.grid_search(log_vocab, hidden, targets, thetas=[])
    with pytest.raises(ValueError, match="grid entry.lambda_"):
        cache.grid_search(log_vocab, hidden, targets, lambdas=(0.5, 1.0))


@pytest.mark.parametrize("config,arg_name,message", [
    ((0, 1.0, 0.1), "cache", "cache.window"),
    ((5, -1.0, 0.1), "tuned", "tuned.theta"),
    ((5, 1.0, 1.0), "cache", "cache.lambda_"),
    ((5, 1.0), "cache", "cache must be a CacheConfig"),
    ("5 1 0", "c", "c must be a CacheConfig"),
])
def test_a_bad_config_is_named(config, arg_name, message):
    with pytest.raises(ValueError, match="^" + message):
        cache.check_config(config, arg_name)


def test_a_config_is_checked_into_an_int_and_two_floats():
    checked = cache.check_config([3, 1, 0])
    assert checked == (3, 1.0, 0.0) and isinstance(checked,
                                                   cache.CacheConfig)
    with pytest.raises(ValueError, match="hidden must be"):
        cache.pointer_log_probs(np.zeros([4, 2]), [1, 2, 3], 2, [1.0])
