"""The HMM source: its forward algorithm and floor against enumeration,
its samples against the stationary distribution, its seeding."""
import itertools

import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.corpus import synthetic


def brute_force_log_likelihood(hmm, ids):
    """Sums P(states, ids) over every state path."""
    initial, transition, emission = hmm
    total = 0.0
    for path in itertools.product(range(len(initial)), repeat=len(ids)):
        p = initial[path[0]] * emission[path[0], ids[0]]
        for t in range(1, len(ids)):
            p *= transition[path[t - 1], path[t]] * emission[path[t], ids[t]]
        total += p
    return np.log(total)


def test_forward_algorithm_matches_enumeration():
    rng = np.random.RandomState(3)
    hmm = synthetic.HMM(rng.dirichlet(np.ones(3)),
                        rng.dirichlet(np.ones(3), size=3),
                        rng.dirichlet(np.ones(4), size=3))
    synthetic.check_hmm(hmm)
    for n in (1, 2, 6):
        ids = rng.randint(0, 4, n)
        assert synthetic.log_likelihood(hmm, ids) == pytest.approx(
            brute_force_log_likelihood(hmm, ids), rel=1e-10)


def test_generated_source_floor_matches_enumeration():
    hmm = synthetic.make_hmm(5, n_states=4, vocab_size=5, state_words=2)
    synthetic.check_hmm(hmm)
    ids = synthetic.sample(hmm, 7, np.random.RandomState(0))
    assert synthetic.log_likelihood(hmm, ids) == pytest.approx(
        brute_force_log_likelihood(hmm, ids), rel=1e-10)
    assert synthetic.perplexity_floor(hmm, ids) == pytest.approx(
        np.exp(-brute_force_log_likelihood(hmm, ids) / 7), rel=1e-10)


def test_sampling_follows_the_source():
    # Empirical bigram-free check: word frequencies of a long sample match
    # the stationary emission distribution within sampling error.
    hmm = synthetic.make_hmm(2, n_states=5, vocab_size=6, state_words=3)
    ids = synthetic.sample(hmm, 60000, np.random.RandomState(1))
    evals, evecs = np.linalg.eig(hmm.transition.T)
    pi = np.real(evecs[:, np.argmin(abs(evals - 1))])
    pi /= pi.sum()
    expected = pi.dot(hmm.emission)
    freq = np.bincount(ids, minlength=6) / len(ids)
    # Correlated samples: allow 5x the iid standard error.
    assert np.all(abs(freq - expected) < 5 * np.sqrt(expected / len(ids)) + 1e-3)
    # Sentences: word 0 (<eos>) is emitted exactly by state 0.
    assert hmm.emission[0, 0] == 1.0 and np.all(hmm.emission[1:, 0] == 0)


def test_hmm_corpus_is_seeded():
    a, _ = synthetic.hmm_corpus(seed=7, n_train=500, n_valid=100, n_test=100,
                                n_states=6, vocab_size=50)
    b, _ = synthetic.hmm_corpus(seed=7, n_train=500, n_valid=100, n_test=100,
                                n_states=6, vocab_size=50)
    np.testing.assert_array_equal(a.test, b.test)
    assert len(a.vocab) == 50 and a.vocab[0] == "<eos>"
    with pytest.raises(ValueError, match="n_states"):
        synthetic.make_hmm(0, n_states=1)
