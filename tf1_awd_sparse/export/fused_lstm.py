"""A language model written as a TFLite file with one builtin ``LSTM`` op
per layer (TFLite's single-step fused LSTM kernel), straight from its
weights: no converter, which emits no fused LSTM op for TF1 graph code.

The file streams one token per call, batch ``batch_size``: the lookup of
the tied table, per layer one ``LSTM`` op whose state lives in the
interpreter (TFLite variable tensors ``state_<l>_h`` / ``state_<l>_c``,
kept from call to call: `reset_all_variables` starts over, ``set_tensor``
sets them), and the decoder (a ``FULLY_CONNECTED`` op reading the same
table). Three weight formats:

- ``"float"``: float32 weights, the float LSTM kernel;
- ``"int8"``: symmetric per-tensor int8 weights, float activations (the
  hybrid kernels), dense;
- ``"int8-sparse"``: the same, stored in 1 x 16 blocks that the hybrid
  kernels read sparse (they skip the zero blocks): the LSTM op's
  sparse path and the fully-connected op's.

The sparse LSTM kernel of TFLite (``lstm.cc`` / ``lstm_eval.cc``, checked
on TF 2.15 and LiteRT 2.3) has two defects this layout works around
(docs/sparse_tflite.md shows both):

1. it scales the recurrent product by the *input's* quantization scale
   instead of the state's, so a sparse recurrent matrix gives wrong
   values from the second step on. Here the recurrent weights are folded
   into the input weights: the op's input is ``concat(x, h_prev)`` (h_prev
   read from the op's own state tensor) and its recurrent matrices are
   all-zero blocks, so every product uses the scale of its own vector;
2. it dereferences the projection weights without checking they exist, so
   a sparse op without projection crashes the process. Here each op has
   an identity projection (int8, one 1 x 16 block per row).

The sparse layout works in whole 16-wide blocks, so each layer's units
are padded to a multiple of 16 with units of zero weights and bias (they
stay 0: ``c = c / 2`` from 0, ``h = tanh(0) / 2``), and the table to the
same width; the padded state is sliced off the outputs.
"""
import collections
import json

import numpy as np

from tf1_awd_sparse.export import fused_low_rank, sparse_format
from tf1_awd_sparse.export import tflite_builder as tfl
from tf1_awd_sparse.export.tflite_schema import (
    GATE_BIASES, GATE_INPUT_WEIGHTS, GATE_RECURRENT_WEIGHTS, PEEPHOLES,
    LSTMInput, Op, TensorType, symmetric_int8)

__all__ = ["LSTMLayer", "FORMATS", "STATE_WIDTHS", "fused_lm",
           "state_names", "is_fused", "read_weights", "read_low_rank"]

#: The weight formats of `fused_lm`.
FORMATS = ("float", "int8", "int8-sparse")

#: One LSTM layer as TF's ``LSTMCell`` holds it: ``kernel``
#: ``[input + out, 4 * units]`` (gates i, j, f, o; ``out`` is ``units``,
#: or ``num_proj`` with a projection), ``bias`` ``[4 * units]``, the
#: ``forget_bias`` added to the f gate; optional: ``peepholes``, the
#: triple ``(w_i_diag, w_f_diag, w_o_diag)`` of ``[units]`` vectors
#: (``use_peepholes``), ``projection``, the ``projection/kernel``
#: ``[units, num_proj]``, and ``proj_clip``.
LSTMLayer = collections.namedtuple(
    "LSTMLayer", ["kernel", "bias", "forget_bias", "peepholes",
                  "projection", "proj_clip"], defaults=(None, None, None))
#: The metadata entry naming each state variable's width without the
#: padding to whole blocks (JSON {name: width}); `runner.TFLiteRunner`
#: reads it.
STATE_WIDTHS = "tf1_awd_sparse.state_widths"

# The files' description: how `is_fused` knows them.
_DESCRIPTION = "tf1_awd_sparse fused LSTM language model"
# TF LSTMCell's kernel columns are gates i, j, f, o; the LSTM op takes
# input, forget, cell (j) and output gates in that order.
_GATE_COLUMNS = (0, 2, 1, 3)
_FORGET = 1   # position of the forget gate in the op's order


def state_names(layer):
    """``(h name, c name)`` of layer ``layer``'s state variable tensors."""
    return "state_%d_h" % layer, "state_%d_c" % layer


