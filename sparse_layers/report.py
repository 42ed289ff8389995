"""Sparsity reports: the fraction of weights that are zero at evaluation.

A VD weight is zero when its (unclipped) log(alpha) >= threshold; an L0
weight is zero when its deterministic gate `hard_concrete_mean` is 0.

* `sparsity_report()` builds tensors (and summaries) for every pair in the
  `'theta_logsigma2'` and `'theta_logalpha'` collections.
* `checkpoint_sparsity_report(path)` computes the same numbers with numpy
  from a checkpoint, without a graph or session; pairs are found by the
  layers' naming (`<scope>/kernel` + `<scope>/log_sigma2` or
  `<scope>/log_alpha`) or given explicitly (see `collection_pair_names`).

Both return `{"layers": OrderedDict(name -> fraction), "global": fraction}`.
"""
import collections

import numpy as np
import tensorflow as tf

from sparse_layers import common
from sparse_layers.common import EPSILON, GAMMA, THRESHOLD, ZETA

_TECHNIQUES = (("vd", common.VD_COLLECTION, "log_sigma2"),
               ("l0", common.L0_COLLECTION, "log_alpha"))


def _zero_mask(technique, theta, aux, threshold, eps, gamma, zeta, math):
    """Boolean mask of weights that are zero at evaluation."""
    if technique == "vd":
        return math.logical_not(common.vd_keep_mask(aux, theta, threshold,
                                                    eps, math=math))
    return math.equal(common.hard_concrete_mean(aux, gamma, zeta, math=math),
                      0.)


def _layer_name(theta_name):
    name = theta_name.split(":")[0]
    return name[:-len("/kernel")] if name.endswith("/kernel") else name


def collection_pair_names(graph=None):
    """Variable names of the pairs in the sparse collections of `graph`.

    Args:
      graph: default `tf.get_default_graph()`.

    Returns:
      {"vd": [(theta_name, log_sigma2_name), ...], "l0": [...]}, names
      as stored in checkpoints; pass them to `checkpoint_sparsity_report`.
    """
    graph = graph or tf.get_default_graph()
    return {technique: [(theta.op.name, aux.op.name)
                        for theta, aux in graph.get_collection(collection)]
            for technique, collection, _ in _TECHNIQUES}


def sparsity_report(threshold=THRESHOLD, eps=EPSILON, gamma=GAMMA,
                    zeta=ZETA, summaries=True, name="sparsity"):
    """Per-layer and global fraction of zero weights, as tensors.

    Args:
      threshold: VD log(alpha) at and above which a weight is zero.
      eps: numerical floor inside the log.
      gamma, zeta: hard-concrete stretch interval of the L0 gates.
      summaries: write scalar summaries `<name>/<layer>` and
        `<name>/global`.
      name: name scope and summary prefix.

    Returns:
      {"layers": OrderedDict(layer name -> float32 scalar tensor),
       "global": float32 scalar tensor (0 when there are no weights)}.
    """
    layers = collections.OrderedDict()
    zeros, sizes = [], []
    with tf.name_scope(name):
        for technique, collection, _ in _TECHNIQUES:
            for theta, aux in tf.get_collection(collection):
                mask = tf.cast(_zero_mask(technique, theta, aux, threshold,
                                          eps, gamma, zeta, common.TF_MATH),
                               tf.float32)
                zeros.append(tf.reduce_sum(mask))
                sizes.append(tf.cast(tf.size(mask), tf.float32))
                layers[_layer_name(theta.name)] = zeros[-1] / sizes[-1]
        global_fraction = (tf.add_n(zeros) / tf.add_n(sizes) if zeros
                           else tf.constant(0.))
        if summaries:
            for layer, fraction in layers.items():
                tf.summary.scalar(layer.replace(":", "_"), fraction)
            tf.summary.scalar("global", global_fraction)
    return {"layers": layers, "global": global_fraction}


def _find_pairs(names, aux_suffix):
    pairs = []
    for name in sorted(names):
        if name.endswith("/" + aux_suffix):
            theta = name[:-len(aux_suffix)] + "kernel"
            if theta in names:
                pairs.append((theta, name))
    return pairs


def checkpoint_sparsity_report(checkpoint_path, vd_pairs=None, l0_pairs=None,
                               threshold=THRESHOLD, eps=EPSILON, gamma=GAMMA,
                               zeta=ZETA):
    """`sparsity_report` computed with numpy from a checkpoint.

    Args:
      checkpoint_path: checkpoint prefix (as returned by `Saver.save`) or a
        directory holding a `checkpoint` file.
      vd_pairs, l0_pairs: lists of (theta_name, aux_name) variable names;
        None finds `<scope>/kernel` next to `<scope>/log_sigma2` (VD) or
        `<scope>/log_alpha` (L0).
      threshold, eps, gamma, zeta: as for `sparsity_report`.

    Returns:
      {"layers": OrderedDict(layer name -> float), "global": float}.

    Raises:
      ValueError: no checkpoint at the path, or a named variable missing.
    """
    if tf.gfile.IsDirectory(checkpoint_path):
        found = tf.train.latest_checkpoint(checkpoint_path)
        if found is None:
            raise ValueError("checkpoint_path %r is a directory without a "
                             "checkpoint" % (checkpoint_path,))
        checkpoint_path = found
    reader = tf.train.NewCheckpointReader(checkpoint_path)
    names = set(reader.get_variable_to_shape_map())
    given = {"vd": vd_pairs, "l0": l0_pairs}
    layers = collections.OrderedDict()
    zeros = total = 0
    for technique, _, suffix in _TECHNIQUES:
        pairs = given[technique]
        if pairs is None:
            pairs = _find_pairs(names, suffix)
        for theta_name, aux_name in pairs:
            for var in (theta_name, aux_name):
                if var not in names:
                    raise ValueError("variable %r is not in checkpoint %r"
                                     % (var, checkpoint_path))
            mask = _zero_mask(technique, reader.get_tensor(theta_name),
                              reader.get_tensor(aux_name), threshold, eps,
                              gamma, zeta, common.NUMPY_MATH)
            layers[_layer_name(theta_name)] = float(np.mean(mask))
            zeros += int(np.sum(mask))
            total += mask.size
    return {"layers": layers,
            "global": float(zeros) / total if total else 0.}


def format_report(report):
    """Text table of a report (tensor values must be evaluated first).

    Args:
      report: dict as returned by `checkpoint_sparsity_report` (or by
        `session.run(sparsity_report())`).

    Returns:
      str, one `layer  fraction` line per layer and a global line.
    """
    width = max([len(k) for k in report["layers"]] + [6])
    lines = ["%-*s  %6.2f%% zero" % (width, k, 100. * v)
             for k, v in report["layers"].items()]
    lines.append("%-*s  %6.2f%% zero" % (width, "global",
                                          100. * report["global"]))
    return "\n".join(lines)
