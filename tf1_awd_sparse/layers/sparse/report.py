"""Sparsity reports: the fraction of weights that are zero at evaluation.

A VD weight is zero when its (unclipped) log(alpha) >= threshold; an L0
weight is zero when its deterministic gate `hard_concrete_mean` is 0 (the
`zero_mask` of each `sparse_layers.techniques` entry).

* `sparsity_report()` builds tensors (and summaries) for every registered
  pair (`sparse_layers.techniques.registered_pairs`), also in a graph
  imported from a MetaGraph.
* `checkpoint_sparsity_report(path)` computes the same numbers with numpy
  from a checkpoint, without a graph or session; pairs are found by the
  registry's naming rule (`<scope>/kernel` with `<scope>/<aux>`, any other
  `<name>` with `<name>_<aux>`; see `Technique.aux_variable_name`) or
  given explicitly (see `collection_pair_names`).

Both return `{"layers": OrderedDict(name -> fraction), "global": fraction}`
with the same layer names.
"""
import collections

import numpy as np
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.transforms import checkpoint_pairs
from tf1_awd_sparse.ops.sparse import common
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.ops.sparse.common import EPSILON, GAMMA, THRESHOLD, ZETA
from tf1_awd_sparse.base.scalar_checks import check_bool

__all__ = ["collection_pair_names", "sparsity_report",
           "checkpoint_sparsity_report", "format_report"]


def _layer_name(theta_name):
    """Report name of a pair: theta's name without ':0' and '/kernel'."""
    name = theta_name.split(":")[0]
    return name[:-len("/kernel")] if name.endswith("/kernel") else name


def collection_pair_names(graph=None):
    """Variable names of the registered pairs of `graph`.

    Args:
      graph: default `tf.get_default_graph()`.

    Returns:
      {"vd": [(theta_name, log_sigma2_name), ...], "l0": [...]}, names
      as stored in checkpoints; pass them to `checkpoint_sparsity_report`
      or `sparse_layers.strip.strip_checkpoint`.

    Raises:
      ValueError: a registered name missing from the graph.
    """
    return {t.short_name: [(theta.op.name, aux.op.name) for theta, aux in
                           techniques.registered_pairs(t, graph)]
            for t in map(techniques.get, techniques.NAMES)}


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
       "global": float32 scalar tensor}; a fraction over no weights (no
      pairs, or a pair of zero size) is 0.

    Raises:
      ValueError: an option out of range (named, see
        `tf1_awd_sparse.ops.sparse.common.check_sparse_options`), a non-bool
        `summaries`.
    """
    options = techniques.eval_options(threshold, eps, gamma, zeta)
    summaries = check_bool(summaries, "summaries")
    layers = collections.OrderedDict()
    zeros, sizes = [], []
    with tf.name_scope(name):
        for technique in map(techniques.get, techniques.NAMES):
            for theta, aux in techniques.registered_pairs(technique):
                mask = tf.cast(technique.zero_mask(
                    theta, aux, math=common.TF_MATH,
                    **technique.select(options, "eval")), tf.float32)
                zeros.append(tf.reduce_sum(mask))
                sizes.append(tf.cast(tf.size(mask), tf.float32))
                # div_no_nan: a pair without weights is 0 % zero, not NaN.
                layers[_layer_name(theta.name)] = tf.div_no_nan(zeros[-1],
                                                                sizes[-1])
        global_fraction = (tf.div_no_nan(tf.add_n(zeros), tf.add_n(sizes))
                           if zeros else tf.constant(0.))
        if summaries:
            for layer, fraction in layers.items():
                tf.summary.scalar(layer.replace(":", "_"), fraction)
            tf.summary.scalar("global", global_fraction)
    return {"layers": layers, "global": global_fraction}


def checkpoint_sparsity_report(checkpoint_path, vd_pairs=None, l0_pairs=None,
                               threshold=THRESHOLD, eps=EPSILON, gamma=GAMMA,
                               zeta=ZETA):
    """`sparsity_report` computed with numpy from a checkpoint.

    Args:
      checkpoint_path: checkpoint prefix (as returned by `Saver.save`) or a
        directory holding a `checkpoint` file.
      vd_pairs, l0_pairs: lists of (theta_name, aux_name) variable names;
        None finds them by the naming rule of the technique
        (`Technique.find_pairs`): `<scope>/kernel` with `<scope>/log_sigma2`
        (VD) or `<scope>/log_alpha` (L0), any other `<name>` with
        `<name>_log_sigma2` / `<name>_log_alpha`.
      threshold, eps, gamma, zeta: as for `sparsity_report`.

    Returns:
      {"layers": OrderedDict(layer name -> float), "global": float}.

    Raises:
      ValueError: no readable checkpoint at the path, a data file that
        cannot be read (truncated or corrupt, the file named), pairs that
        are not lists of (theta_name, aux_name) strings, a named variable
        missing, or an option out of range.
    """
    options = techniques.eval_options(threshold, eps, gamma, zeta)
    reader, prefix = checkpoint_pairs.open_reader(checkpoint_path)
    layers = collections.OrderedDict()
    zeros = total = 0
    for technique, theta_name, aux_name in checkpoint_pairs.pairs(
            reader, prefix, {"vd": vd_pairs, "l0": l0_pairs}):
        mask = technique.zero_mask(
            reader.get_tensor(theta_name), reader.get_tensor(aux_name),
            math=common.NUMPY_MATH, **technique.select(options, "eval"))
        layers[_layer_name(theta_name)] = (float(np.mean(mask)) if mask.size
                                           else 0.)
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

    Raises:
      ValueError: not such a dict of numbers (e.g. tensors not evaluated).
    """
    if not isinstance(report, dict) or not isinstance(
            report.get("layers"), dict) or not all(
                isinstance(v, (int, float, np.number)) for v in
                list(report["layers"].values()) + [report.get("global")]):
        raise ValueError("report must be {'layers': {name: fraction}, "
                         "'global': fraction} of numbers (session.run a "
                         "sparsity_report() first), got %r" % (report,))
    width = max([len(k) for k in report["layers"]] + [6])
    lines = ["%-*s  %6.2f%% zero" % (width, k, 100. * v)
             for k, v in report["layers"].items()]
    lines.append("%-*s  %6.2f%% zero" % (width, "global",
                                          100. * report["global"]))
    return "\n".join(lines)
