"""The compression pipeline's numpy work on checkpoints
(`awd_lm.training.compression`): the weights a model uses in evaluation, the
exact cut of a technique's ramp to its target and the pruned model, each
read from one checkpoint and written as another.
"""
import hashlib

import numpy as np
from tf1_awd_sparse.base.checkpoints import check_checkpoint

from tf1_awd_sparse.ops.sparse import common as sparse_common
from tf1_awd_sparse.export import strip as sparse_strip
from tf1_awd_sparse.transforms import techniques as sparse_techniques
from tf1_awd_sparse import transforms
from tf1_awd_sparse.transforms import magnitude_pruning
from tf1_awd_sparse.awd_lm.graph import compression_ops, model, ntasgd

__all__ = ["CUT_SCOPES", "LOW_RANK_NAMES", "weight_names", "mask_name", "threshold_name",
           "read_values", "model_values", "effective", "effective_weights",
           "prune_checkpoint", "dense_survivors", "cut_checkpoint",
           "nonzero", "made_from"]

#: Checkpoint names of the table's dense rank-r part
#: (`tables.table_low_rank`).
LOW_RANK_NAMES = ("lm/table_low", "lm/table_proj")

#: Scopes of the exact cut: each weight matrix, or all of them at once.
CUT_SCOPES = ("matrix", "global")


def weight_names(params):
    """Checkpoint names of the weight matrices compression counts: the
    embedding and each cell's kernel."""
    return ["lm/embedding"] + [
        "lm/layer_%d/lstm_%d/kernel" % (i, i)
        for i in range(len(model.layer_sizes(params)))]


def mask_name(weight):
    """The checkpoint name of a weight matrix's pruning mask."""
    return transforms.pruning_variable_names(weight)[0]


def threshold_name(weight):
    """The checkpoint name of a weight matrix's pruning threshold."""
    return transforms.pruning_variable_names(weight)[1]


def read_values(checkpoint):
    """{name: array} of every variable of a checkpoint.

    Raises:
      CheckpointError: it cannot be read."""
    reader = check_checkpoint(checkpoint, "checkpoint")
    return {name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()}


def model_values(checkpoint, params):
    """{name: array} of a checkpoint, sparse pairs as evaluation weights
    (their auxiliary variables dropped)."""
    if params.sparse.sparsity:
        return sparse_strip.strip_values_of_checkpoint(checkpoint)
    return read_values(checkpoint)


def effective(values, params):
    """{name: array} of the weight matrices of `weight_names` in
    ``values``, each times its pruning mask where ``values`` holds one."""
    result = {}
    for name in weight_names(params):
        weight = values[name]
        mask = values.get(mask_name(name))
        result[name] = weight if mask is None else weight * mask
    return result


def effective_weights(checkpoint, params):
    """{name: array} of the weight matrices as the model uses them in
    evaluation: sparse techniques' evaluation weights (stripped), or the
    weights times their pruning masks; with ``table_rank`` also the
    table's dense rank-r part (`LOW_RANK_NAMES`), ``table_low`` as
    ``[vocab, r]`` (with ``table_rank_rows``, zeros past its rows: counted
    as the files count it, which store the part's rows as a vocabulary's
    rows)."""
    values = model_values(checkpoint, params)
    result = effective(values, params)
    # The table's dense rank-r part (`tables.table_low_rank`) is weights
    # of the model too: counted, never pruned.
    if int(params.prune.table_rank) and params.prune.pruning:
        result.update((name, values[name]) for name in LOW_RANK_NAMES)
        low = result[LOW_RANK_NAMES[0]]
        result[LOW_RANK_NAMES[0]] = np.pad(
            low, [[0, int(params.model.vocab_size) - low.shape[0]], [0, 0]],
            "constant")
    return result


def _with_fixed_masks(out, weights):
    """``out`` with each of ``weights`` and its fixed pruning mask
    ``weight != 0`` (with a zero threshold)."""
    for name, weight in weights.items():
        out[name] = weight
        out[mask_name(name)] = (weight != 0).astype(np.float32)
        out[threshold_name(name)] = np.zeros([], np.float32)
    return out