def fused_lm(table, layers, decoder_bias, weights="int8-sparse",
             batch_size=1, cell_clip=None, low_rank=None):
    """The bytes of a ``.tflite`` language model with one builtin ``LSTM``
    op per layer (the module docstring says how it is laid out).

    Inputs: ``inputs``, int32 ``[batch_size, 1]`` word ids. Outputs:
    ``logits`` ``[batch_size, 1, vocab]``, ``hidden`` ``[batch_size, 1,
    emb]`` (the top layer's output), and per layer ``final_<l>_h``
    ``[batch_size, out]``, all float32. The state is kept in the
    variable tensors named by `state_names` (widths padded to a multiple
    of 16 in the sparse format, the padding 0; the metadata entry
    `STATE_WIDTHS` gives each state's own width); the cell state is read
    from its variable (`runner.TFLiteRunner` returns it as
    ``final_<l>_c``): an op reading the variable has no edge from the
    LSTM op, which writes it in place, so a delegate (XNNPACK) may run
    that op first.

    Args:
      table: float ``[vocab, emb]``: the embedding, tied to the decoder.
      layers: a list of `LSTMLayer` (numpy values, float): layer ``l``'s
        kernel ``[input_l + out_l, 4 * units_l]`` with ``input_0 = emb``
        and ``input_l = out_(l-1)``, ``out`` being the units or the
        projection's width; the top layer's ``out`` is ``emb``.
      decoder_bias: float ``[vocab]`` or None (zeros).
      weights: one of `FORMATS`.
      batch_size: the fixed batch.
      cell_clip: the cells' ``cell_clip`` (None or positive): the op clips
        the cell state to it, as ``LSTMCell`` does.
      low_rank: None, or ``(low [vocab, r], proj [emb, r])``: the tied
        table is ``table + low @ proj^T`` (`awd_lm` ``table_rank``),
        written as its two parts: the lookup adds ``low[ids] @ proj^T``
        to the table's rows, the decoder ``(x @ proj) @ low^T`` to its
        logits (dense fully-connected ops; int8 in the int8 formats; the
        int8-sparse file as one more block on each row of its decoder,
        `fused_low_rank.combined`).

    Returns:
      the file's bytes.

    Raises:
      ValueError: a bad argument (named), shapes that do not chain, or,
        in the int8-sparse format, a stored matrix past the sparse
        kernels' byte-wide ledger (`sparse_format.check_ledger`: more than
        4,096 columns, or a row of more than 255 non-zero blocks of 16;
        the kernels computed wrong values without an error).
      sparse_format.SparseStorageError: TF 1.x (no flatbuffer schema).
    """
    schema, flatbuffers = sparse_format.schema_modules()
    table, layers, decoder_bias = _checked(table, layers, decoder_bias,
                                           weights, batch_size, cell_clip)
    low_rank = fused_low_rank.checked(low_rank, table.shape)
    sparse = weights == "int8-sparse"
    dtype = TensorType.FLOAT32 if weights == "float" else TensorType.INT8
    build = tfl.Builder(schema, _DESCRIPTION)
    ids = build.tensor("inputs", [batch_size, 1], TensorType.INT32)
    build.graph.inputs = [ids]
    x, decode = _table(build, table, low_rank, ids, dtype, sparse,
                       batch_size)
    outputs, widths = [], {}
    for index, layer in enumerate(layers):
        x, state, width = _lstm_layer(build, index, x, layer, dtype, sparse,
                                      batch_size, cell_clip)
        outputs += state
        widths.update(width)
    build.metadata(STATE_WIDTHS, json.dumps(widths, sort_keys=True))
    vocab, emb = table.shape
    logits = tfl.reshape(build, decode(x, decoder_bias), [batch_size, 1,
                                                          vocab], "logits")
    hidden = tfl.sliced(build, x, [batch_size, emb], "hidden/slice")
    hidden = tfl.reshape(build, hidden, [batch_size, 1, emb], "hidden")
    build.graph.outputs = [logits, hidden] + outputs
    return build.finish(flatbuffers)


