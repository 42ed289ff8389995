"""The corpus and session set-up every training path shares: the corpus a
directory holds (counted from the files on disk), the batch and window
checks (closed-form stream lengths), the session's device filters."""
import os

import numpy as np
import pytest

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


def _sizes(train, evaluate, splits=data.SPLITS):
    """check_corpus's batch sizes: the train split by batch_size, the
    others by eval_batch_size (as `Params.batch_sizes` gives them)."""
    return dict((split, ("batch_size", train) if split == "train" else
                 ("eval_batch_size", evaluate)) for split in splits)


@pytest.mark.parametrize("bptt", [4, 7, 8, 30])
def test_whole_windows_are_checked_against_the_stream_length(bptt):
    """n tokens in b streams of n // b; the Estimator needs one window of
    bptt inputs (and their targets) per stream: n // b - 1 >= bptt."""
    n, batch = 50, 6                                  # streams of 8
    corpus = _corpus(n, 40, 40)
    sizes = _sizes(batch, 4)
    runtime.check_corpus(corpus, sizes, bptt, None, _flag)  # the loop: any
    if n // batch - 1 >= bptt:
        runtime.check_corpus(corpus, sizes, bptt, None, _flag,
                             fixed_windows=True)
        return
    fits = n // (bptt + 1)
    with pytest.raises(data.DataError) as error:
        runtime.check_corpus(corpus, sizes, bptt, None, _flag,
                             fixed_windows=True)
    message = str(error.value)
    assert message.startswith(
        "train split (embedded corpus, --hmm-train): %d tokens make %d "
        "streams of %d, too short for one window of --bptt %d"
        % (n, batch, n // batch, bptt)), message
    assert message.endswith(
        "set --bptt <= %d%s" % (n // batch - 1, " or --batch-size <= %d"
                                % fits if fits else "")), message


@pytest.mark.parametrize("split,tokens,batch", [
    ("train", 9, 10),      # more streams than tokens
    ("train", 9, 5),       # 1 token per stream: no target
    ("valid", 7, 4),
    ("test", 3, 2)])
def test_a_batch_larger_than_its_split_names_the_split_and_its_flag(
        split, tokens, batch):
    """Each split is cut by its own batch size, given by the caller: a
    split of n tokens fills b streams of 2 tokens (an input and its
    target) when b <= n // 2; the error names the flag of that size."""
    lengths = dict((s, 100) for s in data.SPLITS)
    lengths[split] = tokens
    corpus = _corpus(lengths["train"], lengths["valid"], lengths["test"])
    # The other size is 1 (every split fills it): only ``split`` fails.
    sizes = _sizes(*((batch, 1) if split == "train" else (1, batch)))
    key = sizes[split][0]
    with pytest.raises(data.DataError) as error:
        runtime.check_corpus(corpus, sizes, 1, None,
                             lambda k: "--hparams " + k)
    assert str(error.value) == (
        "%s split (embedded corpus, --hparams hmm_%s): %d tokens are too "
        "short for --hparams %s %d (need at least 2 tokens per stream: at "
        "most %d)" % (split, split, tokens, key, batch, tokens // 2))
    # The largest size the message offers fits, fixed windows of 1 too.
    sizes[split] = (key, tokens // 2)
    runtime.check_corpus(corpus, sizes, 1, None, _flag, fixed_windows=True)


def test_each_split_reads_its_own_batch_size():
    """A size that fits one split and not another is refused on the other
    only: train 40 tokens at 20 streams fits, valid 30 tokens does not."""
    corpus = _corpus(40, 30, 100)
    runtime.check_corpus(corpus, _sizes(20, 15), 1, None, _flag)
    with pytest.raises(data.DataError, match=r"^valid split .* "
                       r"--eval-batch-size 20 .* at most 15\)$"):
        runtime.check_corpus(corpus, _sizes(15, 20), 1, None, _flag)


def test_a_bad_batch_size_is_named_by_its_flag():
    with pytest.raises(ValueError, match="^--eval-batch-size"):
        runtime.check_corpus(_corpus(40, 40, 40), _sizes(2, 0), 1, None,
                             _flag)


def test_a_short_split_names_its_file(tmp_path):
    data_dir = _write(tmp_path)
    corpus = _corpus(100, 3, 40)          # valid: 3 tokens, 1 per stream
    with pytest.raises(data.DataError, match=r"^valid split \(%s\): " %
                       os.path.join(data_dir, "valid.txt").replace(
                           "\\", r"\\")):
        runtime.check_corpus(corpus, _sizes(2, 2), 4, data_dir, _flag)
    # Only the splits given are checked.
    runtime.check_corpus(corpus, _sizes(2, 2, splits=("train", "test")), 4,
                         data_dir, _flag)


def test_session_config_filters_devices_per_task():
    worker = runtime.session_config(1, "worker", 3)
    assert list(worker.device_filters) == ["/job:ps", "/job:worker/task:3"]
    single = runtime.session_config(1, num_cpus=2)
    assert list(single.device_filters) == []
    assert single.device_count["CPU"] == 2


def test_a_bad_thread_count_is_named_first():
    with pytest.raises(ValueError, match="^threads"):
        runtime.session_config(-1)         # TensorFlow aborts on it
