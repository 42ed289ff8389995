"""The language model's compression ops: what pruning, the sparse
techniques and quantization add to its graph beside the forward pass.

`sparsity_weight_scale` is the sparsity controller's factor on the KL / L0
loss, `magnitude_pruning_op` the gradual magnitude pruning's mask update
(in ``pruning_block`` blocks), `group_lasso_loss` the group lasso on
those blocks, `needs_global_step` says whether a model's
schedules count global steps, and `sparsity_report` /
`quant_range_variables` give the training loop's summaries their tensors.
(`graph.model` re-exports every name.)
"""
import collections

import numpy as np

from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.layers.sparse import report as sparse_report
from tf1_awd_sparse.transforms import magnitude_pruning
from tf1_awd_sparse import transforms

__all__ = ["CONTROLLER_SCOPE", "sparsity_weight_scale", "needs_global_step",
           "magnitude_pruning_op", "group_lasso_loss", "pruning_block",
           "matrix_targets",
           "is_table", "sparsity_report",
           "quant_range_variables"]


#: Variable scope of the sparsity controller's weight scale.
CONTROLLER_SCOPE = "sparsity_controller"


def sparsity_weight_scale():
    """The float32 scalar variable ``sparsity_controller/weight_scale``
    (initially 1, not trained) that multiplies the KL / L0 loss when
    ``params.stage.sparsity_controller`` is set; the trainer raises it
    between epochs (`sparse_layers.losses.controlled_weight_scale`)."""
    with tf.variable_scope(CONTROLLER_SCOPE, reuse=tf.AUTO_REUSE):
        return tf.get_variable("weight_scale", [], tf.float32,
                               tf.ones_initializer(), trainable=False)


def needs_global_step(params):
    """Whether the model's graph needs a global step: quantization delay,
    the magnitude-pruning schedule and the sparsity-loss ramp count it.

    Args:
      params: the model's `config.params.Params`.
    """
    return bool(params.quantization.quant
                or params.prune.pruning == "magnitude"
                or (params.sparse.sparsity
                    and params.sparse.sparsity_ramp_steps))


def magnitude_pruning_op(params, global_step, train_op):
    """With ``params.prune.pruning == 'magnitude'``: ``train_op`` followed by
    the library's gradual magnitude pruning
    (:class:`tf1_awd_sparse.transforms.magnitude_pruning.MagnitudePruning`,
    which matches ``tf.contrib.model_pruning``'s on TF 1.x) of the
    embedding and the cells' kernels (their ``pruning_mask`` variables), from
    ``pruning_begin_step`` to ``pruning_end_step`` every
    ``pruning_frequency`` steps to ``target_sparsity`` (Zhu & Gupta's cubic
    schedule); else None. Its step counter is the variable
    ``lm_pruning/last_mask_update_step``, the name contrib gave it, so
    checkpoints of either read the same.

    Args:
      params: the model's `config.params.Params`; its ``prune`` section.
      global_step: the step variable the schedule reads.
      train_op: the op the mask update runs after.

    Returns:
      an op, or None.
    """
    prune = params.prune
    if prune.pruning != "magnitude":
        return None
    # nbins: the threshold is a histogram quantile; contrib's default 256
    # bins leave a matrix up to ~1 % short of the target.
    k = int(prune.pruning_block)
    weights = tf.get_collection(magnitude_pruning.PRUNING_COLLECTIONS[3])
    # .name, not .op.name: a partitioned variable has no op.
    names = [w.name.split(":")[0] for w in weights]
    targets = matrix_targets(params, {
        n: int(np.prod(w.get_shape().as_list()))
        for n, w in zip(names, weights)})
    pruning = magnitude_pruning.MagnitudePruning(
        begin_step=prune.pruning_begin_step,
        end_step=prune.pruning_end_step,
        frequency=prune.pruning_frequency,
        target_sparsity=float(prune.target_sparsity),
        nbins=magnitude_pruning.DEFAULT_NBINS, name="lm_pruning",
        weight_sparsity_map=({n: targets[n] for n in names
                              if targets[n] != prune.target_sparsity}
                             or None),
        block_shape=lambda weight: pruning_block(
            weight.name.split(":")[0], weight.get_shape().as_list(), k))
    # Built after the step: the op reads the global step (its sparsity
    # schedule and its update condition); outside this scope that read
    # would race with the step's increment, and the masks would depend on
    # the scheduler (seen on TF 1.15 with contrib's Pruning).
    with tf.control_dependencies([train_op]):
        return pruning.conditional_mask_update_op(global_step)


def group_lasso_loss(params):
    """With ``params.prune.pruning == 'magnitude'`` and ``group_lasso >
    0``: ``group_lasso * sum_b sqrt(|b|) ||w_b||_2`` over the blocks of the
    weights magnitude pruning ranks (the embedding and the cells'
    kernels, the *variables*, as the ranking reads them; in
    `pruning_block`'s 1 x ``pruning_block`` blocks), a float32 scalar
    (`magnitude_pruning.block_group_lasso`); else None. Build it after the
    model's masked weights."""
    prune = params.prune
    if prune.pruning != "magnitude" or not float(prune.group_lasso or 0.0):
        return None
    k = int(prune.pruning_block)
    weights = collections.OrderedDict(
        (w.name, w) for w in tf.get_collection(
            magnitude_pruning.PRUNING_COLLECTIONS[3]))
    blocks = [pruning_block(n.split(":")[0], None, k) for n in weights]
    return float(prune.group_lasso) * magnitude_pruning.block_group_lasso(
        list(weights.values()), blocks)


