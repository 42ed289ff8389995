"""Gradual magnitude pruning (Zhu & Gupta 2017), the library's own op.

It drives the masks that :class:`tf1_awd_sparse.transforms.PruningMask`
registers, on every supported TensorFlow version (``tf.contrib`` is gone in
2.x). It behaves as ``tf.contrib.model_pruning.Pruning`` of TF 1.13 with
the hyperparameters the library uses (``initial_sparsity=0``,
``threshold_decay=0``, element-wise masks, no per-weight sparsity map);
``tests/transforms/test_magnitude_pruning.py`` runs the two side by side on TF 1.x.

The schedule. The target fraction of zeros at global step ``t`` is ::

    p(t) = clip((t - sparsity_begin_step)
                / (sparsity_end_step - sparsity_begin_step), 0, 1)
    s(t) = target_sparsity * (1 - (1 - p(t)) ** exponent)

(written as contrib writes it, ``(0 - target) * (1 - p) ** exponent +
target``, in float32), 0 before the ramp and ``target_sparsity`` after it.

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
from tf1_awd_sparse.base.checks import (
    check_int, check_nonnegative_int, check_positive_int, check_real,
    check_tensor)
from tf1_awd_sparse.base.compat import tf

#: The graph collections of the masked weights, in step: (mask, threshold,
#: masked weight, weight); `transforms.PruningMask` fills them.
PRUNING_COLLECTIONS = ("masks", "thresholds", "masked_weights", "kernel")

__all__ = ["MagnitudePruning", "gradual_sparsity", "DEFAULT_NBINS",
           "exact_keep_masks", "check_block", "block_scores",
           "expand_blocks", "block_sizes", "exact_block_keep_masks"]

#: The histogram resolution the library prunes with (contrib's default 256
#: bins leave a matrix up to ~1 % short of the target).
DEFAULT_NBINS = 4096


def _ramp(steps_done, span, target, exponent, minimum, maximum, one, zero):
    """The cubic (``exponent``) ramp from 0 to ``target``: the one formula
    behind the tensor and the numpy schedules (``minimum`` / ``maximum`` /
    ``one`` / ``zero`` are the namespace's, so float32 throughout)."""
    progress = minimum(one, maximum(zero, steps_done / span))
    return (zero - target) * (one - progress) ** exponent + target


def gradual_sparsity(step, begin_step, end_step, target_sparsity, exponent=3):
    """The gradual sparsity schedule ``s(step)`` (module docstring).

    Args:
      step: an int tensor (any shape; cast to int32 as contrib's global step
        is), or a Python / numpy int or int array.
      begin_step, end_step: the ramp's ends (``begin_step < end_step``);
        ``s`` is 0 up to ``begin_step`` and ``target_sparsity`` from
        ``end_step`` on.
      target_sparsity: the final fraction of zeros, in ``[0, 1)``.
      exponent: the ramp's exponent (3: cubic).

    Returns:
      A float32 tensor of ``step``'s shape for a tensor ``step``; else a
      numpy float32 array (0-d for a scalar ``step``).

    Raises:
      ValueError: a bad argument (named).
      DtypeError: a tensor ``step`` that is not int32 / int64.
    """
    begin_step = check_nonnegative_int(begin_step, "begin_step")
    end_step = check_int(end_step, "end_step")
    if end_step <= begin_step:
        raise ValueError("end_step must be > begin_step (%d), got %d"
                         % (begin_step, end_step))
    target = check_real(target_sparsity, "target_sparsity", low=0.0,
                        high=1.0, high_open=True)
    exponent = check_real(exponent, "exponent", low=0.0, low_open=True)
    span = end_step - begin_step
    if isinstance(step, _compat.TENSOR_TYPES):
        step = tf.cast(check_tensor(step, "step", kind="int"), tf.int32)
        return _ramp(tf.cast(step - begin_step, tf.float32), float(span),
                     target, exponent, tf.minimum, tf.maximum, 1.0, 0.0)
    steps = np.asarray(step)
    if steps.dtype.kind not in "iu":
        raise ValueError("step must be an int, an int array or an int "
                         "tensor, got %r" % (step,))
    f32 = np.float32
    return np.asarray(_ramp((steps.astype(np.int64) - begin_step).astype(f32),
                            f32(span), f32(target), f32(exponent),
                            np.minimum, np.maximum, f32(1.0), f32(0.0)),
                      dtype=f32)


def exact_keep_masks(scores, target_sparsity):
    """The masks of an exact cut: zero the ``round(target_sparsity * n)``
    entries of lowest score among all ``n`` entries of ``scores``, keep
    the others.

    The threshold is the score of rank ``n_zero`` in ascending order
    (``np.partition``); entries at or above it are kept, so the zeros are
    exactly ``round(target_sparsity * n)`` unless entries tie with the
    threshold (then all the tied ones are kept: fewer zeros, never
    more). Magnitude pruning's final cut passes ``|w|``; the sparse
    techniques pass their keep scores (`sparse_layers.techniques`).

    Args:
      scores: a numpy array, or a list / dict of arrays cut together (one
        threshold across all of them: a global cut).
      target_sparsity: the fraction of zeros, in ``[0, 1)``.

    Returns:
      bool arrays (True: kept), in the structure and shapes of ``scores``.

    Raises:
      ValueError: an empty ``scores``, a non-finite score or a target
        outside ``[0, 1)``.
    """
    target = check_real(target_sparsity, "target_sparsity", low=0.0,
                        high=1.0, high_open=True)
    if isinstance(scores, dict):
        keys = sorted(scores)
        masks = exact_keep_masks([scores[k] for k in keys], target)
        return dict(zip(keys, masks))
    arrays = ([np.asarray(scores)] if not isinstance(scores, (list, tuple))
              else [np.asarray(a) for a in scores])
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else \
        np.zeros([0])
    if flat.size == 0:
        raise ValueError("scores must hold at least one entry, got none")
    if not np.all(np.isfinite(flat)):
        raise ValueError("scores must be finite, got %d non-finite entries"
                         % int(np.sum(~np.isfinite(flat))))
    zeros = int(round(target * flat.size))
    if zeros == 0:
        masks = [np.ones(a.shape, bool) for a in arrays]
    else:
        threshold = np.partition(flat, zeros)[zeros] if zeros < flat.size \
            else np.inf
        masks = [a >= threshold for a in arrays]
    return masks if isinstance(scores, (list, tuple)) else masks[0]


def check_block(block, shape, arg_name="block"):
    """``block`` as a pair of positive ints ``(rows, cols)`` for a 2-D
    weight of ``shape`` (None checks the pair only). A block need not
    divide the weight: where it does not, the last block along that
    dimension is partial (ptb-small's 200-wide table in 1 x 16 blocks:
    twelve of 16 columns and one of 8, the blocks a sparse TFLite file
    stores once the input dimension is padded to 208).

    Raises:
      ValueError: not a pair of positive ints, or a weight that is not 2-D
        (naming ``arg_name``).
    """
    if (not isinstance(block, (tuple, list)) or len(block) != 2
            or not all(isinstance(b, numbers.Integral)
                       and not isinstance(b, bool)
                       and b >= 1 for b in block)):
        raise ValueError("%s must be a pair of positive ints (rows, cols), "
                         "got %r" % (arg_name, block))
    block = int(block[0]), int(block[1])
    if shape is not None and block != (1, 1) and len(shape) != 2:
        raise ValueError("%s %dx%d needs a 2-D weight, got shape %s"
                         % (arg_name, block[0], block[1], tuple(shape)))
    return block


def _blocks_along(shape, block):
    """Blocks per dimension, a partial last block counted: ``ceil``."""
    return [-(-int(d) // b) for d, b in zip(shape, block)]


def block_sizes(shape, block):
    """Entries of each ``block`` of a weight of ``shape``: ``[ceil(R /
    rows), ceil(C / cols)]`` ints, ``rows * cols`` but in a partial last
    block (`check_block`)."""
    rows, cols = check_block(block, shape)
    r, c = (int(d) for d in shape)
    n_r, n_c = _blocks_along(shape, (rows, cols))
    in_rows = np.minimum(rows, r - rows * np.arange(n_r))
    in_cols = np.minimum(cols, c - cols * np.arange(n_c))
    return np.outer(in_rows, in_cols)


def block_scores(scores, block):
    """Mean of ``scores`` (a 2-D numpy array) over each ``block``
    (``(rows, cols)``; a partial last block's mean is over its entries):
    ``[ceil(R / rows), ceil(C / cols)]``."""
    rows, cols = check_block(block, np.shape(scores))
    scores = np.asarray(scores)
    if (rows, cols) == (1, 1):
        return scores
    n_r, n_c = _blocks_along(scores.shape, (rows, cols))
    padded = np.zeros([n_r * rows, n_c * cols], np.float64)
    padded[:scores.shape[0], :scores.shape[1]] = scores
    sums = padded.reshape(n_r, rows, n_c, cols).sum(axis=(1, 3))
    return sums / block_sizes(scores.shape, (rows, cols))


def expand_blocks(mask, block, shape=None):
    """A per-block array repeated to the weight's shape (``shape``: cut a
    partial last block's padding off; default the whole blocks')."""
    rows, cols = block
    out = np.repeat(np.repeat(np.asarray(mask), rows, axis=0), cols, axis=1)
    if shape is not None:
        out = out[:int(shape[0]), :int(shape[1])]
    return out


def exact_block_keep_masks(scores, target_sparsity, blocks):
    """The exact cut over whole blocks: each weight's scores averaged per
    block (`block_scores`), and the blocks of lowest mean score zeroed, in
    that order, until at least ``round(target_sparsity * n)`` of the ``n``
    entries are zero (of each array, or of all of a list / dict together:
    ``scores``' structure as in `exact_keep_masks`). Blocks count by their
    entries, so blocks of different sizes cut together reach the target,
    and a matrix's last block may overshoot it by less than a block (never
    short of it). With 1 x 1 blocks this is `exact_keep_masks`.

    Args:
      scores: an array, or a list / dict of arrays.
      target_sparsity: the fraction of zeros, in ``[0, 1)``.
      blocks: ``(rows, cols)`` for every array, or a list / dict of pairs
        in ``scores``' structure; where one does not divide its array, the
        last block along that dimension is partial and counts its entries.

    Returns:
      bool masks in ``scores``' structure and shapes.

    Raises:
      ValueError: as `exact_keep_masks`; ``blocks`` not in ``scores``'
        structure, or not pairs of positive ints (`check_block`).
    """
    if isinstance(scores, dict):
        keys = sorted(scores)
        per = blocks if isinstance(blocks, dict) else {k: blocks
                                                       for k in keys}
        missing = [k for k in keys if k not in per]
        if missing:
            raise ValueError("blocks must have a pair for every array of "
                             "scores; none for %s" % missing)
        masks = exact_block_keep_masks([scores[k] for k in keys],
                                       target_sparsity,
                                       [per[k] for k in keys])
        return dict(zip(keys, masks))
    single = not isinstance(scores, (list, tuple))
    arrays = [scores] if single else list(scores)
    one_pair = len(blocks) == 2 and all(isinstance(b, numbers.Integral)
                                        for b in blocks)
    per = [blocks] * len(arrays) if single or one_pair else list(blocks)
    if len(per) != len(arrays):
        raise ValueError("blocks must be one pair or a pair per array of "
                         "scores (%d), got %d" % (len(arrays), len(per)))
    per = [check_block(tuple(int(d) for d in b) if isinstance(
        b, (tuple, list)) else b, np.shape(a), "blocks")
        for a, b in zip(arrays, per)]
    if all(b == (1, 1) for b in per):
        masks = exact_keep_masks(arrays, target_sparsity)
        return masks[0] if single else masks
    target = check_real(target_sparsity, "target_sparsity", low=0.0,
                        high=1.0, high_open=True)
    pooled = [block_scores(a, b) for a, b in zip(arrays, per)]
    means = np.concatenate([p.reshape(-1) for p in pooled])
    if not np.all(np.isfinite(means)):
        raise ValueError("scores must be finite")
    sizes = np.concatenate([block_sizes(np.shape(a), b).reshape(-1)
                            for a, b in zip(arrays, per)])
    wanted = int(round(target * sizes.sum()))
    # The fewest lowest blocks whose entries reach the wanted zeros (ties
    # in the stable order of the arrays and their blocks).
    order = np.argsort(means, kind="stable")
    count = 0 if wanted == 0 else int(np.searchsorted(
        np.cumsum(sizes[order]), wanted)) + 1
    kept = np.ones(means.size, bool)
    kept[order[:count]] = False
    masks, start = [], 0
    for a, p, b in zip(arrays, pooled, per):
        masks.append(expand_blocks(kept[start:start + p.size].reshape(
            p.shape), b, np.shape(a)))
        start += p.size
    return masks[0] if single else masks


class MagnitudePruning(object):
    """Gradual magnitude pruning of the registered masked weights.

    Args:
      begin_step: first global step at which masks may change (int >= 0).
      end_step: last global step at which masks may change
        (int > ``begin_step``).
      frequency: global steps between two mask updates (int >= 1).
      target_sparsity: final fraction of zeros of every weight, in
        ``[0, 1)``.
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

    Raises:
      ValueError: a bad argument, naming it, what was expected and what
        was given.
    """

    def __init__(self, begin_step, end_step, frequency, target_sparsity,
                 nbins=DEFAULT_NBINS, sparsity_begin_step=None,
                 sparsity_end_step=None, exponent=3, name="model_pruning",
                 block_shape=None):
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
        _compat.require_graph_mode("MagnitudePruning")
        with tf.variable_scope(name, reuse=tf.AUTO_REUSE):
            #: int32 variable: the global step of the last mask update.
            self.last_update_step = tf.get_variable(
                "last_mask_update_step", [], dtype=tf.int32,
                initializer=tf.zeros_initializer(), trainable=False)

    def sparsity_at(self, step):
        """The schedule's target sparsity at ``step``: a float32 tensor for
        an int tensor, a numpy float32 array for ints (see
        :func:`gradual_sparsity`)."""
        return gradual_sparsity(step, self.sparsity_begin_step,
                                self.sparsity_end_step, self.target_sparsity,
                                self.exponent)

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
        return self._update(step, self.sparsity_at(step))

    def conditional_mask_update_op(self, global_step=None):
        """:meth:`mask_update_op` on the schedule's update steps
        (:meth:`is_update_step`), a ``no_op`` on the others: run it once per
        training step, after the step (see the module docstring).

        Args, Raises: as :meth:`mask_update_op`.
        """
        step = self._read_step(global_step)
        sparsity = self.sparsity_at(step)
        triples = self._pruned_weights()  # errors now, not inside the cond
        with tf.name_scope(self.name):
            due = self._is_update_step(step)
        return tf.cond(due, lambda: self._update(step, sparsity, triples),
                       tf.no_op)

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

    def _update(self, step, sparsity, triples=None):
        triples = self._pruned_weights() if triples is None else triples
        with tf.name_scope(self.name):
            assigns = []
            for weight, mask, threshold in triples:
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
        name = (weight.name if isinstance(weight, _compat.PartitionedVariable)
                else weight.op.name)
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


def _pooled(magnitude, block):
    """Mean magnitude per block (the weight itself for 1 x 1; a partial
    last block's mean over its entries, as `block_scores`)."""
    if block == (1, 1):
        return magnitude
    rows, cols = block
    shape = magnitude.shape.as_list()
    n_r, n_c = _blocks_along(shape, block)
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
