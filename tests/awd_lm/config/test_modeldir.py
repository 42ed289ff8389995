"""A model directory's vocabulary file and listing, against the bytes on
disk: one word per line in id order, its SHA-256 (hashlib on the file),
what is refused when written or read, which directories hold a model."""
import hashlib
import os

import pytest

from tf1_awd_sparse.awd_lm.config import modeldir

WORDS = ["<eos>", "<unk>", "the", "café", "x-y"]


def test_the_vocabulary_file_is_one_word_a_line_and_its_hash(tmp_path):
    path = modeldir.write_vocab(str(tmp_path), WORDS)
    assert path == str(tmp_path / "vocab.txt")
    with open(path, "rb") as handle:
        raw = handle.read()
    assert raw == ("<eos>\n<unk>\nthe\ncafé\nx-y\n").encode("utf-8")
    assert modeldir.vocab_sha256(WORDS) == hashlib.sha256(raw).hexdigest()
    assert modeldir.read_vocab(path) == WORDS
    assert not os.path.exists(path + ".tmp")


@pytest.mark.parametrize("vocab", [[], ["a", ""], ["a", "b c"], [" a"]])
def test_a_vocabulary_that_cannot_be_read_back_is_not_written(tmp_path,
                                                              vocab):
    with pytest.raises(ValueError, match="^vocab"):
        modeldir.write_vocab(str(tmp_path), vocab)
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("text, message", [
    ("a\n\nb\n", "line 2: expected one word, got ''"),
    ("a\nb\na\n", "line 3: 'a' repeats line 1"),
    ("a\n b\n", "line 2: expected one word, got ' b'"),
    ("", "empty vocabulary"),
])
def test_a_bad_vocabulary_file_is_named_with_its_line(tmp_path, text,
                                                      message):
    path = tmp_path / "vocab.txt"
    path.write_text(text)
    with pytest.raises(modeldir.ConfigError) as error:
        modeldir.read_vocab(str(path))
    assert str(error.value) == "%s: %s" % (path, message)
    with pytest.raises(modeldir.ConfigError, match="cannot read"):
        modeldir.read_vocab(str(tmp_path / "missing.txt"))


def test_the_files_beside_a_tflite_file_and_the_specials():
    assert modeldir.sidecar_path("d/m.tflite") == "d/m.tflite.json"
    assert modeldir.vocab_path("d/m.tflite") == "d/m.tflite.vocab.txt"
    assert modeldir.vocab_has_specials(WORDS) == (True, True)
    assert modeldir.vocab_has_specials(["<eos>", "a"]) == (True, False)
    assert modeldir.vocab_has_specials(["a"]) == (False, False)


def test_model_directories_are_those_holding_a_config(tmp_path):
    for name in ("b", "a", "empty"):
        (tmp_path / name).mkdir()
    for name in ("b", "a"):
        (tmp_path / name / "config.json").write_text("{}")
    (tmp_path / "config.json").write_text("{}")     # a file, not a dir
    assert modeldir.model_dirs_in(str(tmp_path)) == [
        str(tmp_path / "a"), str(tmp_path / "b")]
    assert modeldir.model_dirs_in(str(tmp_path / "a" / "config.json")) == []
    assert modeldir.model_dirs_in(str(tmp_path / "none")) == []
