"""The corpus and session set-up every training path shares: the corpus a
directory holds (counted from the files on disk), the batch and window
checks (closed-form stream lengths), the session's device filters."""
import os

import numpy as np
import pytest

from tf1_awd_sparse.awd_lm import estimator
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.corpus import data, runtime

TEXTS = {"train": "a b a\nc a b\n\nb\n", "valid": "a zz b\n",
         "test": "c\nqq a\n"}


def _write(tmp_path, texts=TEXTS):
    for split, text in texts.items():
        (tmp_path / (split + ".txt")).write_text(text)
    return str(tmp_path)


def _flag(key):
    return "--" + key.replace("_", "-")


def _params(**overrides):
    return as_params(dict(presets.params_for("demo", "plain"), **overrides))


def test_a_directory_is_read_and_described_by_its_files(tmp_path):
    data_dir = _write(tmp_path)
    corpus, floor, line = runtime.load_corpus(data_dir, _params())
    # Tokens: the words of each non-blank line and one <eos> after it; the
    # vocabulary: the train split's words, <eos> and <unk>.
    tokens = {split: sum(len(l.split()) + 1 for l in text.splitlines()
                         if l.split()) for split, text in TEXTS.items()}
    train_words = set(TEXTS["train"].split())
    unknown = {split: sum(w not in train_words for w in TEXTS[split].split())
               for split in ("valid", "test")}
    assert floor is None
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (
        tokens["train"], tokens["valid"], tokens["test"]) == (10, 4, 5)
    assert line == (
        "corpus %s: vocab %d, tokens train %d valid %d test %d; words mapped "
        "to <unk>: valid %d, test %d" % (
            data_dir, len(train_words) + 2, tokens["train"], tokens["valid"],
            tokens["test"], unknown["valid"], unknown["test"]))


def _corpus(train, valid, test):
    return data.Corpus(["<eos>", "<unk>"], np.zeros(train, np.int32),
                       np.zeros(valid, np.int32), np.zeros(test, np.int32),
                       {}, "zeros")


@pytest.mark.parametrize("bptt", [4, 7, 8, 30])
def test_whole_windows_are_checked_against_the_stream_length(bptt):
    """n tokens in b streams of n // b; the Estimator needs one window of
    bptt inputs (and their targets) per stream: n // b - 1 >= bptt."""
    n, batch = 50, 6                                  # streams of 8
    corpus = _corpus(n, 40, 40)
    params = _params(batch_size=batch, eval_batch_size=4, bptt=bptt)
    runtime.check_corpus(corpus, params, None, _flag)   # the loop: no limit
    if n // batch - 1 >= bptt:
        runtime.check_corpus(corpus, params, None, _flag, fixed_windows=True)
        return
    fits = n // (bptt + 1)
    with pytest.raises(data.DataError) as error:
        runtime.check_corpus(corpus, params, None, _flag, fixed_windows=True)
    message = str(error.value)
    assert message.startswith(
        "train split (embedded corpus, --hmm-train): %d tokens make %d "
        "streams of %d, too short for one window of --bptt %d"
        % (n, batch, n // batch, bptt)), message
    assert message.endswith(
        "set --bptt <= %d%s" % (n // batch - 1, " or --batch-size <= %d"
                                % fits if fits else "")), message


def test_a_short_split_names_its_file(tmp_path):
    data_dir = _write(tmp_path)
    corpus = _corpus(100, 3, 40)          # valid: 3 tokens, 1 per stream
    params = _params(batch_size=2, eval_batch_size=2, bptt=4)
    with pytest.raises(data.DataError, match=r"^valid split \(%s\): " %
                       os.path.join(data_dir, "valid.txt").replace(
                           "\\", r"\\")):
        runtime.check_corpus(corpus, params, data_dir, _flag)
    # Only the splits asked for are checked.
    runtime.check_corpus(corpus, params, data_dir, _flag,
                         splits=("train", "test"))


def test_session_config_filters_devices_per_task():
    worker = estimator.session_config(1, "worker", 3)
    assert list(worker.device_filters) == ["/job:ps", "/job:worker/task:3"]
    single = estimator.session_config(1, num_cpus=2)
    assert list(single.device_filters) == []
    assert single.device_count["CPU"] == 2


def test_a_bad_thread_count_is_named_first():
    with pytest.raises(ValueError, match="^threads"):
        runtime.session_config(-1)         # TensorFlow aborts on it
