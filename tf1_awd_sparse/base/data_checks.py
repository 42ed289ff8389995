"""The checks of data arguments: word ids given as a numpy array
(`check_id_array`, the numpy counterpart of `checks.check_ids`) and a
directory to write (`check_writable_dir`). They import no TensorFlow.
Both names are also importable from :mod:`tf1_awd_sparse.base.checks`,
the checks' one public module."""
from __future__ import absolute_import, division, print_function

import os
import tempfile

import numpy as np

__all__ = ["check_id_array", "check_writable_dir"]


def check_id_array(ids, vocab_size, arg_name="ids", ndim=None):
    """Validates word ids given as a numpy array (the numpy counterpart of
    `check_ids`, for code that feeds an interpreter rather than a graph).

    Args:
      ids: an array-like of integers.
      vocab_size: int, the number of words.
      arg_name: the argument's name, for the error message.
      ndim: the number of dimensions required, or None.

    Returns:
      ``ids`` as a numpy integer array.

    Raises:
      ValueError: not an integer array, another number of dimensions, or
        ids outside ``[0, vocab_size)``: the message names the argument,
        the vocabulary size and the offending ids (the first few, with
        their positions).
    """
    array = np.asarray(ids)
    if array.size == 0 and array.dtype != object:
        array = array.astype(np.int64)   # np.asarray([]) is float64
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError("%s must be an array of integer word ids, got dtype "
                         "%s" % (arg_name, array.dtype))
    if ndim is not None and array.ndim != ndim:
        raise ValueError("%s must have %d dimensions, got shape %s"
                         % (arg_name, ndim, array.shape))
    bad = np.argwhere((array < 0) | (array >= vocab_size))
    if bad.size:
        # tolist(): Python ints (numpy 2 prints list(i) as [np.int64(0), ...]).
        shown = ", ".join("%d at %s" % (array[tuple(i)], i.tolist())
                          for i in bad[:5])
        raise ValueError("%s must hold ids in [0, %d) (the vocabulary size "
                         "is %d), got %d outside it: %s%s"
                         % (arg_name, vocab_size, vocab_size, len(bad),
                            shown, ", ..." if len(bad) > 5 else ""))
    return array


def check_writable_dir(path, what):
    """Refuses, before any work, a directory that cannot be made or
    written: a file where it or a folder above it would be, or a nearest
    existing folder that refuses a new file (a read-only or virtual file
    system: ``/proc`` refuses one even to root, whom ``os.access`` allows
    everything). Nothing is left behind: the folder is not made, the
    probe file is deleted.

    Args:
      path: the directory (need not exist).
      what: how the caller names it in the message (e.g. ``--out
        runs/x``).

    Returns:
      ``path``.

    Raises:
      ValueError: naming ``what``, the file in the way or why a file
        cannot be written (e.g. ``--out /proc/x: cannot write: No such
        file or directory``).
    """
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError("%s: %s is a file, not a directory"
                         % (what, existing))
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        raise ValueError("%s: cannot write: %s" % (what, e.strerror or e))
    return path
