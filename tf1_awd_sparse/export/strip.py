"""Strip a sparse model into plain dense weights.

What `tf.contrib.model_pruning`'s `strip_pruning_vars` does for its masks:
every sparse weight `theta` is replaced, under its own name, by its
evaluation weights (VD: `theta * (log_alpha < threshold)` with the
unclipped log(alpha); L0: `theta * hard_concrete_mean(log_alpha)`), the
auxiliary variables (and their optimizer slots, `<aux>/...`) are dropped
and every other variable is copied unchanged. A plain `tf.layers.dense`,
`tf.nn.rnn_cell.LSTMCell` or `tf.nn.embedding_lookup` restored from the
result computes what the sparse layer / cell / lookup computes in
evaluation.

* `strip_checkpoint(path, output_prefix)`: checkpoint to checkpoint; the
  math is numpy (`Technique.numpy_eval_weights`, the formulas of
  `sparse_layers.common` on its numpy backend); pairs are found by the
  registry's naming rule or given as for `checkpoint_sparsity_report`.
* `strip_values(session)`: the same from a live session, over the pairs
  registered in its graph; returns {variable name: array}.
"""
import collections

import numpy as np
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.transforms import checkpoint_pairs
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.ops.sparse.common import EPSILON, GAMMA, THRESHOLD, ZETA

__all__ = ["strip_checkpoint", "strip_values", "strip_values_of_checkpoint",
           "write_checkpoint"]

def _stripped(values, pairs, options):
    """{name: array} with thetas replaced by eval weights, aux dropped.

    Args:
      values: {variable name: numpy array}, every variable.
      pairs: list of (technique, theta_name, aux_name).
      options: eval options of all techniques by name.
    """
    replaced, dropped = {}, set()
    for technique, theta_name, aux_name in pairs:
        if theta_name in replaced:
            raise ValueError("variable %r is the theta of two sparse pairs"
                             % (theta_name,))
        theta = values[theta_name]
        replaced[theta_name] = technique.numpy_eval_weights(
            theta, values[aux_name],
            **technique.select(options, "eval")).astype(theta.dtype)
        dropped.add(aux_name)

    def is_dropped(name):
        # The auxiliary variable and its slots (e.g. '<aux>/Adam').
        return any(name == aux or name.startswith(aux + "/")
                   for aux in dropped)

    return collections.OrderedDict(
        (name, replaced.get(name, values[name]))
        for name in sorted(values) if not is_dropped(name))


def write_checkpoint(values, output_prefix, dtypes=None):
    """Saves ``{variable name: array}`` as a checkpoint (no graph needed).

    Args:
      values: dict name -> numpy array.
      output_prefix: the checkpoint prefix to write (its directory gets a
        ``checkpoint`` file naming it).
      dtypes: optional dict name -> tf.DType (default: the arrays').

    Returns:
      str, the prefix written (as ``tf.train.Saver.save`` returns).

    Raises:
      ValueError: ``values`` not a dict of arrays by name, ``dtypes`` not a
        dict; ``tf.train.Saver``'s ValueError naming ``output_prefix`` when
        its directory cannot be made.
    """
    if not isinstance(values, dict) or not all(
            isinstance(k, str) for k in values):
        raise ValueError("values must be a dict variable name -> array, got "
                         "%r" % (type(values).__name__,))
    if not isinstance(dtypes, (dict, type(None))):
        raise ValueError("dtypes must be a dict name -> tf.DType, got %r"
                         % (dtypes,))
    dtypes = dtypes or {}
    with tf.Graph().as_default():
        feeds, var_list = {}, {}
        for i, (name, value) in enumerate(sorted(values.items())):
            dtype = dtypes.get(name) or tf.as_dtype(np.asarray(value).dtype)
            # Fed, not embedded: large tables stay out of the GraphDef.
            placeholder = tf.placeholder(dtype, np.shape(value))
            var_list[name] = tf.Variable(placeholder, name="v%d" % i,
                                         trainable=False, collections=[])
            feeds[placeholder] = value
        saver = tf.train.Saver(var_list)
        with tf.Session() as session:
            session.run([v.initializer for v in var_list.values()], feeds)
            return saver.save(session, output_prefix,
                              write_meta_graph=False)


