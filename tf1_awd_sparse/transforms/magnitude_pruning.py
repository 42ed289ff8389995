"""Gradual magnitude pruning (Zhu & Gupta 2017), the library's own op.

It drives the masks that :class:`tf1_awd_sparse.transforms.PruningMask`
registers, on every supported TensorFlow version (``tf.contrib`` is gone in
2.x). It behaves as ``tf.contrib.model_pruning.Pruning`` of TF 1.13 with
the hyperparameters the library uses (``initial_sparsity=0``,
``threshold_decay=0``, element-wise masks; its ``weight_sparsity_map`` as
this class's argument of that name);
``tests/transforms/test_magnitude_pruning.py`` runs the two side by side on TF 1.x.

The schedule ``s(t)``, the target fraction of zeros at global step
``t``: :func:`gradual_sparsity` (:mod:`.pruning_schedule`). The exact
cuts of numpy arrays, entry by entry or in blocks, that a model's final
cut makes (:func:`exact_keep_masks`, :func:`exact_block_keep_masks` and
their block helpers) are in :mod:`.pruning_cut`; callers import them from
there.

When the masks change. The op keeps the int32 variable
``<name>/last_mask_update_step`` (0 at first, saved in checkpoints). At a
step ``t`` the masks are recomputed when ``begin_step <= t <= end_step``
and ``last_mask_update_step + frequency <= t``; the update then sets
``last_mask_update_step = t``. Run once per training step (steps 1, 2,
...), that is steps ``max(begin_step, frequency)``, then every
``frequency`` steps up to ``end_step``; a step that is not run (or a
restart) moves the next update to the first step run past it, as in
contrib. Outside those steps nothing is assigned.

The mask of one weight ``w`` at an update, with ``s = s(t)``:

* ``nbins`` an int (the library uses 4096): a histogram of ``|w|`` with
  ``nbins`` equal bins over ``[0, max|w|]`` (bin of ``v``:
  ``floor(nbins * (v / max|w|))``, the last bin closed); the threshold is
  ``max|w| * k / nbins`` with ``k`` the number of bins whose cumulative
  fraction of entries is below ``s``; mask = ``|w| > threshold``. The zeros
  reached are within one bin's entries of ``s`` (the threshold is a bin
  edge, never inside a bin).
* ``nbins=None``: the exact quantile (TF 1.15's contrib, which ignores
  ``nbins``): ``k = round(size * (1 - s))``, the threshold is the k-th
  largest ``|w|`` (k at least 1) and mask = ``|w| >= threshold``, so ties at
  the threshold are all kept.

With ``block_shape`` the same rules rank each block's mean ``|w|``
instead of each entry (a partial last block, where the block does not
divide the weight, by the mean of its entries), the threshold variable
holds that mean's threshold, and a block is kept or zeroed whole.

The threshold is stored in the weight's threshold variable (the
``thresholds`` collection), the mask in its mask variable; the mask keeps
the largest magnitudes of the weight *variable* (not of the masked weight),
so a pruned entry whose weight grows back can return at a later update, as
in contrib.

Which weights. The four graph collections `PRUNING_COLLECTIONS` -
``masks``, ``thresholds``, ``masked_weights``, ``kernel``, the names TF
1.x's ``tf.contrib.model_pruning`` uses too - listed in step by
``PruningMask``. They are read when the op is built.
"""
from __future__ import absolute_import, division, print_function

import numbers

import numpy as np

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.checks import check_tensor
from tf1_awd_sparse.base.scalar_checks import (
    check_int, check_nonnegative_int, check_positive_int, check_real)
from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.transforms.pruning_cut import (
    block_sizes, blocks_along, check_block)
from tf1_awd_sparse.transforms.pruning_schedule import gradual_sparsity
# Not this module's: the cuts' callers in the language model's compression
# and its tests import them from here until they move to pruning_cut
# (issue 56); not in __all__.
from tf1_awd_sparse.transforms.pruning_cut import (  # noqa: F401
    block_scores, expand_blocks, exact_block_keep_masks, exact_keep_masks)

#: The graph collections of the masked weights, in step: (mask, threshold,
#: masked weight, weight); `transforms.PruningMask` fills them.
PRUNING_COLLECTIONS = ("masks", "thresholds", "masked_weights", "kernel")