def _table(build, table, low_rank, ids, dtype, sparse, batch_size):
    """The tied table's constants: ``(the lookup's rows of ids [batch,
    width], decode(x, bias))``, ``decode`` writing the decoder's logits
    ``[batch, vocab]``; with ``low_rank`` its part as `fused_low_rank`
    lays it out (one more block a row of the sparse decoder, else second
    products)."""
    if low_rank is not None and sparse:
        width = tfl.padded(table.shape[1], sparse)
        stacked, proj, proj_t = fused_low_rank.combined(table, low_rank,
                                                        width)
        table_t, rows = _lookup(build, stacked, ids, dtype, sparse,
                                batch_size)
        x = fused_low_rank.combined_lookup(
            build, rows, build.weight("table_proj", proj, dtype), width,
            low_rank[0].shape[1], batch_size)
        proj_t = build.weight("table_proj_t", proj_t, dtype)
        return x, lambda x, bias: _fully_connected(
            build, fused_low_rank.combined_input(build, x, proj_t,
                                                 batch_size),
            table_t, bias, batch_size)
    table_t, x = _lookup(build, table, ids, dtype, sparse, batch_size)
    if low_rank is None:
        return x, lambda x, bias: _fully_connected(build, x, table_t, bias,
                                                   batch_size)
    parts = fused_low_rank.weights(build, low_rank, dtype, sparse)
    x = fused_low_rank.lookup(build, x, ids, parts, batch_size)
    return x, lambda x, bias: fused_low_rank.logits(
        build, x, _fully_connected(build, x, table_t, bias, batch_size),
        parts, batch_size)


def _checked(table, layers, decoder_bias, weights, batch_size, cell_clip):
    """The arguments of `fused_lm` as float32 arrays, checked."""
    if weights not in FORMATS:
        raise ValueError("weights must be one of %s, got %r"
                         % (", ".join(FORMATS), weights))
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError("batch_size must be a positive int, got %r"
                         % (batch_size,))
    if cell_clip is not None and not cell_clip > 0:
        raise ValueError("cell_clip must be None or positive, got %r"
                         % (cell_clip,))
    table = np.asarray(table, np.float32)
    if table.ndim != 2:
        raise ValueError("table must be [vocab, emb], got shape %s"
                         % (table.shape,))
    if not layers:
        raise ValueError("layers must hold at least one LSTMLayer")
    checked, width = [], table.shape[1]
    for index, layer in enumerate(layers):
        layer = _checked_layer(index, layer, width, weights)
        checked.append(layer)
        width = _widths(layer)[1]
    if width != table.shape[1]:
        raise ValueError("the top layer has %d units, the tied table %d "
                         "columns: they must be equal" % (width,
                                                          table.shape[1]))
    if decoder_bias is None:
        decoder_bias = np.zeros(table.shape[0], np.float32)
    decoder_bias = np.asarray(decoder_bias, np.float32)
    if decoder_bias.shape != (table.shape[0],):
        raise ValueError("decoder_bias must be [vocab] = [%d], got %s"
                         % (table.shape[0], decoder_bias.shape))
    return table, checked, decoder_bias


def _checked_layer(index, layer, width, weights):
    """``layers[index]`` as float32 arrays, checked against the input
    ``width``."""
    kernel = np.asarray(layer.kernel, np.float32)
    units = kernel.shape[-1] // 4 if kernel.ndim == 2 else 0
    projection = None if layer.projection is None else np.asarray(
        layer.projection, np.float32)
    if projection is not None and (projection.ndim != 2 or
                                   projection.shape[0] != units):
        raise ValueError("layers[%d]: projection must be [units, num_proj] "
                         "= [%d, num_proj], got shape %s"
                         % (index, units, projection.shape))
    out = units if projection is None else projection.shape[1]
    if kernel.shape != (width + out, 4 * units) or units == 0 or \
            np.shape(layer.bias) != (4 * units,):
        raise ValueError(
            "layers[%d]: kernel %s and bias %s do not make an LSTM layer "
            "of input width %d ([input + out, 4 units], [4 units]; out: "
            "the units or num_proj)"
            % (index, kernel.shape, np.shape(layer.bias), width))
    peepholes = layer.peepholes
    if peepholes is not None:
        peepholes = tuple(np.asarray(v, np.float32) for v in peepholes)
        if len(peepholes) != 3 or any(v.shape != (units,)
                                      for v in peepholes):
            raise ValueError("layers[%d]: peepholes must be three [%d] "
                             "vectors (w_i_diag, w_f_diag, w_o_diag)"
                             % (index, units))
    if layer.proj_clip is not None and not layer.proj_clip > 0:
        raise ValueError("layers[%d]: proj_clip must be None or positive, "
                         "got %r" % (index, layer.proj_clip))
    checked = LSTMLayer(kernel, np.asarray(layer.bias, np.float32),
                        float(layer.forget_bias), peepholes, projection,
                        layer.proj_clip)
    if weights == "int8-sparse":
        # The matrices the sparse kernel reads, as `_lstm_layer` stores
        # them (int8 codes: a block kept is one with a non-zero code).
        what = "layers[%d]" % index
        for w_x, w_h, _ in _gates(checked, width, True):
            sparse_format.check_ledger(symmetric_int8(_folded(w_x, w_h))[0],
                                       what)
        if projection is not None:
            sparse_format.check_ledger(symmetric_int8(projection.T)[0], what)
    return checked