def strip_checkpoint(checkpoint_path, output_prefix, vd_pairs=None,
                     l0_pairs=None, threshold=THRESHOLD, eps=EPSILON,
                     gamma=GAMMA, zeta=ZETA):
    """Writes a copy of a checkpoint with plain dense weights.

    Args:
      checkpoint_path: checkpoint prefix or a directory with a
        `checkpoint` file.
      output_prefix: prefix of the checkpoint to write (its directory
        gets a `checkpoint` file naming it).
      vd_pairs, l0_pairs: lists of (theta_name, aux_name); None finds them
        by the naming rule, as `checkpoint_sparsity_report` does.
      threshold: VD log(alpha) at and above which a weight is zero.
      eps: numerical floor inside the VD log.
      gamma, zeta: hard-concrete stretch interval of the L0 gates.

    Returns:
      str, the prefix written (as `tf.train.Saver.save` returns).

    Raises:
      ValueError: no readable checkpoint at the path, a data file that
        cannot be read (truncated or corrupt, the file named), a named
        variable missing, a theta in two pairs, or an option out of range.
    """
    reader, _ = checkpoint_pairs.open_reader(checkpoint_path)
    return write_checkpoint(
        strip_values_of_checkpoint(checkpoint_path, vd_pairs, l0_pairs,
                                   threshold, eps, gamma, zeta),
        output_prefix, reader.get_variable_to_dtype_map())


def strip_values_of_checkpoint(checkpoint_path, vd_pairs=None,
                               l0_pairs=None, threshold=THRESHOLD,
                               eps=EPSILON, gamma=GAMMA, zeta=ZETA):
    """What `strip_checkpoint` writes, as arrays.

    Args:
      as for `strip_checkpoint` (no output).

    Returns:
      OrderedDict {variable name: numpy array}: every variable but the
      auxiliary ones (and their slots), thetas as evaluation weights.

    Raises:
      ValueError: as `strip_checkpoint`.
    """
    options = techniques.eval_options(threshold, eps, gamma, zeta)
    reader, prefix = checkpoint_pairs.open_reader(checkpoint_path)
    pairs = checkpoint_pairs.pairs(reader, prefix,
                                   {"vd": vd_pairs, "l0": l0_pairs})
    values = {name: reader.get_tensor(name)
              for name in reader.get_variable_to_dtype_map()}
    return _stripped(values, pairs, options)


def strip_values(session, threshold=THRESHOLD, eps=EPSILON, gamma=GAMMA,
                 zeta=ZETA):
    """The stripped values of the global variables of a session's graph.

    Args:
      session: a session (`tf.Session`, `tf.InteractiveSession`,
        `tf.train.MonitoredSession`...) whose graph holds the pairs.
      threshold, eps, gamma, zeta: as for `strip_checkpoint`.

    Returns:
      OrderedDict {variable name (no ':0'): numpy array}: every global
      variable but the auxiliary ones, thetas as evaluation weights.

    Raises:
      ValueError: `session` not a session, a registered pair that is
        not two global variables, or an option out of range.
    """
    if not (hasattr(session, "run") and isinstance(
            getattr(session, "graph", None), tf.Graph)):
        raise ValueError("session must be a session (tf.Session, "
                         "InteractiveSession, MonitoredSession...), got %r"
                         % (session,))
    options = techniques.eval_options(threshold, eps, gamma, zeta)
    graph = session.graph
    variables = {v.op.name: v for v in
                 graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)}
    pairs = []
    for technique in map(techniques.get, techniques.NAMES):
        for pair in techniques.registered_pairs(technique, graph):
            names = [p.op.name for p in pair]
            if not all(variables.get(n) is p for n, p in zip(names, pair)):
                raise ValueError(
                    "strip_values needs pairs of global variables, got "
                    "(%s, %s)" % (pair[0].name, pair[1].name))
            pairs.append((technique, names[0], names[1]))
    return _stripped(session.run(variables), pairs, options)