__all__ = ["MagnitudePruning", "DEFAULT_NBINS", "block_group_lasso",
           "PRUNING_COLLECTIONS"]

#: The histogram resolution the library prunes with (contrib's default 256
#: bins leave a matrix up to ~1 % short of the target).
DEFAULT_NBINS = 4096


class MagnitudePruning(object):
    """Gradual magnitude pruning of the registered masked weights.

    Args:
      begin_step: first global step at which masks may change (int >= 0).
      end_step: last global step at which masks may change
        (int > ``begin_step``).
      frequency: global steps between two mask updates (int >= 1).
      target_sparsity: final fraction of zeros of every weight, in
        ``[0, 1)`` (but those of ``weight_sparsity_map``).
      nbins: bins of the ``|w|`` histogram the threshold is read from (int
        >= 1, default 4096); None: the exact quantile (module docstring).
      sparsity_begin_step, sparsity_end_step: the schedule's ramp (default
        ``begin_step`` and ``end_step``; ``0 <= begin < end``).
      exponent: the ramp's exponent (default 3, > 0).
      name: variable scope of ``last_mask_update_step`` and name scope of
        the ops (the language model uses ``"lm_pruning"``; one name, one
        variable: two objects of one name share it).
      block_shape: None or ``(1, 1)`` (each entry on its own), a pair
        ``(rows, cols)`` for every weight, or a callable from a weight
        variable to its pair: each block's mean magnitude is ranked, and
        a block is kept or zeroed whole (TFLite's sparse kernels take
        1 x 4 and 1 x 16 blocks along a fully-connected op's input
        dimension: docs/sparse_tflite.md). Where a block does not divide
        its weight, the last block along that dimension is partial
        (`check_block`).
      weight_sparsity_map: None or a dict ``{name part: target}``, as
        contrib's hyperparameter of that name: a weight whose name contains
        ``name part`` ramps to that target on the same schedule (uneven
        budgets: the language model's table and kernels); a weight that two
        parts match is refused when the op is built.

    Raises:
      ValueError: a bad argument, naming it, what was expected and what
        was given.
    """

    def __init__(self, begin_step, end_step, frequency, target_sparsity,
                 nbins=DEFAULT_NBINS, sparsity_begin_step=None,
                 sparsity_end_step=None, exponent=3, name="model_pruning",
                 block_shape=None, weight_sparsity_map=None):
        self.begin_step = check_nonnegative_int(begin_step, "begin_step")
        self.end_step = check_int(end_step, "end_step")
        if self.end_step <= self.begin_step:
            raise ValueError("end_step must be > begin_step (%d), got %d"
                             % (self.begin_step, self.end_step))
        self.frequency = check_positive_int(frequency, "frequency")
        self.target_sparsity = check_real(target_sparsity, "target_sparsity",
                                          low=0.0, high=1.0, high_open=True)
        self.nbins = check_positive_int(nbins, "nbins", allow_none=True)
        self.sparsity_begin_step = check_nonnegative_int(
            self.begin_step if sparsity_begin_step is None
            else sparsity_begin_step, "sparsity_begin_step")
        self.sparsity_end_step = check_int(
            self.end_step if sparsity_end_step is None
            else sparsity_end_step, "sparsity_end_step")
        if self.sparsity_end_step <= self.sparsity_begin_step:
            raise ValueError(
                "sparsity_end_step must be > sparsity_begin_step (%d), got %d"
                % (self.sparsity_begin_step, self.sparsity_end_step))
        self.exponent = check_real(exponent, "exponent", low=0.0,
                                   low_open=True)
        if not isinstance(name, str) or not name:
            raise ValueError("name must be a non-empty str, got %r" % (name,))
        self.name = name
        if block_shape is not None and not callable(block_shape):
            check_block(block_shape, None, "block_shape")
        self.block_shape = block_shape
        if weight_sparsity_map is not None and not isinstance(
                weight_sparsity_map, dict):
            raise ValueError("weight_sparsity_map must be None or a dict "
                             "{name part: target}, got %r"
                             % (weight_sparsity_map,))
        self.weight_sparsity_map = {
            str(part): check_real(value, "weight_sparsity_map[%r]" % (part,),
                                  low=0.0, high=1.0, high_open=True)
            for part, value in (weight_sparsity_map or {}).items()}
        _compat.require_graph_mode("MagnitudePruning")
        with tf.variable_scope(name, reuse=tf.AUTO_REUSE):
            #: int32 variable: the global step of the last mask update.
            self.last_update_step = tf.get_variable(
                "last_mask_update_step", [], dtype=tf.int32,
                initializer=tf.zeros_initializer(), trainable=False)

    def sparsity_at(self, step, weight_name=None):
        """The schedule's target sparsity at ``step`` (of the weight named
        ``weight_name``, `target_of`): a float32 tensor for an int tensor, a
        numpy float32 array for ints (see :func:`gradual_sparsity`)."""
        return gradual_sparsity(step, self.sparsity_begin_step,
                                self.sparsity_end_step,
                                self.target_of(weight_name), self.exponent)

    def target_of(self, weight_name=None):
        """The final fraction of zeros of the weight named ``weight_name``:
        its ``weight_sparsity_map`` entry, else ``target_sparsity``.

        Raises:
          ValueError: two entries of the map match the name.
        """
        if weight_name is None:
            return self.target_sparsity
        hits = sorted(part for part in self.weight_sparsity_map
                      if part in weight_name)
        if len(hits) > 1:
            raise ValueError("weight_sparsity_map: weight %s matches %s; "
                             "give one entry per weight" % (weight_name,
                                                            hits))
        return (self.weight_sparsity_map[hits[0]] if hits
                else self.target_sparsity)

    def is_update_step(self, global_step=None):
        """Scalar bool tensor: whether the masks change at ``global_step``
        (``begin_step <= t <= end_step`` and
        ``last_mask_update_step + frequency <= t``)."""
        step = self._read_step(global_step)
        return self._is_update_step(step)

    def mask_update_op(self, global_step=None):
        """An op that recomputes every registered mask and threshold for
        ``s(global_step)`` and sets ``last_mask_update_step`` to the step,
        unconditionally.

        Args:
          global_step: scalar int tensor / variable (default
            ``tf.train.get_global_step()``). It is read when this is
            called, under the caller's control dependencies.

        Returns:
          The op (a ``no_op`` named ``mask_update`` after the assignments).

        Raises:
          ValueError: no global step, no registered weights, collections
            out of step, or a mask whose shape is not its weight's.
          DtypeError: a non-int step or a non-float weight.
        """
        step = self._read_step(global_step)
        return self._update(step)

    def conditional_mask_update_op(self, global_step=None):
        """:meth:`mask_update_op` on the schedule's update steps
        (:meth:`is_update_step`), a ``no_op`` on the others: run it once per
        training step, after the step (see the module docstring).

        Args, Raises: as :meth:`mask_update_op`.
        """
        step = self._read_step(global_step)
        triples = self._pruned_weights()  # errors now, not inside the cond
        for weight, _, _ in triples:
            self.target_of(_weight_name(weight))
        with tf.name_scope(self.name):
            due = self._is_update_step(step)
        return tf.cond(due, lambda: self._update(step, triples), tf.no_op)

    # -- building blocks ----------------------------------------------------

    def _read_step(self, global_step):
        if global_step is None:
            global_step = tf.train.get_global_step()
            if global_step is None:
                raise ValueError("global_step must be given (an int tensor) "
                                 "when the graph has no global step, got "
                                 "None")
        step = check_tensor(global_step, "global_step", kind="int", rank=0)
        return tf.cast(step, tf.int32)

    def _is_update_step(self, step):
        in_range = tf.logical_and(tf.greater_equal(step, self.begin_step),
                                  tf.less_equal(step, self.end_step))
        due = tf.less_equal(self.last_update_step + self.frequency, step)
        return tf.logical_and(in_range, due, name="is_mask_update_step")

    def _pruned_weights(self):
        """[(weight, mask, threshold)] from the model_pruning collections."""
        masks, thresholds, _, weights = PRUNING_COLLECTIONS
        masks, thresholds, weights = (tf.get_collection(c) for c in
                                      (masks, thresholds, weights))
        if not masks:
            raise ValueError("no masked weights to prune: the '%s' "
                             "collection is empty (build the model with "
                             "PruningMask / pruning_mask=True first)"
                             % PRUNING_COLLECTIONS[0])
        if not len(masks) == len(thresholds) == len(weights):
            raise ValueError("the pruning collections must be in step, got "
                             "%d masks, %d thresholds, %d weights"
                             % (len(masks), len(thresholds), len(weights)))
        for weight, mask in zip(weights, masks):
            if not weight.shape.is_compatible_with(mask.shape):
                raise ValueError("mask %s must have its weight's shape %s, "
                                 "got %s" % (mask.op.name, weight.shape,
                                             mask.shape))
        return list(zip(weights, masks, thresholds))

    def _update(self, step, triples=None):
        triples = self._pruned_weights() if triples is None else triples
        with tf.name_scope(self.name):
            assigns = []
            for weight, mask, threshold in triples:
                sparsity = self.sparsity_at(step, _weight_name(weight))
                new_threshold, new_mask = self._threshold_and_mask(
                    weight, sparsity, threshold.dtype.base_dtype,
                    mask.dtype.base_dtype)
                assigns.append(tf.assign(threshold, new_threshold,
                                         name=threshold.op.name + "_assign"))
                assigns.append(_assign(mask, new_mask))
            record = tf.assign(self.last_update_step, step,
                               name="last_mask_update_step_assign")
            with tf.control_dependencies(assigns + [record]):
                return tf.no_op(name="mask_update")

    def _threshold_and_mask(self, weight, sparsity, threshold_dtype,
                            mask_dtype):
        name = _weight_name(weight)
        variable = weight
        if isinstance(weight, _compat.PartitionedVariable):
            weight = weight.as_tensor()
        block = self._block_of(variable, weight.shape, name)
        weight = check_tensor(weight, "weight %s" % name, kind="float")
        with tf.name_scope(name.replace(":", "_") + "_pruning_ops"):
            magnitude = _pooled(tf.abs(weight), block)
            if self.nbins is None:
                threshold, keep = _quantile_threshold(magnitude, sparsity)
            else:
                threshold, keep = _histogram_threshold(magnitude, sparsity,
                                                       self.nbins)
            return (tf.cast(threshold, threshold_dtype),
                    tf.cast(_expanded(keep, block, weight.shape.as_list()),
                            mask_dtype))

    def _block_of(self, variable, shape, name):
        block = self.block_shape
        if callable(block):
            block = block(variable)
        if block is None:
            return (1, 1)
        return check_block(block, shape.as_list(),
                           "block_shape of weight %s" % name)


