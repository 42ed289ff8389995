"""A seeded hidden Markov source of text and its exact perplexity floor.

The embedded corpus of the language-model example (no download): a hidden
Markov model whose state 0 ends a sentence (it always emits ``<eos>``) and
whose other states emit from Zipf-distributed vocabularies.  Because the
source is known, the log-likelihood of any split under the source itself
is computed exactly with the forward algorithm; its perplexity is the floor
no model of that split can beat in expectation.
"""
import bisect
import collections

import numpy as np

from tf1_awd_sparse.awd_lm.corpus import data

__all__ = ["HMM", "check_hmm", "zipf_weights", "make_hmm", "sample",
           "log_likelihood", "perplexity_floor", "hmm_corpus"]

HMM = collections.namedtuple("HMM", ["initial", "transition", "emission"])
HMM.__doc__ = """A discrete hidden Markov model.

Fields:
  initial: [S] float64, distribution of the first hidden state.
  transition: [S, S] float64, row s is P(next state | state s).
  emission: [S, V] float64, row s is P(word | state s).
"""


def check_hmm(hmm):
    """Raises ValueError unless `hmm` has matching shapes and stochastic rows."""
    initial, transition, emission = (np.asarray(a, np.float64) for a in hmm)
    n = initial.shape[0] if initial.ndim == 1 else -1
    if (initial.ndim != 1 or transition.shape != (n, n) or emission.ndim != 2
            or emission.shape[0] != n):
        raise ValueError("hmm: expected initial [S], transition [S, S], "
                         "emission [S, V]; got shapes %s, %s, %s"
                         % (initial.shape, transition.shape, emission.shape))
    for name, rows in (("initial", initial[None]), ("transition", transition),
                       ("emission", emission)):
        if np.any(rows < 0) or not np.allclose(rows.sum(axis=1), 1.0):
            raise ValueError("hmm.%s: rows must be probability distributions"
                             % name)


def zipf_weights(n, exponent):
    """Normalized Zipf weights ``1 / rank**exponent`` for ranks 1..n."""
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    return w / w.sum()


def make_hmm(seed, n_states=32, vocab_size=2000, successors=2,
             mean_sentence=20.0, zipf_exponent=1.0, state_words=100,
             shared=0.1, smoothing=0.02):
    """Draws a seeded HMM text source.

    State 0 is the sentence end: it emits word 0 (``<eos>``) and moves to a
    sentence-start distribution.  Each other state ends the sentence with
    probability ``1 / mean_sentence`` and otherwise moves mostly to
    `successors` random states (Dirichlet weights, `smoothing` spread over
    all).  A word state emits, with weight `shared`, from a global Zipf law
    over the vocabulary, and otherwise from its own Zipf law over
    `state_words` random words, so words reveal the hidden state.

    Args:
      seed: int.
      n_states: number of hidden states, >= 2 (state 0 is the end state).
      vocab_size: number of words including ``<eos>``, >= 2.
      successors, mean_sentence, zipf_exponent, state_words, shared,
        smoothing: shape of the source, as above.
    Returns:
      HMM.
    Raises:
      ValueError: n_states < 2 or vocab_size < 2.
    """
    if n_states < 2:
        raise ValueError("n_states must be >= 2, got %r" % (n_states,))
    if vocab_size < 2:
        raise ValueError("vocab_size must be >= 2, got %r" % (vocab_size,))
    rng = np.random.RandomState(seed)
    words = n_states - 1

    def sparse_row():
        row = np.zeros(words)
        picks = rng.choice(words, min(successors, words), replace=False)
        row[picks] = rng.dirichlet(np.ones(len(picks)))
        return (1 - smoothing) * row + smoothing / words

    p_end = 1.0 / mean_sentence
    transition = np.zeros((n_states, n_states))
    transition[0, 1:] = sparse_row()
    for s in range(1, n_states):
        transition[s, 0] = p_end
        transition[s, 1:] = (1 - p_end) * sparse_row()

    emission = np.zeros((n_states, vocab_size))
    emission[0, 0] = 1.0
    n_words = vocab_size - 1
    global_zipf = np.zeros(n_words)
    global_zipf[rng.permutation(n_words)] = zipf_weights(n_words, zipf_exponent)
    k = min(state_words, n_words)
    for s in range(1, n_states):
        own = np.zeros(n_words)
        own[rng.choice(n_words, k, replace=False)] = zipf_weights(
            k, zipf_exponent)
        emission[s, 1:] = shared * global_zipf + (1 - shared) * own
    initial = transition[0].copy()
    return HMM(initial, transition, emission)


