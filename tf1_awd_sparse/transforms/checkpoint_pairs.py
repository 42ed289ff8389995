"""Reading sparse pairs from a checkpoint, shared by the report
(`layers.sparse.report`) and strip (`export.strip`)."""
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.base.checkpoints import check_checkpoint

__all__ = ["open_reader", "pairs"]


def open_reader(checkpoint_path):
    """A checkpoint reader and the prefix it reads.

    Args:
      checkpoint_path: checkpoint prefix (as returned by `Saver.save`) or a
        directory holding a `checkpoint` file.

    Returns:
      (reader, prefix): a `tf1_awd_sparse.base.checkpoints.CheckpointReader`, whose
      `get_tensor` raises ValueError naming the data file when it is
      truncated or corrupt.

    Raises:
      ValueError: not a string, a directory without a checkpoint, no
        checkpoint at the prefix, or one TensorFlow cannot open; TensorFlow's
        own message is included.
    """
    reader = check_checkpoint(checkpoint_path, "checkpoint_path")
    return reader, reader.prefix


def pairs(reader, prefix, given):
    """The sparse pairs of a checkpoint, technique by technique.

    Args:
      reader, prefix: as returned by `open_reader`.
      given: {short_name: list of (theta_name, aux_name) or None}; None
        finds the technique's pairs by its naming rule.

    Returns:
      list of (technique, theta_name, aux_name).

    Raises:
      ValueError: a given list that is not of (theta_name, aux_name)
        string pairs, or a given name that is not in the checkpoint.
    """
    names = set(reader.get_variable_to_shape_map())
    found = []
    for technique in map(techniques.get, techniques.NAMES):
        listed = given.get(technique.short_name)
        if listed is None:
            listed = technique.find_pairs(names)
        elif isinstance(listed, str) or not all(
                isinstance(p, (tuple, list)) and len(p) == 2
                and all(isinstance(n, str) for n in p) for p in listed):
            raise ValueError("%s_pairs must be a list of (theta_name, "
                             "aux_name) strings, got %r"
                             % (technique.short_name, listed))
        for theta_name, aux_name in listed:
            for name in (theta_name, aux_name):
                if name not in names:
                    raise ValueError("variable %r is not in checkpoint %r"
                                     % (name, prefix))
            found.append((technique, theta_name, aux_name))
    return found
