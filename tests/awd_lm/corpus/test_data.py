"""The PTB-layout reader and the batching of its streams."""
import os

import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.corpus import data


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


def test_bad_arguments_are_named_first():
    with pytest.raises(ValueError, match="^bptt"):
        data.bptt_windows(100, 0)          # divided by zero
    with pytest.raises(ValueError, match="^bptt"):
        data.bptt_windows(100, -5)         # looped forever
    with pytest.raises(ValueError, match="^batch_size"):
        data.batchify(np.arange(10), -1)