def pruning_block(name, shape, k):
    """The ``(rows, cols)`` block of a 1 x ``k`` block along the input
    dimension of the fully-connected product that uses weight ``name`` (of
    ``shape``), as TFLite stores it: a cell's kernel ``[input + units, 4 *
    units]`` multiplies from the right (its rows are the input: ``(k,
    1)``); the embedding ``[vocab, emb]`` is the decoder's ``[out, in]``
    (``(1, k)``). Where ``k`` does not divide the input dimension, the last
    block is partial (ptb-small's 200-wide table in 1 x 16 blocks: twelve
    of 16 and one of 8); ``sparse_storage``'s ``"fast"`` layout pads such a
    tensor's input dimension to the next multiple of 16 for the int8 1 x 16
    kernel, so the partial block fills one stored block."""
    del shape   # every k is taken as it is: a last block may be partial
    return (1, k) if is_table(name) else (k, 1)


def is_table(name):
    """Whether the weight ``name`` is the table (the embedding, tied to
    the decoder) rather than a cell's kernel."""
    return "embedding" in name.split("/")[-1]


def matrix_targets(params, sizes):
    """Each weight matrix's final fraction of zeros: every matrix at
    ``target_sparsity``, or with ``table_sparsity`` set (uneven budgets)
    the table at it and every kernel at the one fraction that makes the
    model's zeros ``round(target_sparsity * n)`` of its ``n`` weights (the
    model's target, not each matrix's), rounded up so that exact cuts of
    each matrix (``round(t_i * n_i)`` zeros or more) never fall short of it.

    Args:
      params: the model's parameters (`config.params.Params`).
      sizes: ``{weight name: entries}``.

    Returns:
      ``{weight name: float target}``.

    Raises:
      ValueError: a ``table_sparsity`` that leaves the kernels outside
        ``[0, 1)``, naming it and the range that fits; ``table_sparsity``
        with ``cut_scope`` 'global' (one threshold has no budgets).
    """
    target = float(params.prune.target_sparsity)
    table = params.prune.table_sparsity
    if table is None:
        return {n: target for n in sizes}
    if params.compression.cut_scope != "matrix":
        raise ValueError("table_sparsity (--table-sparsity) needs cut_scope "
                         "'matrix' (one budget per matrix), got %r"
                         % params.compression.cut_scope)
    tables = {n: s for n, s in sizes.items() if is_table(n)}
    kernels = {n: s for n, s in sizes.items() if not is_table(n)}
    total, in_kernels = sum(sizes.values()), sum(kernels.values())
    wanted = int(round(target * total)) - sum(
        int(round(table * s)) for s in tables.values())
    kernel = (wanted + 0.5 * len(kernels)) / max(in_kernels, 1)
    if not (tables and kernels) or not 0.0 <= kernel < 1.0:
        low = (target * total - in_kernels) / max(sum(tables.values()), 1)
        high = target * total / max(sum(tables.values()), 1)
        raise ValueError(
            "table_sparsity (--table-sparsity) %g leaves the kernels %g of "
            "zeros for the model's target %g: give it in [%.4f, %.4f)"
            % (table, kernel, target, max(low, 0.0), min(high, 1.0)))
    return {n: (table if is_table(n) else kernel) for n in sizes}


def sparsity_report(params):
    """Fraction of zeros of the weights the model uses (the embedding and
    the cells' kernels) as tensors, or None for a dense model: the
    ``sparse_layers`` report with sparsity, the pruning masks' zeros with
    pruning.

    Args:
      params: the model's parameters (`config.params.Params`).

    Returns:
      None or {"layers": OrderedDict(name -> scalar), "global": scalar}.
    """
    if params.sparse.sparsity:
        return sparse_report.sparsity_report(summaries=False)
    if not params.prune.pruning:
        return None
    layers, zeros, sizes = collections.OrderedDict(), [], []
    for mask in tf.get_collection(transforms.PRUNING_MASKS):
        zero = tf.reduce_sum(tf.cast(tf.equal(mask, 0.0), tf.float32))
        size = float(mask.shape.num_elements())
        name = transforms.pruned_weight_name(mask.op.name)
        layers[name] = zero / size
        zeros.append(zero)
        sizes.append(size)
    return {"layers": layers, "global": tf.add_n(zeros) / sum(sizes)}


def quant_range_variables():
    """The learned quantization ranges of the graph (the quantized cells'
    and the decoder's logits range), for summaries.

    Returns:
      list of (tag, min variable, max variable), one per quantized tensor,
      tag like 'layer_0/lstm_0/gates' or 'decoder/logits'; empty for a
      float model.
    """
    found, by_name = [], {}
    for variable in mask_placement.quant_variables():
        by_name[variable.op.name] = variable
    for name in sorted(by_name):
        if not name.endswith("/min"):
            continue
        scope, tensor = name[:-len("/min")].rsplit("/quant/", 1)
        high = by_name.get(scope + "/quant/" + tensor + "/max")
        if high is not None:
            tag = "%s/%s" % (scope.split("/", 1)[-1], tensor)
            found.append((tag, by_name[name], high))
    return found
