"""The whole language model written as a TFLite file (running and
scoring one is `lm_runner`'s; the weights a file holds, `tflite_weights`').

:func:`export_lm` rebuilds the model of a checkpoint in evaluation mode
with a fixed batch and window length, unrolled (TOCO in TF 1.13 converts no
while loop), and converts it: the embedding lookup (a Gather of the table),
the LSTM stack and the tied decoder (a FullyConnected layer with the same
table as weights) in one model. A float model comes from a float
checkpoint; a fully 8-bit (``uint8``) model from a quantization-aware one
(``params.quantization.quant``), whose every tensor carries a learned or weight
range: the table, the cells' weights and activations, and the logits.

Inputs: ``inputs`` int32 ``[batch, steps]`` word ids and, per layer, the
carried state ``state_<l>_c`` / ``state_<l>_h``; outputs: ``logits``
``[batch, steps, vocab]``, ``hidden`` ``[batch, steps, emb_size]`` (the
top layer's outputs, the decoder's input: the continuous cache's keys;
files written before it have no such output) and the final states
``final_<l>_c`` / ``final_<l>_h``, so a long stream runs window by window. The
log-softmax is computed outside the model, on the (dequantized) logits: a
uint8 softmax has no resolution below 1/256 for the probability of a
word.
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_positive_int
from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.config.params import takes_params
from tf1_awd_sparse.awd_lm.graph import checkpoints, model, tables
from tf1_awd_sparse.awd_lm.inference import fused_export
from tf1_awd_sparse.export import eval_graph, graphdef, sparse_storage

__all__ = ["export_lm", "WEIGHT_FORMATS", "STORAGES", "check_formats",
           "LOGITS_NAME", "HIDDEN_NAME"]

#: The names of the file's outputs beside the final states: the logits
#: and the top layer's outputs (`lm_runner` reads them by these names).
LOGITS_NAME = "logits"
HIDDEN_NAME = "hidden"


def _unrolled_model(params, batch_size, num_steps, quantized):
    """Builds the evaluation graph; returns (input tensors, output tensors,
    cells). ``params``: the model's `config.params.Params`."""
    ids = tf.placeholder(tf.int32, [batch_size, num_steps],
                         name=eval_graph.INPUT_NAME)
    with tf.variable_scope("lm"):
        _, table = tables.embedding_table(params, training=False)
        x = tf.gather(table, ids)
        layers = [model.make_layer(i, units, False, params)
                  for i, units in enumerate(model.layer_sizes(params))]
        cells = [layer.cell for layer in layers]
        # Build each cell (variables, per-run kernel) in its layer's scope.
        depth = params.model.emb_size
        eval_graph.build_cells(cells, batch_size, depth)
        with tf.name_scope(""):  # top-level input names
            placeholders, state = eval_graph.state_inputs(
                cells, batch_size, quantized)
        outputs, state = eval_graph.unroll(cells, x, state)
        stacked = eval_graph.stack_outputs(outputs, cells[-1], quantized)
        flat = tf.reshape(stacked, [batch_size * num_steps, depth])
        _, logits = model.decoder_logits(flat, table, params, False)
        logits = tf.reshape(logits, [batch_size, num_steps,
                                     params.model.vocab_size])
    logits = tf.identity(logits, name=LOGITS_NAME)
    hidden = tf.identity(stacked, name=HIDDEN_NAME)
    return ([ids] + placeholders,
            [logits, hidden] + eval_graph.final_state_outputs(state), cells)


#: The file formats of `export_lm`: float32, TOCO's fully 8-bit uint8 (of
#: a quantization-aware model) and int8 weights with float activations
#: (TFLite's hybrid kernels; the format its sparse 8-bit kernel takes).
WEIGHT_FORMATS = ("float", "uint8", "int8")
#: How the weights are stored (`sparse_storage.store_sparse`).
STORAGES = ("dense", "sparse")


