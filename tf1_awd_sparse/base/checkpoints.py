"""Opening a checkpoint given as an argument, with errors that name it.

One job: every public function that reads a checkpoint by hand (the sparse
report and strip, the TFLite exporter, the language model's compression,
warm starts and step counts) opens it with `check_checkpoint`, so a bad
path, a directory without a checkpoint, or a truncated data file is one
``ValueError`` naming the argument and the file, the same way everywhere.
Restoring a graph's variables (``Saver.restore``) is not done here.
"""
from __future__ import absolute_import, division, print_function

from tf1_awd_sparse.base.compat import tf

__all__ = ["check_checkpoint", "CheckpointReader"]


_CHECKPOINT_EXPECTED = ("a checkpoint prefix (as Saver.save returns, e.g. "
                        "'run/model.ckpt-100') or a directory holding a "
                        "'checkpoint' file")


class CheckpointReader(object):
    """A ``tf.train.NewCheckpointReader`` whose errors name the checkpoint
    argument and the file: made by :func:`check_checkpoint`.

    Attributes:
      prefix: the checkpoint prefix read (a directory resolved).
      arg_name: the argument it came from, for messages.
    """

    def __init__(self, reader, prefix, arg_name):
        self._reader = reader
        self.prefix = prefix
        self.arg_name = arg_name
        self._shapes = reader.get_variable_to_shape_map()

    def get_variable_to_shape_map(self):
        """{variable name: shape list}, as TensorFlow's reader."""
        return dict(self._shapes)

    def get_variable_to_dtype_map(self):
        """{variable name: tf.DType}, as TensorFlow's reader."""
        return self._reader.get_variable_to_dtype_map()

    def get_tensor(self, name):
        """The value of variable ``name``, a numpy array.

        Raises:
          ValueError: the checkpoint has no such variable, or its data
            file cannot be read (truncated or corrupt), naming the file.
        """
        names = self._shapes
        if name not in names:
            raise ValueError("%s %r has no variable %r (it has %d, e.g. %s)"
                             % (self.arg_name, self.prefix, name, len(names),
                                ", ".join(sorted(names)[:3])))
        try:
            return self._reader.get_tensor(name)
        # TF 1.x raises OpError (OutOfRangeError, DataLossError); TF 2.x's
        # pybind reader an IndexError or RuntimeError for the same files.
        except (tf.errors.OpError, IndexError, RuntimeError) as error:
            files = tf.gfile.Glob(self.prefix + ".data-*") or [
                self.prefix + ".data-*"]
            raise ValueError("%s %r: variable %r cannot be read from %s: "
                             "the file is truncated or corrupt (%s)" % (
                                 self.arg_name, self.prefix, name,
                                 ", ".join(files), _first_line(error)))


def _first_line(error):
    """The first line of an error's message (TensorFlow's run on for many
    lines)."""
    message = getattr(error, "message", None) or str(error)
    return message.strip().split("\n")[0]


def check_checkpoint(path, arg_name="checkpoint"):
    """Validates a checkpoint argument and opens it.

    Args:
      path: a checkpoint prefix (as ``Saver.save`` returns) or a directory
        holding a ``checkpoint`` file (its latest checkpoint is read).
      arg_name: the argument's name, for the error messages.

    Returns:
      a :class:`CheckpointReader` (its ``prefix`` the checkpoint read),
      whose ``get_tensor`` names the data file when it cannot be read.

    Raises:
      ValueError: not a non-empty string, a directory without a
        checkpoint, no checkpoint at the prefix, or one TensorFlow cannot
        open; the message names the argument, the path and what was
        expected (TensorFlow's own message included).
    """
    if not isinstance(path, str) or not path:
        raise ValueError("%s must be %s (str), got %r"
                         % (arg_name, _CHECKPOINT_EXPECTED, path))
    if tf.gfile.IsDirectory(path):
        found = tf.train.latest_checkpoint(path)
        if found is None:
            raise ValueError("%s %r is a directory without a checkpoint; "
                             "expected %s" % (arg_name, path,
                                              _CHECKPOINT_EXPECTED))
        path = found
    elif not (tf.gfile.Exists(path + ".index") or tf.gfile.Exists(path)):
        raise ValueError("%s %r: no checkpoint there (no file %s.index); "
                         "expected %s" % (arg_name, path, path,
                                          _CHECKPOINT_EXPECTED))
    try:
        reader = tf.train.NewCheckpointReader(path)
    except (tf.errors.OpError, RuntimeError, ValueError) as error:
        raise ValueError("%s %r: no readable checkpoint there (%s); "
                         "expected %s" % (arg_name, path, _first_line(error),
                                          _CHECKPOINT_EXPECTED))
    return CheckpointReader(reader, path, arg_name)