def _lookup(build, table, ids, dtype, sparse, batch_size):
    """The table (padded to whole blocks when ``sparse``) and the rows of
    ``ids`` from it, as float ``[batch, width]``. Returns ``(table
    tensor, rows tensor)``."""
    vocab, emb = table.shape
    width = tfl.padded(emb, sparse)
    padded = np.pad(table, [[0, 0], [0, width - emb]])
    if sparse:   # the decoder's fully-connected kernel reads it sparse
        # (with low_rank: the table and its part's one more block a row)
        sparse_format.check_ledger(symmetric_int8(padded)[0], "table")
    stored = build.weight("embedding", padded, dtype, sparse)
    source = stored
    quantization = build.graph.tensors[stored].quantization
    scale = quantization.scale[0] if quantization is not None else None
    if sparse:
        source = build.tensor("embedding/densified", [vocab, width], dtype,
                              scale=scale)
        build.op(Op.DENSIFY, [stored], [source],
                 build.schema.BuiltinOptions.DensifyOptions,
                 build.schema.DensifyOptionsT())
    return stored, tfl.gathered(build, source, ids, "embedding",
                                batch_size)


def _fully_connected(build, x, weights, bias, batch_size):
    """The decoder: ``x @ weights^T + bias``, float ``[batch, vocab]``."""
    vocab = len(bias)
    bias_t = build.tensor("decoder/bias", [vocab], TensorType.FLOAT32, bias)
    logits = build.tensor("decoder/logits", [batch_size, vocab],
                          TensorType.FLOAT32)
    options = build.schema.FullyConnectedOptionsT()
    options.asymmetricQuantizeInputs = False
    build.op(Op.FULLY_CONNECTED, [x, weights, bias_t], [logits],
             build.schema.BuiltinOptions.FullyConnectedOptions, options)
    return logits


def _gates(layer, width, sparse):
    """Per gate (the op's order): ``(input weights [units_p, width],
    recurrent weights [units_p, out_p], bias [units_p])``, the units (and
    the output, ``num_proj`` or the units) padded to whole blocks when
    ``sparse`` with zero rows (columns), the input to ``width`` with zero
    columns."""
    kernel, bias = layer.kernel, layer.bias
    units, out = _widths(layer)
    inputs = kernel.shape[0] - out
    padded, out_p = tfl.padded(units, sparse), tfl.padded(out, sparse)
    gates = []
    for position, column in enumerate(_GATE_COLUMNS):
        part = kernel[:, column * units:(column + 1) * units].T
        w_x = np.zeros([padded, width], np.float32)
        w_x[:units, :inputs] = part[:, :inputs]
        w_h = np.zeros([padded, out_p], np.float32)
        w_h[:units, :out] = part[:, inputs:]
        b = np.zeros([padded], np.float32)
        b[:units] = bias[column * units:(column + 1) * units]
        if position == _FORGET:
            b[:units] += layer.forget_bias
        gates.append((w_x, w_h, b))
    return gates


def _folded(w_x, w_h):
    """A gate's sparse input weights: ``[w_x | w_h | zeros]``, zero
    columns to whole blocks (the folded op's input, defect 1)."""
    fill = -(w_x.shape[1] + w_h.shape[1]) % tfl.BLOCK
    return np.concatenate([w_x, w_h, np.zeros([w_x.shape[0], fill],
                                              np.float32)], 1)


def _widths(layer):
    """``(units, out)``: the cell's units and its output's width."""
    units = layer.kernel.shape[1] // 4
    out = units if layer.projection is None else layer.projection.shape[1]
    return units, out


