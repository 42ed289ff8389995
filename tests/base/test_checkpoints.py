"""`base.checkpoints`: a checkpoint argument is opened (a prefix, or a
directory's latest) and read back as TensorFlow saved it, and each bad
argument is one ValueError that names the argument, the path and what was
expected."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base.checkpoints import CheckpointReader, check_checkpoint


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(folder, [prefix of step 1, prefix of step 2], {name: value} of step
    2): two checkpoints of one run, the variables changed between them."""
    folder = str(tmp_path_factory.mktemp("ckpt"))
    rng = np.random.RandomState(0)
    values = {"a/w": rng.randn(3, 4).astype(np.float32),
              "b": np.arange(5, dtype=np.int32)}
    prefixes = []
    with tf.Graph().as_default():
        variables = {name: tf.get_variable(name, initializer=value)
                     for name, value in values.items()}
        add = [v.assign_add(tf.ones_like(v)) for v in variables.values()]
        saver = tf.train.Saver()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for step in (1, 2):
                session.run(add)
                prefixes.append(saver.save(session, os.path.join(
                    folder, "model.ckpt"), global_step=step))
    return folder, prefixes, {name: value + 2 for name, value in
                              values.items()}


def test_a_prefix_and_a_directory_are_read_as_tensorflow_wrote_them(saved):
    folder, prefixes, values = saved
    # A directory: its latest checkpoint, not the first one.
    for path, prefix in ((folder, prefixes[1]), (prefixes[1], prefixes[1])):
        reader = check_checkpoint(path, arg_name="warm_start")
        assert isinstance(reader, CheckpointReader)
        assert reader.prefix == prefix and reader.arg_name == "warm_start"
        assert reader.get_variable_to_shape_map() == {"a/w": [3, 4],
                                                      "b": [5]}
        assert reader.get_variable_to_dtype_map() == {"a/w": tf.float32,
                                                      "b": tf.int32}
        for name, value in values.items():
            np.testing.assert_array_equal(reader.get_tensor(name), value)
    older = check_checkpoint(prefixes[0]).get_tensor("b")
    np.testing.assert_array_equal(older, values["b"] - 1)


@pytest.mark.parametrize("arg_name", ["checkpoint", "teacher"])
def test_a_missing_variable_names_the_argument_and_some_it_has(saved,
                                                               arg_name):
    _, prefixes, _ = saved
    reader = check_checkpoint(prefixes[1], arg_name)
    with pytest.raises(ValueError) as error:
        reader.get_tensor("a/missing")
    assert str(error.value) == (
        "%s %r has no variable 'a/missing' (it has 2, e.g. a/w, b)"
        % (arg_name, prefixes[1]))


@pytest.mark.parametrize("path,expected", [
    (None, "teacher must be a checkpoint prefix"),
    ("", "teacher must be a checkpoint prefix"),
    (7, "teacher must be a checkpoint prefix"),
])
def test_a_path_that_is_no_string_is_refused(path, expected):
    with pytest.raises(ValueError, match="^" + expected):
        check_checkpoint(path, arg_name="teacher")


def test_a_directory_without_a_checkpoint_and_a_missing_prefix(tmp_path):
    with pytest.raises(ValueError) as error:
        check_checkpoint(str(tmp_path))
    assert str(error.value).startswith("checkpoint %r is a directory "
                                       "without a checkpoint; expected a "
                                       "checkpoint prefix" % str(tmp_path))
    missing = os.path.join(str(tmp_path), "model.ckpt-3")
    with pytest.raises(ValueError) as error:
        check_checkpoint(missing, arg_name="init")
    assert str(error.value).startswith(
        "init %r: no checkpoint there (no file %s.index)" % (missing,
                                                             missing))


def test_an_index_that_is_no_index_is_refused(tmp_path):
    prefix = os.path.join(str(tmp_path), "model.ckpt")
    with open(prefix + ".index", "wb") as f:
        f.write(b"not an index")
    with pytest.raises(ValueError, match="^checkpoint %r: no readable "
                       "checkpoint there \\(" % prefix.replace("\\", "\\\\")):
        check_checkpoint(prefix)


def test_a_truncated_data_file_names_the_file(saved, tmp_path):
    _, prefixes, _ = saved
    source = prefixes[1]
    prefix = os.path.join(str(tmp_path), os.path.basename(source))
    for suffix in (".index", ".data-00000-of-00001"):
        with open(source + suffix, "rb") as f:
            data = f.read()
        if suffix != ".index":
            data = data[:8]   # less than the first variable's bytes
        with open(prefix + suffix, "wb") as f:
            f.write(data)
    reader = check_checkpoint(prefix, arg_name="student")
    with pytest.raises(ValueError) as error:
        reader.get_tensor("a/w")
    message = str(error.value)
    assert message.startswith(
        "student %r: variable 'a/w' cannot be read from %s: the file is "
        "truncated or corrupt (" % (prefix,
                                    prefix + ".data-00000-of-00001"))
    assert "\n" not in message