def block_group_lasso(weights, blocks):
    """The group lasso over blocks (Yuan & Lin 2006, as block-sparse RNNs
    use it before a block cut): ``sum_w sum_b sqrt(|b|) * ||w_b||_2``,
    each block's L2 norm weighted by the square root of its entries, so a
    partial last block (`check_block`) is pulled as its size warrants.
    Its gradient pulls every block towards zero by the same norm per
    step, so the weakest blocks reach the cut nearly empty.

    Args:
      weights: a list of 2-D float tensors or variables (a 1 x 1 block
        also takes other ranks).
      blocks: one ``(rows, cols)`` pair for all, or a list of pairs, one
        per weight.

    Returns:
      a float32 scalar tensor (0 for no weight). An all-zero block adds
      under 1e-18 and a 0 gradient (its norm is taken as ``sqrt(max(sum
      w^2, tiny))``, where the plain norm's gradient would be NaN).

    Raises:
      ValueError: ``blocks`` not one pair or one per weight, or a block
        that is no pair of positive ints or does not fit a non-2-D weight
        (`check_block`).
    """
    weights = list(weights)
    one_pair = (isinstance(blocks, (tuple, list)) and len(blocks) == 2
                and all(isinstance(b, numbers.Integral) for b in blocks))
    per = [blocks] * len(weights) if one_pair else list(blocks)
    if len(per) != len(weights):
        raise ValueError("blocks must be one pair or one per weight (%d), "
                         "got %d" % (len(weights), len(per)))
    terms = []
    for weight, block in zip(weights, per):
        shape = weight.get_shape().as_list()
        block = check_block(block, shape, "blocks")
        if block == (1, 1):
            terms.append(tf.reduce_sum(tf.abs(tf.cast(weight, tf.float32))))
            continue
        sizes = block_sizes(shape, block)
        squares = _pooled(tf.square(tf.cast(weight, tf.float32)), block) \
            * tf.constant(sizes, tf.float32)
        norms = tf.sqrt(tf.maximum(squares, np.finfo(np.float32).tiny))
        terms.append(tf.reduce_sum(
            norms * tf.constant(np.sqrt(sizes), tf.float32)))
    return tf.add_n(terms) if terms else tf.constant(0.0)