def sample(hmm, n_tokens, rng):
    """Samples `n_tokens` words from the source, from its initial state.

    Args:
      hmm: HMM.
      n_tokens: int >= 1.
      rng: numpy RandomState.
    Returns:
      int32 array [n_tokens] of word ids.
    """
    initial, transition, emission = hmm
    cum_t = [list(np.cumsum(row)) for row in transition]
    u = rng.rand(n_tokens)
    states = np.empty(n_tokens, np.int64)
    state = min(bisect.bisect(list(np.cumsum(initial)), u[0]),
                len(initial) - 1)
    states[0] = state
    last = len(initial) - 1
    for t in range(1, n_tokens):
        state = min(bisect.bisect(cum_t[state], u[t]), last)
        states[t] = state
    ids = np.empty(n_tokens, np.int32)
    for s in np.unique(states):
        where = np.nonzero(states == s)[0]
        ids[where] = rng.choice(emission.shape[1], len(where), p=emission[s])
    return ids


def log_likelihood(hmm, ids):
    """Exact natural-log likelihood ``log P(ids)`` under `hmm` (forward algorithm).

    The forward vector is renormalized at each step and the logs of the
    normalizers are summed, so long sequences do not underflow.

    Args:
      hmm: HMM.
      ids: 1-D int array of word ids, length >= 1.
    Returns:
      float, log P(ids[0], ..., ids[-1]).
    Raises:
      ValueError: empty `ids` or an id outside the vocabulary.
    """
    initial, transition, emission = (np.asarray(a, np.float64) for a in hmm)
    ids = np.asarray(ids)
    if ids.ndim != 1 or len(ids) == 0:
        raise ValueError("ids: expected a non-empty 1-D array, got shape %s"
                         % (ids.shape,))
    if ids.min() < 0 or ids.max() >= emission.shape[1]:
        raise ValueError("ids: expected ids in [0, %d), got range [%d, %d]"
                         % (emission.shape[1], ids.min(), ids.max()))
    emit = emission.T  # [V, S]: one row per observed word
    alpha = initial * emit[ids[0]]
    total = 0.0
    for t in range(len(ids)):
        if t:
            alpha = alpha.dot(transition) * emit[ids[t]]
        norm = alpha.sum()
        total += np.log(norm)
        alpha /= norm
    return total


def perplexity_floor(hmm, ids):
    """The source's own perplexity of `ids`: ``exp(-log P(ids) / len(ids))``."""
    return float(np.exp(-log_likelihood(hmm, ids) / len(ids)))


def hmm_corpus(seed=1234, n_train=200000, n_valid=20000, n_test=20000,
               **hmm_kwargs):
    """The embedded corpus: three independent samples of one seeded source.

    Args:
      seed: int; the source and the samples are functions of it.
      n_train, n_valid, n_test: tokens per split.
      **hmm_kwargs: passed to `make_hmm`.
    Returns:
      (Corpus, HMM).
    """
    hmm = make_hmm(seed, **hmm_kwargs)
    rng = np.random.RandomState(seed + 1)
    splits = [sample(hmm, n, rng) for n in (n_train, n_valid, n_test)]
    vocab = [data.EOS] + ["w%d" % i for i in range(1, hmm.emission.shape[1])]
    counts = {s: 0 for s in data.SPLITS}
    name = "hmm(seed=%d, states=%d, vocab=%d)" % (
        seed, hmm.transition.shape[0], len(vocab))
    return data.Corpus(vocab, splits[0], splits[1], splits[2], counts,
                       name), hmm