@takes_params()
def export_lm(params, checkpoint, path, batch_size, num_steps, weights=None,
              storage="dense", layout="auto", lstm="unrolled"):
    """Writes the language model of ``checkpoint`` as a TFLite file.

    Args:
      params: the model's parameters (a `config.params.Params` or a dict,
        `as_params`; as trained: ``pruning`` and the sizes as in the
        checkpoint's model); dropout settings do not matter.
      checkpoint: checkpoint prefix holding the model's variables.
      path: the ``.tflite`` file to write.
      batch_size, num_steps: the model's fixed input shape.
      weights: None (as trained: uint8 for ``params.quantization.quant``, else
        float), or one of `WEIGHT_FORMATS`: ``"int8"`` converts the float
        graph of the model's weights (a quantization-aware model's too)
        and stores every fully-connected weight as symmetric per-tensor
        int8 (`sparse_storage.store_sparse`).
      storage: ``"dense"``, or ``"sparse"`` (TF 2.x): the pruned weights in
        TFLite's sparse format (not with uint8: TFLite runs no sparse
        uint8 weights).
      layout: the sparse layout (`sparse_storage.store_sparse`): ``"auto"``
        (fewest bytes), ``"fast"`` (what TFLite's sparse kernels read: int8
        1 x 16, a table or kernel whose input width 16 does not divide
        padded with zero columns), or one of its fixed layouts.
      lstm: ``"unrolled"`` (the converted graph) or ``"fused"``
        (`fused_export`: one builtin TFLite LSTM op per layer, written
        from the weights; ``num_steps`` 1, float or int8 weights, sparse
        int8 in 1 x 16 blocks; its state lives in the interpreter's
        variable tensors ``state_<l>_c`` / ``state_<l>_h``, which
        `TFLiteRunner` sets each call like a state input).

    Returns:
      the file size in bytes.

    Raises:
      ValueError: bad sizes, params, ``weights``, ``storage``, ``layout``
        or ``lstm`` (named), a combination the fused op cannot write
        (`fused_export.fused_format`);
        uint8 of a float model or float of a quantization-aware one.
      sparse_storage.SparseStorageError: sparse storage or int8 on TF 1.x,
        or sparse uint8.
      checkpoints.CheckpointError (a ValueError): the checkpoint is
        missing, truncated or corrupt, or lacks a variable of the model
        (one line naming it and TensorFlow's cause).
      tf.lite.ConverterError: TOCO rejected the graph.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    num_steps = check_positive_int(num_steps, "num_steps")
    if layout not in sparse_storage.LAYOUTS:
        raise ValueError("layout must be one of %s, got %r"
                         % (", ".join(sparse_storage.LAYOUTS), layout))
    weights = check_formats(weights, storage, params)   # before any work
    if lstm not in fused_export.LSTM_KINDS:
        raise ValueError("lstm must be one of %s, got %r"
                         % (", ".join(fused_export.LSTM_KINDS), lstm))
    fused = fused_export.fused_format(weights, storage, layout, num_steps) \
        if lstm == "fused" else None
    # The evaluation graph's: masks not held in variables, quantization
    # (uint8 only) on from step 0.
    params = model.check_params(params).replace(
        use_vd=False, quant_delay=0, quant=weights == "uint8")
    if fused is not None:
        model_bytes = fused_export.write_fused(params, checkpoint,
                                               batch_size, fused)
    else:
        model_bytes = _converted(params, checkpoint, batch_size, num_steps,
                                 weights == "uint8")
    if fused is None and (weights == "int8" or storage == "sparse"):
        model_bytes, _ = sparse_storage.store_sparse(
            model_bytes, weights="int8" if weights == "int8" else "float",
            layout=layout, min_zeros=0.5 if storage == "sparse" else None)
    with open(path, "wb") as handle:
        handle.write(model_bytes)
    return len(model_bytes)


@takes_params()
def check_formats(weights, storage, params, model_dir=None, lstm="unrolled",
                  layout="auto"):
    """The weight format `export_lm` writes of a model, checked against the
    model and this TensorFlow before any conversion: what `export_lm` and
    the ``awd-lm export`` command refuse.

    Args:
      weights: None (the model's own: uint8 for a quantization-aware
        model, else float) or one of `WEIGHT_FORMATS`.
      storage: one of `STORAGES`.
      params: the model's parameters (`as_params`): whether it is
        quantization-aware (``params.quantization.quant``).
      model_dir: None for a Python call (the errors name the arguments
        ``weights`` and ``storage``), or the model directory the command
        line names (the errors name its flags ``--format`` and
        ``--storage`` and the directory).
      lstm, layout: `export_lm`'s (the fused file's refusals,
        `fused_export.fused_format`, checked too; ``num_steps`` is
        `export_lm`'s to check).

    Returns:
      the weight format, one of `WEIGHT_FORMATS`.

    Raises:
      ValueError: an unknown format or storage, uint8 of a float model or
        float of a quantization-aware one, bad params (`as_params`).
      sparse_storage.SparseStorageError (a ValueError): sparse uint8
        (TFLite has no such kernel), or int8 / sparse storage on a
        TensorFlow that cannot write them (TF 1.x).
    """
    quantized = bool(params.quantization.quant)
    flags = model_dir is not None
    if weights is None:
        weights = "uint8" if quantized else "float"
    if weights not in WEIGHT_FORMATS:
        raise ValueError("weights must be None or one of %s, got %r"
                         % (", ".join(WEIGHT_FORMATS), weights))
    if storage not in STORAGES:
        raise ValueError("storage must be one of %s, got %r"
                         % (", ".join(STORAGES), storage))
    if weights == "uint8" and not quantized:
        raise ValueError(
            "--format uint8 needs a quantization-aware model: %s is float; "
            "`awd-lm train --quant` makes <out>/<model>_quant" % model_dir
            if flags else "weights='uint8' needs a quantization-aware "
            "model (params['quant']); this one is float")
    if weights == "float" and quantized:
        raise ValueError(
            "--format float: %s is quantization-aware (its file is uint8); "
            "give its float model directory" % model_dir if flags else
            "weights='float' of a quantization-aware model: its files are "
            "uint8 or int8")
    if weights == "uint8" and storage == "sparse":
        raise sparse_storage.SparseStorageError(
            "--storage sparse --format uint8: TFLite has no sparse uint8 "
            "kernel; use --format int8 (8-bit weights) or float" if flags
            else "storage='sparse' with uint8 weights: TFLite has no sparse "
            "uint8 kernel (and its DENSIFY op takes no uint8); use "
            "weights='int8' (8-bit weights, stored sparse) or 'float'")
    if weights == "int8" or storage == "sparse":
        _check_sparse_storage(weights, flags)
    if lstm == "fused":
        fused_export.fused_format(weights, storage, layout, 1)
    return weights


def _check_sparse_storage(weights, flags):
    """Raises `sparse_storage.SparseStorageError` where this TensorFlow
    cannot write int8 or sparse files (naming the flag with ``flags``)."""
    if not flags:
        sparse_storage.available_or_raise()
    elif not sparse_storage.available():
        raise sparse_storage.SparseStorageError(
            "--%s: needs TensorFlow 2.x (the TFLite schema module that "
            "writes it, and an interpreter that reads it); TF %s exports "
            "float or uint8, dense" % (
                "format int8" if weights == "int8" else "storage sparse",
                tf.__version__))


def _converted(params, checkpoint, batch_size, num_steps, quantized):
    """The converted model's bytes (TOCO's float or uint8 file)."""
    graph = tf.Graph()
    with graph.as_default():
        inputs, outputs, cells = _unrolled_model(params, batch_size,
                                                 num_steps, quantized)
        saver = tf.train.Saver(tf.global_variables())
        with tf.Session(graph=graph,
                        config=runtime.session_config(1)) as session:
            # A missing or truncated data file: one CheckpointError line.
            checkpoints.restore(saver, session, checkpoint)
            stats = None
            if quantized:
                stats = eval_graph.state_input_stats(cells, session)
                stats[eval_graph.INPUT_NAME] = (0.0, 1.0)  # int32 ids
            return graphdef.convert(session, inputs, outputs, stats)
