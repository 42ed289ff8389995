"""`base.data_checks`: word-id arrays checked against numpy's own
comparison with the vocabulary (every id outside it counted, the first
five named with their positions), and a directory refused before any work
exactly where the file system refuses to hold it (a file in its way, a
file system that takes no new file), leaving nothing behind."""
import os

import numpy as np
import pytest

from tf1_awd_sparse.base import data_checks

pytestmark = pytest.mark.per_python


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_ids_inside_the_vocabulary_pass_as_an_array(dtype):
    ids = np.random.RandomState(0).randint(0, 7, (3, 4)).astype(dtype)
    got = data_checks.check_id_array(ids, 7, ndim=2)
    np.testing.assert_array_equal(got, ids)
    assert data_checks.check_id_array([], 7).dtype == np.int64


def test_ids_outside_the_vocabulary_are_counted_and_named():
    rng = np.random.RandomState(1)
    ids = rng.randint(-3, 10, (4, 5))
    outside = np.argwhere((ids < 0) | (ids >= 7))
    assert len(outside) > 5
    with pytest.raises(ValueError) as error:
        data_checks.check_id_array(ids, 7, arg_name="tokens")
    message = str(error.value)
    assert message.startswith("tokens must hold ids in [0, 7)")
    assert "got %d outside it" % len(outside) in message
    for position in outside[:5]:
        assert "%d at %s" % (ids[tuple(position)], position.tolist()) \
            in message
    assert message.endswith(", ...")


@pytest.mark.parametrize("ids,match", [
    ([0.0, 1.0], "integer word ids, got dtype float64"),
    (["a"], "integer word ids"),
    ([[0, 1]], "must have 1 dimensions, got shape \\(1, 2\\)")])
def test_what_is_not_an_id_array_is_named(ids, match):
    with pytest.raises(ValueError, match=match):
        data_checks.check_id_array(ids, 5, ndim=1)


def test_a_writable_directory_passes_and_is_not_made(tmp_path):
    path = str(tmp_path / "a" / "b")
    assert data_checks.check_writable_dir(path, "--out") == path
    assert os.listdir(str(tmp_path)) == []


def test_a_file_in_the_way_is_named(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text(u"x")
    with pytest.raises(ValueError) as error:
        data_checks.check_writable_dir(str(blocker / "sub"), "--out x")
    assert str(error.value) == "--out x: %s is a file, not a directory" \
        % blocker


def test_a_folder_that_takes_no_file_is_refused_with_the_reason(tmp_path):
    """The reference: whether creating a file there fails."""
    folder = "/proc/self" if os.path.isdir("/proc/self") else None
    if folder is None:
        pytest.skip("no /proc on this system")
    try:
        open(os.path.join(folder, "probe"), "w").close()
        writable = True
    except (IOError, OSError):
        writable = False
    if writable:
        pytest.skip("%s takes new files here" % folder)
    with pytest.raises(ValueError, match="^--out .*: cannot write: "):
        data_checks.check_writable_dir(os.path.join(folder, "x"),
                                       "--out %s/x" % folder)
