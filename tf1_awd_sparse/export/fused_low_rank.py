"""The dense low-rank part of a `fused_lstm` file's tied table (its
``low_rank``, `awd_lm` ``table_rank``): the table is ``table + low @
proj^T``; the lookup adds ``low[ids] @ proj^T`` to the table's rows. The
float and dense int8 files add ``(x @ proj) @ low^T`` to the decoder's
logits, a second product (`weights`, `lookup`, `logits`); the int8-sparse
file gives the part to its one sparse decoder product as one more 1 x 16
block on each row (`combined`, `combined_lookup`, `combined_input`):
TFLite's sparse kernel then pays a block a row, about half the second
product's cost (``benchmarks/bench_sparse_rows.py``).
"""
import numpy as np

from tf1_awd_sparse.export import tflite_builder as tfl

__all__ = ["checked", "weights", "lookup", "logits", "combined",
           "combined_lookup", "combined_input"]


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


def weights(build, low_rank, dtype, sparse):
    """The low-rank part's constants: ``low`` ``[vocab, r]`` (the lookup's
    rows and the decoder's second product's weights), ``proj`` ``[width,
    r]`` (the lookup's projection, padded to the table's width) and its
    transpose ``[r, width]`` (the decoder's first product). Returns
    ``(low, proj, proj^T, r)``: tensor indices and the rank."""
    low, proj = low_rank
    width = tfl.padded(proj.shape[0], sparse)
    proj = np.pad(proj, [[0, width - proj.shape[0]], [0, 0]])
    return (build.weight("table_low", low, dtype),
            build.weight("table_proj", proj, dtype),
            build.weight("table_proj_t", np.ascontiguousarray(proj.T), dtype),
            low.shape[1])


def lookup(build, x, ids, parts, batch_size):
    """The table's rows ``x`` ``[batch, width]`` plus ``low[ids] @
    proj^T``."""
    low_t, proj_t, _, _ = parts
    return _projected_sum(build, x, tfl.gathered(
        build, low_t, ids, "table_low", batch_size), proj_t)


def _projected_sum(build, x, low_rows, proj):
    """``x + low_rows @ proj^T`` ``[batch, width]``: a row's part added to
    its own (``proj`` the ``[width, r]`` weight tensor)."""
    shape = list(build.graph.tensors[x].shape)
    projected = tfl.product(build, low_rows, proj, shape,
                            "table_low/projected")
    return tfl.add(build, x, projected, shape, "embedding/sum")


def combined(table, low_rank, width):
    """The sparse file's one decoder table: ``[table |
    a low]`` ``[vocab, width + r_pad]`` (the table padded to ``width``,
    ``a low`` to whole blocks: one dense 1 x 16 block a row, which the
    decoder's sparse product reads on the row it reads anyway, so the part
    costs it a block, not a second product over every row), with ``proj /
    a`` ``[width, r]`` (the lookup's projection) and its transpose padded
    ``[r_pad, width]`` (the decoder's ``x @ proj / a``, concatenated to
    ``x``); ``a = max|table| / max|low|`` puts both halves on one int8
    grid without changing ``low @ proj^T``.

    Returns:
      ``(combined table, proj [width, r], proj^T [r_pad, width])``,
      float32."""
    low, proj = low_rank
    rank = low.shape[1]
    peak = float(np.max(np.abs(low)))
    scale = float(np.max(np.abs(table))) / peak if peak and np.any(table) \
        else 1.0
    r_pad = tfl.padded(rank, True)
    stacked = np.concatenate([
        np.pad(table, [[0, 0], [0, width - table.shape[1]]]),
        np.pad(low * scale, [[0, 0], [0, r_pad - rank]])], 1)
    proj = np.pad(proj / scale, [[0, width - proj.shape[0]], [0, 0]])
    return (stacked.astype(np.float32), proj.astype(np.float32),
            np.pad(proj.T, [[0, r_pad - rank], [0, 0]]).astype(np.float32))


def combined_lookup(build, rows, proj, width, rank, batch_size):
    """The lookup of the combined table: its rows ``rows`` ``[batch,
    width + r_pad]`` to ``rows[:, :width] + rows[:, width:width + r] @
    proj^T`` ``[batch, width]`` (``proj`` the tensor of `combined`'s
    ``[width, r]``)."""
    own = tfl.sliced(build, rows, [batch_size, width], "embedding/own",
                     begin=[0, 0])
    low = tfl.sliced(build, rows, [batch_size, rank], "table_low/rows",
                     begin=[0, width])
    return _projected_sum(build, own, low, proj)


def combined_input(build, x, proj_t, batch_size):
    """The decoder's input for the combined table: ``[x | x @ proj_t^T]``
    ``[batch, width + r_pad]``."""
    r_pad = build.graph.tensors[proj_t].shape[0]
    coded = tfl.product(build, x, proj_t, [batch_size, r_pad],
                        "decoder/low_rank/coded")
    return tfl.concatenated(build, [x, coded], "decoder/input")


def logits(build, x, decoded, parts, batch_size):
    """The decoder's logits ``decoded`` ``[batch, vocab]`` plus ``(x @
    proj) @ low^T``."""
    low_t, _, proj_t_t, rank = parts
    vocab = build.graph.tensors[low_t].shape[0]
    coded = tfl.product(build, x, proj_t_t, [batch_size, rank],
                     "decoder/low_rank/coded")
    extra = tfl.product(build, coded, low_t, [batch_size, vocab],
                     "decoder/low_rank/logits")
    return tfl.add(build, decoded, extra, [batch_size, vocab], "decoder/sum")