def prune_checkpoint(checkpoint, params, output_prefix):
    """Writes the model of ``checkpoint`` (a fine-tuning run) as plain
    dense weights with fixed pruning masks: each weight matrix's evaluation
    weights (see `effective_weights`) and a mask ``weights != 0`` (with a
    zero threshold), the other model variables unchanged, no optimizer
    state (NT-ASGD's slots of an averaged run are not the model).

    Returns:
      the prefix written.
    """
    values = model_values(checkpoint, params)
    out = {name: value for name, value in values.items()
           if name.startswith("lm/") and not ntasgd.is_slot_name(name)}
    weights = {name: weight.astype(np.float32)
               for name, weight in effective(values, params).items()}
    return sparse_strip.write_checkpoint(_with_fixed_masks(out, weights),
                                         output_prefix)


def dense_survivors(values, params, target, scope):
    """{name: array} of the weight matrices after the exact cut (see
    `cut_checkpoint`) from a checkpoint's raw ``values``."""
    names = weight_names(params)
    if params.sparse.sparsity:
        tech = sparse_techniques.get(params.sparse.sparsity)
        pairs = {n: (values[n], values[tech.aux_variable_name(n)])
                 for n in names}
        scores = {n: tech.keep_score(theta, aux, sparse_common.NUMPY_MATH)
                  for n, (theta, aux) in pairs.items()}
        # Survivors keep their evaluation weights (theta where those are 0).
        kept = {}
        for n, (theta, aux) in pairs.items():
            evaluation = tech.numpy_eval_weights(theta, aux)
            kept[n] = np.where(evaluation != 0, evaluation, theta)
    else:
        kept = effective(values, params)
        scores = {n: np.abs(w) for n, w in kept.items()}
    k = int(params.prune.pruning_block)
    blocks = {n: compression_ops.pruning_block(n, kept[n].shape, k)
              for n in names}
    if scope == "global":
        masks = magnitude_pruning.exact_block_keep_masks(scores, target,
                                                         blocks)
    else:
        targets = compression_ops.matrix_targets(params.replace(
            target_sparsity=target), {n: kept[n].size for n in names})
        masks = {n: magnitude_pruning.exact_block_keep_masks(
            scores[n], targets[n], blocks[n]) for n in names}
    return {n: (kept[n] * masks[n]).astype(np.float32) for n in names}


def cut_checkpoint(checkpoint, params, target, output_prefix,
                   scope="matrix"):
    """The exact final cut of a technique's first phase: writes the model
    of ``checkpoint`` as dense weights with fixed pruning masks holding
    exactly ``round(target * n)`` zeros (up to ties, `magnitude_pruning.
    exact_keep_masks`) of each weight matrix (``scope='matrix'``; with
    ``params.prune.table_sparsity``, each matrix's own target,
    `compression_ops.matrix_targets`) or of all of them together
    (``'global'``, one threshold); with
    ``params.prune.pruning_block`` k > 1, whole 1 x k blocks along each
    matrix's input dimension (`compression_ops.pruning_block`), ranked by
    their mean score.

    What is cut: magnitude pruning, the smallest ``|w * mask|``; variational
    dropout, the largest log alpha; L0, the gates of lowest probability
    of being non-zero (`sparse_layers.techniques` ``keep_score``). The
    survivors keep their evaluation weights (theta where those are zero,
    so that the cut, not the technique's own zero rule, sets the count).

    Args:
      checkpoint: a first-phase checkpoint (`finetune_params`).
      params: that run's parameters.
      target: the fraction of zeros, in ``[0, 1)``.
      output_prefix: the checkpoint prefix to write.
      scope: 'matrix' or 'global'.

    Returns:
      the prefix written.

    Raises:
      ValueError: a bad scope or target.
    """
    if scope not in CUT_SCOPES:
        raise ValueError("scope must be one of %s, got %r"
                         % (", ".join(CUT_SCOPES), scope))
    values = read_values(checkpoint)
    out = {name: value for name, value in
           model_values(checkpoint, params).items()
           if name.startswith("lm/")}
    return sparse_strip.write_checkpoint(_with_fixed_masks(
        out, dense_survivors(values, params, target, scope)), output_prefix)


def nonzero(weights):
    """(non-zero entries, entries) of a {name: array} of weights."""
    count = sum(int(np.count_nonzero(w)) for w in weights.values())
    return count, sum(int(w.size) for w in weights.values())


def made_from(technique, checkpoint):
    """What a derived file was made from: the technique and a digest of the
    source checkpoint's index (it holds every tensor's checksum), so a
    resume redoes a stage whose source changed (e.g. a longer QAT run)."""
    with open(checkpoint + ".index", "rb") as handle:
        digest = hashlib.sha1(handle.read()).hexdigest()[:16]
    return "%s:%s" % (technique, digest)
