"""Word-level corpora in the Penn Treebank layout, and BPTT batching.

The PTB layout: a directory holding ``train.txt valid.txt test.txt`` (or
``ptb.train.txt ptb.valid.txt ptb.test.txt``), UTF-8 text, one sentence a line,
words separated by white space.  Every line ends with an ``<eos>`` token.
"""
import collections
import os

import numpy as np

from tf1_awd_sparse.base.scalar_checks import check_positive_int
from tf1_awd_sparse.base.errors import Error

__all__ = ["EOS", "UNK", "SPLITS", "DataError", "find_split_files",
           "read_words", "build_vocab", "encode", "read_ptb", "batchify",
           "bptt_windows", "write_ptb"]

EOS = "<eos>"
UNK = "<unk>"
SPLITS = ("train", "valid", "test")


class DataError(ValueError, Error):
    """Bad input data; the message is one line saying what and where."""


Corpus = collections.namedtuple("Corpus", ["vocab", "train", "valid", "test",
                                           "unk_counts", "name"])
Corpus.__doc__ = """A tokenized corpus.

Fields:
  vocab: list of words; a word's id is its index.
  train, valid, test: 1-D int32 numpy arrays of word ids.
  unk_counts: dict split -> number of words not in the training vocabulary
    that were mapped to ``<unk>``.
  name: a short description for printing.
"""


def find_split_files(data_dir):
    """Returns {split: path} for the PTB layout in `data_dir`.

    Accepts ``<split>.txt`` or ``ptb.<split>.txt`` for each split.

    Raises:
      DataError: `data_dir` is not a directory or a split file is missing.
    """
    if not os.path.isdir(data_dir):
        raise DataError("data dir %r: not a directory" % data_dir)
    paths = {}
    for split in SPLITS:
        names = ["%s.txt" % split, "ptb.%s.txt" % split]
        found = [os.path.join(data_dir, n) for n in names
                 if os.path.isfile(os.path.join(data_dir, n))]
        if not found:
            raise DataError("data dir %r: missing file for the %s split "
                            "(expected one of %s)"
                            % (data_dir, split, ", ".join(names)))
        paths[split] = found[0]
    return paths


def read_words(path):
    """Reads one PTB-layout file into a list of words, ``<eos>`` after each line.

    Blank lines contribute nothing (not even ``<eos>``).

    Raises:
      DataError: the bytes are not valid UTF-8 (names the file and byte
        offset), or the file holds no words.
    """
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError("%s: undecodable bytes at byte offset %d (not UTF-8: "
                        "%s)" % (path, e.start, e.reason))
    words = []
    for line in text.splitlines():
        tokens = line.split()
        if tokens:
            words.extend(tokens)
            words.append(EOS)
    if not words:
        raise DataError("%s: empty split (no words)" % path)
    return words


def build_vocab(words):
    """Vocabulary from training words: most frequent first, ties by spelling.

    ``<eos>`` and ``<unk>`` are always present, so every split can be encoded.

    Args:
      words: list of str.
    Returns:
      list of str, the word of each id.
    """
    counts = collections.Counter(words)
    counts.setdefault(EOS, 0)
    counts.setdefault(UNK, 0)
    return sorted(counts, key=lambda w: (-counts[w], w))


def encode(words, word_to_id):
    """Maps words to ids, unknown words to ``<unk>``.

    Returns:
      (ids int32 array, number of words mapped to <unk> that were not <unk>).
    """
    unk = word_to_id[UNK]
    ids = np.fromiter((word_to_id.get(w, unk) for w in words), np.int32,
                      count=len(words))
    n_unknown = sum(1 for w in words if w not in word_to_id)
    return ids, n_unknown


def read_ptb(data_dir):
    """Reads a PTB-layout corpus; the vocabulary comes from the train split.

    Args:
      data_dir: directory with the three split files (see module docstring).
    Returns:
      Corpus.
    Raises:
      DataError: missing file, empty split or undecodable bytes.
    """
    paths = find_split_files(data_dir)
    words = {split: read_words(paths[split]) for split in SPLITS}
    vocab = build_vocab(words["train"])
    word_to_id = {w: i for i, w in enumerate(vocab)}
    ids, unk_counts = {}, {}
    for split in SPLITS:
        ids[split], unk_counts[split] = encode(words[split], word_to_id)
    return Corpus(vocab, ids["train"], ids["valid"], ids["test"], unk_counts,
                  os.path.basename(os.path.normpath(data_dir)))