def _weight_name(weight):
    """A pruned weight's name: the op's, a partitioned variable's own."""
    return (weight.name if isinstance(weight, _compat.PartitionedVariable)
            else weight.op.name)


def _pooled(magnitude, block):
    """Mean magnitude per block (the weight itself for 1 x 1; a partial
    last block's mean over its entries, as `block_scores`)."""
    if block == (1, 1):
        return magnitude
    rows, cols = block
    shape = magnitude.shape.as_list()
    n_r, n_c = blocks_along(shape, block)
    padded = tf.pad(magnitude, [[0, n_r * rows - shape[0]],
                                [0, n_c * cols - shape[1]]])
    sums = tf.reduce_sum(tf.reshape(padded, [n_r, rows, n_c, cols]),
                         axis=[1, 3])
    return sums / tf.constant(block_sizes(shape, block), sums.dtype)


def _expanded(keep, block, shape):
    """A per-block mask repeated to the weight's ``shape``."""
    rows, cols = block
    if block == (1, 1):
        return keep
    r, c = keep.shape.as_list()
    tiled = tf.tile(keep[:, None, :, None], [1, rows, 1, cols])
    return tf.reshape(tiled, [r * rows, c * cols])[:shape[0], :shape[1]]


def _histogram_threshold(magnitude, sparsity, nbins):
    """(threshold, keep) from an ``nbins``-bin histogram of ``magnitude``
    over ``[0, max]`` (module docstring); keep is ``magnitude >
    threshold``."""
    largest = tf.reduce_max(magnitude)
    flat = tf.reshape(magnitude, [-1])
    # Bin of v: floor(nbins * (v / max)), clipped so that v = max falls in
    # the last bin (the rounding contrib's histogram has).
    position = tf.floor(np.float32(nbins) * (flat / largest))
    bins = tf.cast(tf.clip_by_value(position, 0.0, float(nbins - 1)),
                   tf.int32)
    counts = tf.unsorted_segment_sum(tf.ones_like(flat, tf.float32), bins,
                                     nbins)
    cumulative = tf.cumsum(counts)
    below = tf.less(cumulative / tf.reduce_max(cumulative),
                    tf.cast(sparsity, tf.float32))
    edge = tf.reduce_sum(tf.cast(below, tf.float32)) / float(nbins)
    threshold = edge * tf.cast(largest, tf.float32)
    return threshold, tf.greater(magnitude,
                                 tf.cast(threshold, magnitude.dtype))


