"""The language model's tied table: the embedding variable, its pruning
mask, the dense low-rank part (``table_rank``) and its quantization, as the
lookup and the decoder read them (`awd_lm.graph.model` builds the rest).
Call inside the ``lm`` variable scope.
"""
from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.base.control_flow import smart_cond
from tf1_awd_sparse.ops import fake_quant as fq
from tf1_awd_sparse import transforms

__all__ = ["embedding_table", "table_low_rank", "low_rank_rows",
           "maybe_quantized"]


def embedding_table(params, training):
    """The embedding variable and the table the model uses for the lookup
    and the tied decoder: the variable itself, or with
    ``params.prune.pruning`` the variable times its pruning mask
    (``lm/embedding_pruning_mask``, a ``transforms.PruningMask``) plus,
    with ``params.prune.table_rank`` r > 0, the dense rank-r product of
    `table_low_rank` (``lm/table_low``, ``lm/table_proj``), and with
    ``params.quantization.quant`` that table fake-quantized as a weight
    (last value, narrow range; what the 8-bit TFLite model stores). Call
    inside the ``lm`` variable scope.

    Args:
      params: the model's parameters (`config.params.Params`).
      training: Python bool or scalar bool tensor.

    Returns:
      ``(embedding variable, table tensor or the variable)``.
    """
    init = tf.random_uniform_initializer(-0.1, 0.1)
    embedding = tf.get_variable(
        "embedding", [params.model.vocab_size, params.model.emb_size],
        initializer=init)
    table = embedding
    if params.prune.pruning:
        prune = transforms.PruningMask()
        # "embedding_pruning_mask": transforms.pruning_variable_names' rule
        # for a weight outside layers.
        prune.build(lambda name, **kwargs: tf.get_variable(
            "embedding_" + name, **kwargs), embedding.shape.as_list(), 0,
            training)
        with tf.name_scope("embedding_pruning"):
            table = prune.apply(embedding, training, embedding)
        low_rank = table_low_rank(params)
        if low_rank:
            with tf.name_scope("table_low_rank"):
                table = table + tf.matmul(low_rank[0], low_rank[1],
                                          transpose_b=True)
    if params.quantization.quant:
        bits = params.quantization.weight_bits
        with tf.name_scope("embedding_quant"):
            table = maybe_quantized(
                params, training,
                lambda t=table: fq.quantize_weight(t, bits), table)
    return embedding, table


def table_low_rank(params):
    """The dense rank-r part of a pruned table (``params.prune.table_rank``
    r > 0 with ``params.prune.pruning``): ``(low [vocab, r], table_proj
    [emb, r])``, float32, whose product ``low @ proj^T`` `embedding_table`
    adds to the pruned table, so that every word keeps r numbers of its
    own however many of its row's entries are pruned. ``low`` is the
    variable ``table_low`` ``[rows, r]`` of the vocabulary's first ``rows
    = params.prune.table_rank_rows`` words (0, or the vocabulary or more:
    every word; the corpus's ids are sorted by training frequency), then
    zeros for the other words' rows; it starts at zero (the table starts
    as the pruned one) and ``proj`` uniform in ±0.1. Empty tuple when r is
    0 or nothing is pruned. Call inside the ``lm`` variable scope (the
    variables are made, or reused under ``reuse``)."""
    rank = int(params.prune.table_rank)
    if not rank or not params.prune.pruning:
        return ()
    vocab = params.model.vocab_size
    rows = low_rank_rows(params)
    low = tf.get_variable("table_low", [rows, rank],
                          initializer=tf.zeros_initializer())
    proj = tf.get_variable("table_proj", [params.model.emb_size, rank],
                           initializer=tf.random_uniform_initializer(
                               -0.1, 0.1))
    if rows < vocab:
        # The other words' rows are no weights: a zero block is not stored
        # and the fused file's sparse decoder does not read its row.
        low = tf.concat([low, tf.zeros([vocab - rows, rank])], 0,
                        name="table_low_padded")
    return low, proj


def low_rank_rows(params):
    """The rows of the table's dense low-rank part (`table_low_rank`):
    ``table_rank_rows``, or the vocabulary when that is 0 or more."""
    rows = int(params.prune.table_rank_rows)
    vocab = int(params.model.vocab_size)
    return vocab if not rows or rows >= vocab else rows


def maybe_quantized(params, training, quantized, plain):
    """``quantized()`` once quantization is active (after ``quant_delay``
    global steps in training), else ``plain``, as the cells decide."""
    active = fq.quantization_active(
        int(params.quantization.quant_delay), training)
    if active is True:
        return quantized()
    return smart_cond(active, quantized, lambda: tf.identity(plain))
