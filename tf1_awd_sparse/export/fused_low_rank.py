"""The dense low-rank part of a `fused_lstm` file's decoder table (its
``low_rank``, `awd_lm` ``table_rank``): the decoder reads ``table + low @
proj^T``, the lookup the table alone. The float and dense int8 files add
a second product, ``(x @ proj) @ low^T``, to the logits; the int8-sparse
file gives the part to its one sparse decoder product as one more 1 x 16
block on each row (`combined`): TFLite's sparse kernel then pays a block
a row, not a second pass over every row (``benchmarks/bench_sparse_rows``).
"""
import json

import numpy as np

from tf1_awd_sparse.export import sparse_format
from tf1_awd_sparse.export import tflite_builder as tfl

__all__ = ["RANK", "checked", "combined", "combined_rows", "decoder_input",
           "separate_logits", "read"]

#: The metadata entry holding the part's rank (JSON int).
RANK = "tf1_awd_sparse.table_rank"


def checked(low_rank, table_shape):
    """``fused_lm``'s ``low_rank`` as float32 arrays ``(low, proj)``, or
    None; raises ValueError naming what does not fit the table."""
    if low_rank is None:
        return None
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
    return low, proj


def combined(table, low_rank, width):
    """The int8-sparse file's one decoder table ``[table | a low]``
    ``[vocab, width + r_pad]`` (the table padded to ``width``, ``a low``
    to whole blocks) and ``(proj / a)^T`` padded ``[r_pad, width]`` (the
    decoder's ``x @ proj / a``, concatenated to ``x``); ``a = max|table| /
    max|low|`` puts both halves on one int8 grid without changing ``low @
    proj^T``. Returns both, float32."""
    low, proj = low_rank
    rank = low.shape[1]
    peak = float(np.max(np.abs(low)))
    scale = float(np.max(np.abs(table))) / peak if peak and np.any(table) \
        else 1.0
    r_pad = tfl.padded(rank, True)
    stacked = np.concatenate([
        np.pad(table, [[0, 0], [0, width - table.shape[1]]]),
        np.pad(low * scale, [[0, 0], [0, r_pad - rank]])], 1)
    proj = np.pad(proj / scale, [[0, width - proj.shape[0]],
                                 [0, r_pad - rank]])
    return stacked.astype(np.float32), np.ascontiguousarray(
        proj.T).astype(np.float32)


def combined_rows(build, rows, width, batch_size):
    """The lookup's rows of the combined table, ``[batch, width + r_pad]``,
    without the part: ``[batch, width]``."""
    return tfl.sliced(build, rows, [batch_size, width], "embedding/own",
                      begin=[0, 0])


def decoder_input(build, x, proj_t, batch_size):
    """The decoder's input for the combined table: ``[x | x @ proj_t^T]``
    ``[batch, width + r_pad]``."""
    width = build.graph.tensors[x].shape[-1]
    r_pad = build.graph.tensors[proj_t].shape[0]
    coded = tfl.product(build, x, proj_t, [batch_size, r_pad],
                        "decoder/low_rank/coded")
    return tfl.concatenated(build, x, coded, [batch_size, width + r_pad],
                            "decoder/input")


def separate_logits(build, x, logits, low_rank, dtype, batch_size):
    """The float and dense int8 files' decoder: ``logits`` ``[batch,
    vocab]`` plus ``(x @ proj) @ low^T`` (``table_low`` ``[vocab, r]``,
    ``table_proj_t`` ``[r, width]``)."""
    low, proj = low_rank
    rank, width = low.shape[1], build.graph.tensors[x].shape[-1]
    proj_t = np.pad(proj, [[0, width - proj.shape[0]], [0, 0]]).T
    coded = tfl.product(build, x, build.weight(
        "table_proj_t", np.ascontiguousarray(proj_t), dtype),
        [batch_size, rank], "decoder/low_rank/coded")
    low_t = build.weight("table_low", low, dtype)
    extra = tfl.product(build, coded, low_t, [batch_size, low.shape[0]],
                        "decoder/low_rank/logits")
    return tfl.add(build, logits, extra, [batch_size, low.shape[0]],
                   "decoder/sum")


def read(tensors, value, metadata, emb):
    """The part of a file (``tensors`` by name, ``value(name)`` a dense
    float32 constant, ``metadata`` by name, ``emb`` the table's width):
    ``(low [vocab, r], proj [emb, r])``, a sparse file's as it stores them
    (``a low``, ``proj / a``: the same product), or None."""
    if RANK not in metadata:
        return None
    rank = int(json.loads(metadata[RANK]))
    proj = value("table_proj_t")[:rank].T
    if "table_low" in tensors:
        low = value("table_low")
    else:   # the sparse layout: [table | a low]
        width = proj.shape[0]
        low = value("embedding")[:, width:width + rank]
    return low, proj[:emb]