def _lstm_layer(build, index, x, layer, dtype, sparse, batch_size,
                cell_clip):
    """Layer ``index``'s ``LSTM`` op on float ``x`` ``[batch, width]``.
    Returns ``(output [batch, out_p], [final_h], {state: width})``."""
    units, out = _widths(layer)
    width = layer.kernel.shape[0] - out
    padded, out_p = tfl.padded(units, sparse), tfl.padded(out, sparse)
    name = "lstm_%d" % index
    h_name, c_name = state_names(index)
    h_var = build.tensor(h_name, [batch_size, out_p], TensorType.FLOAT32,
                         variable=True)
    c_var = build.tensor(c_name, [batch_size, padded], TensorType.FLOAT32,
                         variable=True)
    inputs = [-1] * len(LSTMInput)
    inputs[LSTMInput.INPUT] = x
    inputs[LSTMInput.OUTPUT_STATE] = h_var
    inputs[LSTMInput.CELL_STATE] = c_var
    # Folded (defect 1): [x | h_prev | zeros], in the kernel's row order,
    # so that its 1 x 16 blocks stay whole.
    fill = -(width + out_p) % tfl.BLOCK if sparse else 0
    for position, (w_x, w_h, bias) in enumerate(_gates(layer, width,
                                                       sparse)):
        gate = "%s/gate_%d" % (name, position)
        if sparse:
            w_x, w_h = _folded(w_x, w_h), np.zeros_like(w_h)
        inputs[GATE_INPUT_WEIGHTS[position]] = build.weight(
            gate + "/input_weights", w_x, dtype, sparse)
        inputs[GATE_RECURRENT_WEIGHTS[position]] = build.weight(
            gate + "/recurrent_weights", w_h, dtype, sparse)
        inputs[GATE_BIASES[position]] = build.tensor(
            gate + "/bias", [padded], TensorType.FLOAT32, bias)
    if sparse:
        inputs[LSTMInput.INPUT] = _folded_input(build, name, x, width, h_var,
                                                fill)
    _peepholes_and_projection(build, name, inputs, layer, dtype, sparse)
    output = build.tensor(name + "/output", [batch_size, out_p],
                          TensorType.FLOAT32)
    options = build.schema.LSTMOptionsT()
    options.fusedActivationFunction = \
        build.schema.ActivationFunctionType.TANH
    options.cellClip = float(cell_clip or 0.0)
    options.projClip = float(layer.proj_clip or 0.0)
    options.kernelType = build.schema.LSTMKernelType.FULL
    options.asymmetricQuantizeInputs = False   # the sparse path has no zp
    build.op(Op.LSTM, inputs, [output],
             build.schema.BuiltinOptions.LSTMOptions, options)
    # No final c output: a SLICE of the cell state has no edge from the
    # LSTM op (which writes the variable in place), and XNNPACK ran it in
    # a partition before the op: the last call's state (measured, TF
    # 2.15). `TFLiteRunner` reads the variable itself.
    final_h = tfl.sliced(build, output, [batch_size, out],
                      "final_%d_h" % index, copy=True)
    return output, [final_h], {h_name: out, c_name: units}


def _peepholes_and_projection(build, name, inputs, layer, dtype, sparse):
    """Sets the op's peephole inputs (`PEEPHOLES`: ``[units_p]``, int8 in
    the hybrid formats) and its projection (``PROJECTION_WEIGHTS``:
    ``[out_p, units_p]``, stored as the gates are): the layer's, or with
    ``sparse`` and none, the identity, since the sparse kernel needs one
    (defect 2)."""
    units, out = _widths(layer)
    padded, out_p = tfl.padded(units, sparse), tfl.padded(out, sparse)
    if layer.peepholes is not None:
        for position, (slot, vector) in enumerate(zip(PEEPHOLES,
                                                      layer.peepholes)):
            value = np.zeros([padded], np.float32)
            value[:units] = vector
            inputs[slot] = build.weight(
                "%s/peephole_%d" % (name, position), value, dtype)
    if layer.projection is not None:
        value = np.zeros([out_p, padded], np.float32)
        value[:out, :units] = np.asarray(layer.projection).T
        inputs[LSTMInput.PROJECTION_WEIGHTS] = build.weight(
            name + "/projection", value, dtype, sparse)
    elif sparse:   # the identity: 127 at scale 1 / 127
        inputs[LSTMInput.PROJECTION_WEIGHTS] = build.weight(
            name + "/identity_projection", np.eye(padded, dtype=np.float32),
            dtype, True)


