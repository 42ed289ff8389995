"""The PTB-layout reader, batching and the HMM source's exact floor."""
import itertools
import os

import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.corpus import data, synthetic


def write_corpus(tmpdir, train, valid, test, prefix=""):
    for split, text in (("train", train), ("valid", valid), ("test", test)):
        mode = "wb" if isinstance(text, bytes) else "w"
        with open(os.path.join(str(tmpdir), prefix + split + ".txt"), mode) as f:
            f.write(text)
    return str(tmpdir)


def test_vocab_eos_and_unk(tmpdir):
    d = write_corpus(tmpdir, "a b a\n\nc a\n", "a zz\n", "qq rr b\n")
    corpus = data.read_ptb(d)
    # Frequency order (a:3, <eos>:2, then b, c by spelling), <unk> present.
    assert corpus.vocab == ["a", "<eos>", "b", "c", "<unk>"]
    words = [corpus.vocab[i] for i in corpus.train]
    assert words == ["a", "b", "a", "<eos>", "c", "a", "<eos>"]
    assert [corpus.vocab[i] for i in corpus.valid] == ["a", "<unk>", "<eos>"]
    assert [corpus.vocab[i] for i in corpus.test] == [
        "<unk>", "<unk>", "b", "<eos>"]
    assert corpus.unk_counts == {"train": 0, "valid": 1, "test": 2}


def test_ptb_prefixed_names_and_unk_in_train(tmpdir):
    d = write_corpus(tmpdir, "x <unk> x\n", "<unk> y\n", "x\n", prefix="ptb.")
    corpus = data.read_ptb(d)
    # A literal <unk> in valid is not counted as an unknown word.
    assert corpus.unk_counts["valid"] == 1
    assert corpus.vocab[corpus.valid[0]] == "<unk>"


def test_missing_file(tmpdir):
    d = write_corpus(tmpdir, "a\n", "a\n", "a\n")
    os.remove(os.path.join(d, "valid.txt"))
    with pytest.raises(data.DataError, match="missing file for the valid"):
        data.read_ptb(d)
    with pytest.raises(data.DataError, match="not a directory"):
        data.read_ptb(os.path.join(d, "nope"))


def test_empty_split(tmpdir):
    d = write_corpus(tmpdir, "a\n", "a\n", "  \n\n")
    with pytest.raises(data.DataError, match=r"test\.txt: empty split"):
        data.read_ptb(d)


def test_undecodable_bytes_name_file_and_offset(tmpdir):
    d = write_corpus(tmpdir, b"ab cd\n\xff\xfe x\n", "a\n", "a\n")
    with pytest.raises(data.DataError,
                       match=r"train\.txt: undecodable bytes at byte offset 6"):
        data.read_ptb(d)


def test_batchify_and_windows():
    ids = np.arange(23)
    b = data.batchify(ids, 4)
    np.testing.assert_array_equal(b, np.arange(20).reshape(4, 5))
    with pytest.raises(data.DataError, match="too short"):
        data.batchify(np.arange(5), 4)
    assert data.bptt_windows(10, 4) == [(0, 4), (4, 4), (8, 2)]
    rng = np.random.RandomState(0)
    wins = data.bptt_windows(1000, 35, rng, variable=True)
    starts = [s for s, _ in wins]
    assert starts == list(np.cumsum([0] + [n for _, n in wins[:-1]]))
    assert sum(n for _, n in wins) == 1000 and min(n for _, n in wins) >= 1
    assert 25 < np.mean([n for _, n in wins[:-1]]) < 40


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
