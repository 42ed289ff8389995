"""The dense low-rank part of a `fused_lstm` file's tied table (its
``low_rank``, `awd_lm` ``table_rank``): the table is ``table + low @
proj^T``; the lookup adds ``low[ids] @ proj^T`` to the table's rows, the
decoder ``(x @ proj) @ low^T`` to its logits, dense fully-connected ops
(hybrid with int8 weights).
"""
import numpy as np

from tf1_awd_sparse.export import sparse_format
from tf1_awd_sparse.export import tflite_builder as tfl

__all__ = ["PARTS", "checked", "weights", "lookup", "logits"]


#: Where the part goes: the lookup and the decoder, or the lookup alone.
PARTS = ("both", "lookup")


def checked(low_rank, table_shape):
    """``fused_lm``'s ``low_rank`` as ``(low, proj, part)``, float32 arrays
    and one of `PARTS` (``"both"`` when not given), or None; raises
    ValueError naming what does not fit the table."""
    if low_rank is None:
        return None
    part = "both"
    if isinstance(low_rank, tuple) and len(low_rank) == 3:
        low_rank, part = low_rank[:2], low_rank[2]
    if part not in PARTS:
        raise ValueError("low_rank's third item must be one of %s, got %r"
                         % (", ".join(PARTS), part))
    try:
        low, proj = (np.asarray(item, np.float32) for item in low_rank)
    except (TypeError, ValueError):
        raise ValueError("low_rank must be None or a pair (low [vocab, r], "
                         "proj [emb, r]), got %r" % (type(low_rank),))
    vocab, emb = table_shape
    if low.ndim != 2 or proj.ndim != 2 or low.shape[0] != vocab or \
            proj.shape[0] != emb or low.shape[1] != proj.shape[1] or \
            not low.shape[1]:
        raise ValueError("low_rank must be (low [vocab, r], proj [emb, r]) "
                         "with vocab, emb = %d, %d and r > 0, got shapes %s "
                         "and %s" % (vocab, emb, low.shape, proj.shape))
    return low, proj, part


def weights(build, low_rank, dtype, sparse):
    """The low-rank part's constants: ``low`` ``[vocab, r]`` (the lookup's
    rows and the decoder's second product's weights), ``proj`` ``[width,
    r]`` (the lookup's projection, padded to the table's width) and, for
    the decoder's first product, its transpose ``[r, width]`` (part
    ``"both"``; else None). Returns ``(low, proj, proj^T, r)``: tensor
    indices and the rank."""
    low, proj, part = low_rank
    width = tfl.padded(proj.shape[0], sparse)
    proj = np.pad(proj, [[0, width - proj.shape[0]], [0, 0]])
    return (build.weight("table_low", low, dtype),
            build.weight("table_proj", proj, dtype),
            build.weight("table_proj_t", np.ascontiguousarray(proj.T), dtype)
            if part == "both" else None, low.shape[1])


def lookup(build, x, ids, parts, batch_size):
    """The table's rows ``x`` ``[batch, width]`` plus ``low[ids] @
    proj^T``."""
    low_t, proj_t, _, rank = parts
    width = build.graph.tensors[x].shape[-1]
    low = build.graph.tensors[low_t]
    scale = low.quantization.scale[0] if low.quantization else None
    rows = build.tensor("table_low/rows", [batch_size, 1, rank], low.type,
                        scale=scale)
    options = build.schema.GatherOptionsT()
    options.axis = 0
    build.op(sparse_format.GATHER, [low_t, ids], [rows],
             build.schema.BuiltinOptions.GatherOptions, options)
    if low.type == sparse_format.INT8:
        dequantized = build.tensor("table_low/dequantized",
                                   [batch_size, 1, rank],
                                   sparse_format.FLOAT32)
        build.op(sparse_format.DEQUANTIZE, [rows], [dequantized],
                 build.schema.BuiltinOptions.DequantizeOptions,
                 build.schema.DequantizeOptionsT())
        rows = dequantized
    rows = tfl.reshape(build, rows, [batch_size, rank], "table_low/flat")
    projected = tfl.product(build, rows, proj_t, [batch_size, width],
                         "table_low/projected")
    return tfl.add(build, x, projected, [batch_size, width], "embedding/sum")


def logits(build, x, logits, parts, batch_size):
    """The decoder's ``logits`` ``[batch, vocab]`` plus ``(x @ proj) @
    low^T``."""
    low_t, _, proj_t_t, rank = parts
    vocab = build.graph.tensors[low_t].shape[0]
    coded = tfl.product(build, x, proj_t_t, [batch_size, rank],
                     "decoder/low_rank/coded")
    extra = tfl.product(build, coded, low_t, [batch_size, vocab],
                     "decoder/low_rank/logits")
    return tfl.add(build, logits, extra, [batch_size, vocab], "decoder/sum")