def batchify(ids, batch_size, split="split", batch_name="batch_size"):
    """Cuts a token stream into `batch_size` parallel streams.

    Args:
      ids: 1-D int array of length N.
      batch_size: int >= 1.
      split, batch_name: what the stream and the batch size are called in
        the error (e.g. ``'valid split'`` and ``"params['eval_batch_size']"``
        or a flag).
    Returns:
      int32 array [batch_size, N // batch_size]; the tail that does not fill
      a row is dropped.
    Raises:
      ValueError: ``batch_size`` not a positive int.
      DataError: fewer than 2 tokens per stream, e.g. ``valid split: 2
        tokens are too short for --eval-batch-size 2 (need at least 2
        tokens per stream: at most 1)``.
    """
    ids = np.asarray(ids)
    batch_size = check_positive_int(batch_size, batch_name)
    per_row = len(ids) // batch_size
    if per_row < 2:
        fits = ("at most %d" % (len(ids) // 2) if len(ids) >= 2
                else "no batch size fits: the split needs 2 tokens")
        raise DataError("%s: %d tokens are too short for %s %d (need at "
                        "least 2 tokens per stream: %s)"
                        % (split, len(ids), batch_name, batch_size, fits))
    return ids[:per_row * batch_size].reshape(batch_size, per_row).astype(
        np.int32)


def bptt_windows(n_steps, bptt, rng=None, variable=False, min_len=5):
    """Start offsets and lengths of the truncated-BPTT windows of an epoch.

    With `variable` (AWD-LSTM's variable-length BPTT) each window's base
    length is `bptt` with probability 0.95 and `bptt / 2` otherwise, and the
    length is drawn from a normal around that base with standard deviation
    5, at least `min_len`.  The caller scales the learning rate by
    ``length / bptt`` so short windows do not weigh more per token.

    Args:
      n_steps: number of input positions in a batchified stream (its length
        minus one, as each input predicts the next token).
      bptt: int, the nominal window length.
      rng: numpy RandomState, required with `variable`.
      variable: bool.
      min_len: int, the shortest window drawn.
    Returns:
      list of (start, length); windows are consecutive and cover n_steps.
    Raises:
      ValueError: ``bptt`` or ``min_len`` not a positive int (0 would
        never advance), or ``variable`` without ``rng``.
    """
    bptt = check_positive_int(bptt, "bptt")
    min_len = check_positive_int(min_len, "min_len")
    if variable and rng is None:
        raise ValueError("rng: required with variable=True, got None")
    windows, start = [], 0
    while start < n_steps:
        length = bptt
        if variable:
            base = bptt if rng.rand() < 0.95 else bptt / 2.0
            length = max(min_len, int(round(rng.normal(base, 5))))
        length = min(length, n_steps - start)
        windows.append((start, length))
        start += length
    return windows


def write_ptb(corpus, data_dir):
    """Writes a corpus as text in the PTB layout: ``<split>.txt`` per split,
    one sentence a line (a line break for each ``<eos>``, words separated
    by spaces), so that `read_ptb` reads the same words back (a split that
    does not end with ``<eos>`` gains one at its end).

    Args:
      corpus: a `Corpus` (e.g. the embedded one, `synthetic.hmm_corpus`).
      data_dir: the directory to write (created if needed).

    Returns:
      {split: path}.

    Raises:
      DataError: a word holding white space, or an empty split.
    """
    os.makedirs(data_dir, exist_ok=True)
    for word in corpus.vocab:
        if not word or len(word.split()) != 1 or word != word.strip():
            raise DataError("vocab: word %r cannot be written as text"
                            % (word,))
    paths = {}
    for split in SPLITS:
        ids = getattr(corpus, split)
        if len(ids) == 0:
            raise DataError("%s split: no words" % split)
        lines, words = [], []
        for index in ids:
            word = corpus.vocab[int(index)]
            if word == EOS:
                lines.append(" ".join(words))
                words = []
            else:
                words.append(word)
        if words:
            lines.append(" ".join(words))
        paths[split] = os.path.join(data_dir, "%s.txt" % split)
        with open(paths[split], "w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))
    return paths