def _folded_input(build, name, x, width, h_var, fill):
    """``concat(x[:, :width], h_prev, zeros [batch, fill])``: the folded
    op's input (h_prev read from the op's state variable, still the last
    call's when the concatenation runs)."""
    batch_size = build.graph.tensors[x].shape[0]
    parts = [tfl.sliced(build, x, [batch_size, width], name + "/input"), h_var]
    if fill:
        parts.append(build.tensor(name + "/fill", [batch_size, fill],
                                  TensorType.FLOAT32,
                                  np.zeros([batch_size, fill], np.float32)))
    return tfl.concatenated(build, parts, name + "/input_and_state")


def read_low_rank(data):
    """The low-rank part of a `fused_lm` file's table (``low_rank``):
    ``(low [vocab, r], proj [emb, r])`` float32 (int8 codes times their
    scale), or None when it has none.

    Raises:
      ValueError: ``data`` is not a file of `fused_lm`."""
    model, graph, tensors = _parsed(data)
    if "table_proj" not in tensors:
        return None
    emb = [int(graph.tensors[i].shape[-1]) for i in graph.outputs
           if graph.tensors[i].name == b"hidden"][0]
    proj = _constant(model, tensors["table_proj"])
    if "table_low" in tensors:
        low = _constant(model, tensors["table_low"])
    else:   # the sparse layout's: [table | low] (`fused_low_rank.combined`)
        width = proj.shape[0]
        low = _constant(model, tensors["embedding"])[
            :, width:width + proj.shape[1]]
    return low, proj[:emb]


def _parsed(data):
    """``(model, its subgraph, {name: tensor})`` of a `fused_lm` file's
    bytes (the schema's object API); ValueError for any other file."""
    schema, _ = sparse_format.schema_modules()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    if model.description != _DESCRIPTION.encode():
        raise ValueError("not a file of fused_lm (description %r)"
                         % (model.description,))
    graph = model.subgraphs[0]
    return model, graph, {t.name.decode(): t for t in graph.tensors}


def _constant(model, tensor):
    """A constant tensor of ``model`` as dense float32 (int8 codes times
    their scale; a sparse one's zeros filled in)."""
    stored = bytes(bytearray(model.buffers[tensor.buffer].data))
    dtype = np.int8 if tensor.type == TensorType.INT8 else np.float32
    stored = np.frombuffer(stored, dtype)
    if tensor.sparsity is not None:
        stored = sparse_format.dense_values(tensor.sparsity, stored,
                                            tensor.shape)
    scale = tensor.quantization.scale[0] if tensor.quantization and \
        tensor.quantization.scale else 1.0
    return stored.reshape(tensor.shape).astype(np.float32) * scale


def is_fused(data):
    """Whether the model ``data`` (bytes) was written by `fused_lm` (its
    description says so)."""
    schema, _ = sparse_format.schema_modules()
    model = schema.Model.GetRootAsModel(data, 0)
    return model.Description() == _DESCRIPTION.encode()


def read_weights(data):
    """The weights of a `fused_lm` file, back in ``LSTMCell``'s layout:
    ``(table [vocab, emb], [kernel [input + out, 4 units]])``, float32,
    int8 codes times their scale (a zero stays exactly zero), the padding
    cut off. The inverse of the weight layout `fused_lm` writes.

    Raises:
      ValueError: ``data`` is not a file of `fused_lm`.
    """
    model, graph, tensors = _parsed(data)
    widths = {t.name.decode(): int(t.shape[-1]) for t in
              (graph.tensors[i] for i in graph.outputs)}
    emb = widths["hidden"]

    def value(name):
        return _constant(model, tensors[name])
    states = json.loads(bytes(bytearray(model.buffers[[
        m for m in model.metadata if m.name.decode() == STATE_WIDTHS][
            0].buffer].data)).decode("utf-8"))
    kernels, width, layer = [], emb, 0
    while "final_%d_h" % layer in widths:
        h_name, c_name = state_names(layer)
        units, out = states[c_name], states[h_name]
        kernel = np.zeros([width + out, 4 * units], np.float32)
        for position, column in enumerate(_GATE_COLUMNS):
            gate = "lstm_%d/gate_%d/" % (layer, position)
            w_x = value(gate + "input_weights")
            folded = tensors[gate + "input_weights"].sparsity is not None
            w_h = w_x[:, width:] if folded else value(
                gate + "recurrent_weights")
            part = slice(column * units, (column + 1) * units)
            kernel[:width, part] = w_x[:units, :width].T
            kernel[width:, part] = w_h[:units, :out].T
        kernels.append(kernel)
        width, layer = out, layer + 1
    return value("embedding")[:, :emb], kernels
