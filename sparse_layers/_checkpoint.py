"""Reading sparse pairs from a checkpoint, shared by the report and strip."""
import tensorflow as tf

from sparse_layers import techniques


def open_reader(checkpoint_path):
    """A checkpoint reader and the prefix it reads.

    Args:
      checkpoint_path: checkpoint prefix (as returned by `Saver.save`) or a
        directory holding a `checkpoint` file.

    Returns:
      (reader, prefix).

    Raises:
      ValueError: a directory without a checkpoint.
    """
    if tf.gfile.IsDirectory(checkpoint_path):
        found = tf.train.latest_checkpoint(checkpoint_path)
        if found is None:
            raise ValueError("checkpoint_path %r is a directory without a "
                             "checkpoint" % (checkpoint_path,))
        checkpoint_path = found
    return tf.train.NewCheckpointReader(checkpoint_path), checkpoint_path


def pairs(reader, prefix, given):
    """The sparse pairs of a checkpoint, technique by technique.

    Args:
      reader, prefix: as returned by `open_reader`.
      given: {short_name: list of (theta_name, aux_name) or None}; None
        finds the technique's pairs by its naming rule.

    Returns:
      list of (technique, theta_name, aux_name).

    Raises:
      ValueError: a given name that is not in the checkpoint.
    """
    names = set(reader.get_variable_to_shape_map())
    found = []
    for technique in map(techniques.get, techniques.NAMES):
        listed = given.get(technique.short_name)
        if listed is None:
            listed = technique.find_pairs(names)
        for theta_name, aux_name in listed:
            for name in (theta_name, aux_name):
                if name not in names:
                    raise ValueError("variable %r is not in checkpoint %r"
                                     % (name, prefix))
            found.append((technique, theta_name, aux_name))
    return found