def _quantile_threshold(magnitude, sparsity):
    """(threshold, keep): the k-th largest magnitude, ``k = round(size *
    (1 - sparsity))`` (at least 1); keep is ``magnitude >= threshold``."""
    flat = tf.reshape(magnitude, [-1])
    size = tf.size(flat)
    keep_count = tf.cast(tf.round(tf.cast(size, tf.float32)
                                  * (1.0 - tf.cast(sparsity, tf.float32))),
                         tf.int32)
    descending = tf.nn.top_k(flat, k=size, sorted=True).values
    threshold = tf.gather(descending, tf.maximum(keep_count, 1) - 1)
    return threshold, tf.greater_equal(magnitude, threshold)


def _assign(variable, value):
    """Assigns ``value`` to a variable or, split along its partitioned
    axis, to a partitioned variable's pieces."""
    if not isinstance(variable, _compat.PartitionedVariable):
        return tf.assign(variable, value, name=variable.op.name + "_assign")
    pieces = list(variable)
    full = variable.get_shape().as_list()
    axis = 0
    for piece in pieces:
        differs = [i for i, (a, b) in enumerate(
            zip(piece.get_shape().as_list(), full)) if a != b]
        if differs:
            axis = differs[0]
    sizes = [piece.get_shape().as_list()[axis] for piece in pieces]
    parts = tf.split(value, sizes, axis=axis)
    return tf.group(*[tf.assign(piece, part, name=piece.op.name + "_assign")
                      for piece, part in zip(pieces, parts)])
