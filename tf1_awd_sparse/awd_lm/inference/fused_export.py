"""The language model of a checkpoint as a TFLite file with one fused
``LSTM`` op per layer (`export.fused_lstm`), the weights read from the
evaluation graph: what `export.export_lm` writes with ``lstm="fused"``.
"""
import numpy as np
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.graph import checkpoints, model, tables
from tf1_awd_sparse.export import eval_graph, fused_lstm, sparse_format

__all__ = ["LSTM_KINDS", "fused_format", "lm_arrays", "write_fused"]

#: How `export_lm` writes the LSTM layers: ``"unrolled"`` (the converted
#: graph: some forty element-wise ops per layer and step) or ``"fused"``
#: (one builtin LSTM op per layer; one token per call).
LSTM_KINDS = ("unrolled", "fused")


def fused_format(weights, storage, layout, num_steps):
    """The `fused_lstm.FORMATS` name of ``export_lm``'s arguments, checked.

    Raises:
      ValueError: what the fused op cannot write (named): ``num_steps``
        other than 1, uint8 weights, float weights stored sparse, or a
        layout other than ``auto`` / ``fast`` / ``1x16``.
      sparse_format.SparseStorageError: TF 1.x (the file is written with
        TF 2.x's flatbuffer schema module).
    """
    sparse_format.available_or_raise()
    if num_steps != 1:
        raise ValueError("lstm='fused' streams one token per call: "
                         "num_steps must be 1, got %r" % (num_steps,))
    if weights == "uint8":
        raise ValueError(
            "lstm='fused' with uint8 weights: the fused LSTM op has no "
            "uint8 kernel; use weights='int8' (8-bit weights, the hybrid "
            "kernels) or 'float'")
    if storage == "sparse" and weights != "int8":
        raise ValueError(
            "lstm='fused', storage='sparse' needs weights='int8': the float "
            "LSTM kernel reads no sparse weights (the hybrid one reads "
            "int8 1 x 16 blocks)")
    if storage == "sparse" and layout not in ("auto", "fast", "1x16"):
        raise ValueError("lstm='fused' stores sparse weights in 1 x 16 "
                         "blocks only: layout must be 'auto', 'fast' or "
                         "'1x16', got %r" % (layout,))
    if weights == "float":
        return "float"
    return "int8-sparse" if storage == "sparse" else "int8"


def lm_arrays(params, checkpoint):
    """The weights of ``checkpoint``'s model as the evaluation graph
    computes with them (pruning masks, sparse gates and the like applied;
    a quantization-aware model's float weights), for `fused_lstm.fused_lm`.

    Args:
      params: the model's `config.params.Params`, with ``quant`` off.
      checkpoint: the checkpoint prefix.

    Returns:
      ``(table [vocab, emb], [fused_lstm.LSTMLayer], decoder bias
      [vocab], cell_clip, low_rank)``, float32 numpy arrays; ``table`` the
      pruned table, ``low_rank`` None or the pair ``(low [vocab, r], proj
      [emb, r])`` of a model with ``table_rank`` r (`tables.table_low_rank`;
      its table is ``table + low @ proj^T``).

    Raises:
      ValueError: cells with peepholes or a projection (the fused export
        writes neither yet), or cells whose ``cell_clip`` differ.
      checkpoints.CheckpointError (a ValueError): the checkpoint is
        missing, truncated or corrupt, or lacks a variable.
    """
    graph = tf.Graph()
    with graph.as_default():
        with tf.variable_scope("lm"):
            # The pruned table alone; its low-rank part is fetched apart.
            _, table = tables.embedding_table(params.replace(table_rank=0),
                                             training=False)
            low_rank = list(tables.table_low_rank(params))
            cells = [model.make_layer(i, units, False, params).cell
                     for i, units in enumerate(model.layer_sizes(params))]
            eval_graph.build_cells(cells, 1, params.model.emb_size)
            bias, _ = model.decoder_logits(
                tf.zeros([1, params.model.emb_size]), table, params, False)
        _check_cells(cells)
        fetches = [table, bias, low_rank] + [(c.effective_kernel, c.bias)
                                             for c in cells]
        with tf.Session(graph=graph,
                        config=runtime.session_config(1)) as session:
            checkpoints.restore(tf.train.Saver(tf.global_variables()),
                                session, checkpoint)
            values = session.run(fetches)
    layers = [fused_lstm.LSTMLayer(np.asarray(kernel), np.asarray(b),
                                   float(cell.forget_bias))
              for cell, (kernel, b) in zip(cells, values[3:])]
    return (values[0], layers, values[1], _check_cells(cells),
            tuple(values[2]) or None)


def _check_cells(cells):
    """The cells' one ``cell_clip``; raises ValueError for what the fused
    export does not write."""
    configs = [cell.get_config() for cell in cells]
    for index, config in enumerate(configs):
        if config.get("use_peepholes") or config.get("num_proj"):
            raise ValueError(
                "layer %d has %s: the language model's fused export "
                "reads none (export.fused_lm writes them from arrays); "
                "export with lstm='unrolled'" % (index, "peepholes" if
                                                 config.get("use_peepholes")
                                                 else "a projection"))
    clips = {config.get("cell_clip") for config in configs}
    if len(clips) > 1:
        raise ValueError("the layers' cell_clip differ (%s): the fused "
                         "export writes one" % sorted(map(str, clips)))
    return clips.pop()


def write_fused(params, checkpoint, batch_size, fused):
    """The bytes of the fused file of ``checkpoint`` in format ``fused``
    (`fused_format`); the arguments are `export_lm`'s, checked there."""
    table, layers, bias, cell_clip, low_rank = lm_arrays(params, checkpoint)
    return fused_lstm.fused_lm(table, layers, bias, weights=fused,
                               batch_size=batch_size, cell_clip=cell_clip,
                               low_rank=low_rank)
