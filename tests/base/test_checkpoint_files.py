"""`base.checkpoint_files`: a checkpoint's files checked without
TensorFlow, against what TensorFlow's own reader does with them: a
checkpoint of many variables (its index spans several table blocks) passes
whole, and each damage it refuses is one the reader fails on."""
import glob
import os
import shutil

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base.checkpoint_files import (CheckpointFileError,
                                                  check_checkpoint_files)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(prefix, {name: value}) of a checkpoint of 300 variables with long
    names: an index of several blocks (each about 4 KB)."""
    folder = str(tmp_path_factory.mktemp("many"))
    rng = np.random.RandomState(0)
    values = {"layer_%03d/a_long_name_so_that_the_index_spans_blocks" % i:
              rng.randn(i % 5 + 1, 3).astype(np.float32) for i in range(300)}
    with tf.Graph().as_default():
        for name, value in values.items():
            tf.get_variable(name, initializer=value)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            prefix = tf.train.Saver().save(session,
                                           os.path.join(folder, "m.ckpt"))
    assert os.path.getsize(prefix + ".index") > 3 * 4096
    return prefix, values


def _reads_every_variable(prefix, values):
    """Whether TensorFlow's reader gives every variable's value back."""
    try:
        reader = tf.train.NewCheckpointReader(prefix)
        return all(np.array_equal(reader.get_tensor(name), value)
                   for name, value in values.items())
    except (tf.errors.OpError, IndexError, RuntimeError, ValueError):
        return False


def _copy(saved, tmp_path):
    prefix, _ = saved
    for path in glob.glob(prefix + ".*"):
        shutil.copy(path, str(tmp_path))
    return os.path.join(str(tmp_path), os.path.basename(prefix))


def test_a_whole_checkpoint_passes(saved):
    prefix, values = saved
    assert _reads_every_variable(prefix, values)
    check_checkpoint_files(prefix)


@pytest.mark.parametrize("cut", [1, 12])
def test_a_data_file_short_of_its_last_tensor_is_refused(saved, tmp_path,
                                                         cut):
    prefix = _copy(saved, tmp_path)
    data = glob.glob(prefix + ".data-*")[0]
    whole = os.path.getsize(data)
    with open(data, "r+b") as handle:
        handle.truncate(whole - cut)
    assert not _reads_every_variable(prefix, saved[1])
    with pytest.raises(CheckpointFileError) as error:
        check_checkpoint_files(prefix)
    assert str(error.value) == (
        "%s: checkpoint damaged: %s is truncated (%d bytes, its index "
        "records %d)" % (prefix, os.path.basename(data), whole - cut, whole))


def test_a_cut_index_is_refused(saved, tmp_path):
    prefix = _copy(saved, tmp_path)
    index = prefix + ".index"
    with open(index, "r+b") as handle:
        handle.truncate(os.path.getsize(index) // 2)
    assert not _reads_every_variable(prefix, saved[1])
    with pytest.raises(CheckpointFileError, match="m.ckpt.index is not a "
                       "checkpoint index"):
        check_checkpoint_files(prefix)
