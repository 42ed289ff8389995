"""The exact cuts of numpy arrays that magnitude pruning's final cut and
the sparse techniques make (`exact_keep_masks`: the lowest scores zeroed
to exactly the target; `exact_block_keep_masks`: the same over whole
blocks), and the block helpers that `magnitude_pruning.MagnitudePruning`'s
graph op shares with them (`check_block`, `blocks_along`, `block_sizes`,
`block_scores`, `expand_blocks`). Numpy only."""
from __future__ import absolute_import, division, print_function

import numbers

import numpy as np

from tf1_awd_sparse.base.scalar_checks import check_real

__all__ = ["exact_keep_masks", "check_block", "blocks_along", "block_sizes",
           "block_scores", "expand_blocks", "exact_block_keep_masks"]


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


def blocks_along(shape, block):
    """Blocks per dimension of a weight of ``shape`` in ``block`` (a
    ``(rows, cols)`` pair), a partial last block counted: a list of
    ``ceil(d / b)`` ints."""
    return [-(-int(d) // b) for d, b in zip(shape, block)]


def block_sizes(shape, block):
    """Entries of each ``block`` of a weight of ``shape``: ``[ceil(R /
    rows), ceil(C / cols)]`` ints, ``rows * cols`` but in a partial last
    block (`check_block`)."""
    rows, cols = check_block(block, shape)
    r, c = (int(d) for d in shape)
    n_r, n_c = blocks_along(shape, (rows, cols))
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
    n_r, n_c = blocks_along(scores.shape, (rows, cols))
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
