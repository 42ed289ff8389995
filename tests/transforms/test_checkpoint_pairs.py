"""`transforms.checkpoint_pairs`: a checkpoint's sparse pairs, found by
each technique's naming rule or given by the caller, and the errors of a
bad list, a missing name and a path without a checkpoint.

The reference: the names the test gave its own variables (written with a
plain ``tf.train.Saver``), not the techniques' naming rule."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.transforms import checkpoint_pairs, techniques

#: The checkpoint's variables: two VD pairs (a layer's ``kernel`` /
#: ``log_sigma2``, an embedding's ``emb`` / ``emb_log_sigma2``), an L0 pair,
#: a lone aux-like name of no pair and plain variables.
NAMES = ("vd/fc/kernel", "vd/fc/log_sigma2", "vd/emb", "vd/emb_log_sigma2",
         "l0/fc/kernel", "l0/fc/log_alpha", "plain/kernel", "bias",
         "orphan_log_alpha")
FOUND = {"vd": [("vd/emb", "vd/emb_log_sigma2"),
                ("vd/fc/kernel", "vd/fc/log_sigma2")],
         "l0": [("l0/fc/kernel", "l0/fc/log_alpha")]}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A checkpoint of `NAMES` (prefix, and its folder)."""
    folder = tmp_path_factory.mktemp("pairs")
    with tf.Graph().as_default(), tf.Session() as session:
        for name in NAMES:
            tf.get_variable(name, [2, 3])
        session.run(tf.global_variables_initializer())
        prefix = tf.train.Saver().save(session, str(folder / "model"))
    return prefix, str(folder)


def _by_short_name(found):
    out = {}
    for technique, theta, aux in found:
        out.setdefault(technique.short_name, []).append((theta, aux))
    return out


def test_open_reader_reads_a_prefix_or_a_folders_latest(checkpoint):
    prefix, folder = checkpoint
    for path in (prefix, folder):
        reader, read = checkpoint_pairs.open_reader(path)
        assert read == prefix
        assert sorted(reader.get_variable_to_shape_map()) == sorted(NAMES)
        assert reader.get_tensor("bias").shape == (2, 3)


def test_pairs_found_by_naming_are_the_ones_written(checkpoint):
    reader, prefix = checkpoint_pairs.open_reader(checkpoint[0])
    found = checkpoint_pairs.pairs(reader, prefix, {})
    assert [t.name for t, _, _ in found] == \
        ["variational_dropout"] * 2 + ["l0"]
    assert _by_short_name(found) == FOUND
    # None is "find them" as a missing key is.
    assert checkpoint_pairs.pairs(reader, prefix,
                                  {"vd": None, "l0": None}) == found


def test_given_pairs_replace_a_techniques_found_ones(checkpoint):
    """A given list is taken as it is, even with names the rule would not
    pair; an empty one leaves the technique out."""
    reader, prefix = checkpoint_pairs.open_reader(checkpoint[0])
    given = [("plain/kernel", "orphan_log_alpha"), ["bias", "vd/emb"]]
    found = checkpoint_pairs.pairs(reader, prefix, {"l0": given, "vd": []})
    assert all(t is techniques.get("l0") for t, _, _ in found)
    assert _by_short_name(found) == {"l0": [tuple(p) for p in given]}


@pytest.mark.parametrize("given", [
    "vd/fc/kernel",                       # a string, not a list of pairs
    [("vd/fc/kernel",)],                  # not a pair
    [("vd/fc/kernel", "a", "b")],
    [("vd/fc/kernel", 3)],                # not strings
    [None]])
def test_a_given_list_not_of_string_pairs_is_named(checkpoint, given):
    reader, prefix = checkpoint_pairs.open_reader(checkpoint[0])
    with pytest.raises(ValueError, match="vd_pairs must be a list of"):
        checkpoint_pairs.pairs(reader, prefix, {"vd": given})


@pytest.mark.parametrize("pair, missing", [
    (("vd/fc/kernel", "vd/fc/nothing"), "vd/fc/nothing"),
    (("nothing", "vd/fc/log_sigma2"), "nothing")])
def test_a_given_name_not_in_the_checkpoint_is_named(checkpoint, pair,
                                                     missing):
    reader, prefix = checkpoint_pairs.open_reader(checkpoint[0])
    with pytest.raises(ValueError) as error:
        checkpoint_pairs.pairs(reader, prefix, {"l0": [pair]})
    assert "variable %r is not in checkpoint %r" % (missing, prefix) \
        == str(error.value)


def test_a_path_without_a_checkpoint_is_named(tmp_path):
    with pytest.raises(ValueError, match="without a checkpoint"):
        checkpoint_pairs.open_reader(str(tmp_path))
    with pytest.raises(ValueError, match="no checkpoint there"):
        checkpoint_pairs.open_reader(str(tmp_path / "model"))
    with pytest.raises(ValueError, match="checkpoint_path must be"):
        checkpoint_pairs.open_reader(None)


def test_the_readers_values_are_the_saved_ones(tmp_path):
    """The reader returned reads the values written, not only names."""
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Graph().as_default(), tf.Session() as session:
        tf.get_variable("w", initializer=value)
        session.run(tf.global_variables_initializer())
        prefix = tf.train.Saver().save(session, str(tmp_path / "m"))
    reader, _ = checkpoint_pairs.open_reader(prefix)
    np.testing.assert_array_equal(reader.get_tensor("w"), value)
