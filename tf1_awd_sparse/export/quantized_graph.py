"""A user's own graph, rewritten for evaluation by
``tf1_awd_sparse.quantization.create_eval_graph``, written as a fully 8-bit
(uint8) TFLite file in one call: :func:`export_quantized_graph`.

What the call finds in the graph, so the user does not:

* each output's quantized tensor: the output itself where it is (or
  passes through ``Identity`` / ``Reshape`` ... of) a FakeQuant's output,
  else the one FakeQuant that reads it (a state the rewrite quantized
  after the cell's own tensor, a head quantized after its
  ``tf.identity``); the file's output keeps the name the user's tensor
  has;
* each input's uint8 grid (the converter's ``quantized_input_stats``): a
  state input is on the grid of the state output fed back into it (its
  FakeQuant's range, read in the session); a data input on the grid of the
  FakeQuant that reads it first, directly or through ops that only move
  values (a cell's ``ConcatV2`` of ``[inputs, state]``), so that the file
  quantizes the input once, on the grid the graph rounds it to;
* what the written file left float (:func:`float_ops`, read from the
  file's flatbuffer): every operator with a float tensor among its inputs
  or outputs, named.

The conversion itself is `graphdef.convert`'s (constants folded, weight
FakeQuants kept, one copy per use).
"""
import collections
import logging
import os
import struct
import tempfile

from tf1_awd_sparse.base import checks as _checks
from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.export import graphdef, tflite_file
from tf1_awd_sparse.transforms.graph_quantize.api import REWRITTEN_COLLECTION

__all__ = ["QuantizedGraphError", "FloatOp", "QuantizedFile",
           "export_quantized_graph", "float_ops", "tensor_grids",
           "requantizations", "bypass_requantizations", "merged_grids",
           "LOGGER_NAME"]

#: The logger the export's warnings go to (ops left float, TF 2.15).
LOGGER_NAME = "tf1_awd_sparse.export"

#: An operator of a written file that computes in float: its index in the
#: subgraph, its builtin name (``'FULLY_CONNECTED'``) and the names of its
#: output tensors.
FloatOp = collections.namedtuple("FloatOp", ["index", "op", "outputs"])

#: What :func:`export_quantized_graph` wrote: the file's ``path``, its
#: ``inputs`` and ``outputs`` (dict name -> ``(scale, zero_point)`` of the
#: uint8 grid), ``left_float`` (:func:`float_ops` of the file: empty for a
#: fully uint8 one) and ``warnings`` (the lines it logged).
QuantizedFile = collections.namedtuple(
    "QuantizedFile", ["path", "inputs", "outputs", "left_float", "warnings"])

_FAKE_QUANTS = ("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxArgs")
#: Ops whose output holds only their input's values (moved, not computed):
#: a FakeQuant after them rounds the input on its grid.
_MOVES = ("Identity", "Reshape", "Squeeze", "ExpandDims", "ConcatV2",
          "Concat", "Pack", "Transpose")
#: Schema tensor types that are float.
_FLOAT_TYPES = {0: "float32", 1: "float16", 10: "float64"}


class QuantizedGraphError(ValueError, Error):
    """A graph :func:`export_quantized_graph` cannot write as a uint8 file:
    not rewritten by ``create_eval_graph``, an output without a FakeQuant,
    a data input whose grid the graph does not give (pass
    ``input_ranges``), or a state pair that does not match. The message
    names the argument and the tensor."""


def _quant_range(op, session):
    """``(min, max)`` floats a FakeQuant op quantizes on (read in
    ``session`` for the ``Vars`` op)."""
    if op.type == "FakeQuantWithMinMaxArgs":
        return op.get_attr("min"), op.get_attr("max")
    low, high = session.run([op.inputs[1], op.inputs[2]])
    return float(low), float(high)


def _is_uint8_grid(op):
    return op.get_attr("num_bits") == 8 and not op.get_attr("narrow_range")


def _quantized_source(tensor):
    """The FakeQuant op whose output ``tensor`` is, looked through
    single-input moves (``Identity``, ``Reshape``...), or None."""
    while True:
        if tensor.op.type in _FAKE_QUANTS:
            return tensor.op
        if tensor.op.type not in _MOVES or len(tensor.op.inputs) < 1 \
                or tensor.op.type in ("ConcatV2", "Concat", "Pack"):
            return None
        tensor = tensor.op.inputs[0]


def _quantized_output(tensor, arg_name):
    """(the tensor to convert, its FakeQuant op) of an output."""
    source = _quantized_source(tensor)
    if source is not None:
        return tensor, source
    readers = [op for op in tensor.consumers() if op.type in _FAKE_QUANTS]
    if len(readers) == 1:
        return readers[0].outputs[0], readers[0]
    raise QuantizedGraphError(
        "%s: %r is not quantized: no FakeQuant gives it%s (a uint8 file "
        "needs each output's range; export the eval graph rewritten by "
        "create_eval_graph, the tensor the rewrite quantized)"
        % (arg_name, tensor.name, ", and %d read it" % len(readers)
           if readers else " or reads it"))


def _input_grids(tensor):
    """The FakeQuant ops that round ``tensor``'s values first: its
    readers', looked through the ops of `_MOVES`."""
    found, stack, seen = [], [tensor], set()
    while stack:
        current = stack.pop()
        for op in current.consumers():
            if op in seen:
                continue
            seen.add(op)
            if op.type in _FAKE_QUANTS:
                found.append(op)
            elif op.type in _MOVES:
                stack.extend(op.outputs[:1])
    return sorted(found, key=lambda op: op.name)


def _pairs(states, graph):
    """``[(state input, state output)]`` of ``states`` (dict or pairs)."""
    if states is None:
        return []
    items = states.items() if isinstance(states, dict) else states
    try:
        pairs = [(a, b) for a, b in items]
    except (TypeError, ValueError):
        raise QuantizedGraphError(
            "states must be a dict state input -> state output tensor, or "
            "a list of such pairs, got %r" % (states,))
    for k, (state_in, state_out) in enumerate(pairs):
        for tensor, what in ((state_in, "input"), (state_out, "output")):
            _checks.check_tensor(tensor, "states[%d]'s %s" % (k, what))
            if tensor.graph is not graph:
                raise QuantizedGraphError(
                    "states[%d]'s %s %r is not in the outputs' graph"
                    % (k, what, tensor.name))
        if state_in.op.type != "Placeholder":
            raise QuantizedGraphError(
                "states[%d]'s input %r must be a placeholder (the state "
                "the file is fed), got a %s" % (k, state_in.name,
                                                 state_in.op.type))
        if state_in.shape != state_out.shape:
            raise QuantizedGraphError(
                "states[%d]: the input %r (shape %s) and the output %r "
                "(shape %s) must have one shape: the output is fed back"
                % (k, state_in.name, state_in.shape, state_out.name,
                   state_out.shape))
    return pairs


def _check_graph(outputs):
    if isinstance(outputs, (tf.Tensor, tf.Variable)):
        outputs = [outputs]
    if not isinstance(outputs, (list, tuple)) or not outputs:
        raise QuantizedGraphError(
            "outputs must be a tensor or a non-empty list of tensors, got "
            "%r" % (outputs,))
    outputs = [_checks.check_tensor(t, "outputs[%d]" % k)
               for k, t in enumerate(outputs)]
    graph = outputs[0].graph
    if any(t.graph is not graph for t in outputs):
        raise QuantizedGraphError("outputs must all be tensors of one graph")
    marks = graph.get_collection(REWRITTEN_COLLECTION)
    if "eval" not in marks:
        raise QuantizedGraphError(
            "outputs: their graph was %s: call "
            "tf1_awd_sparse.quantization.create_eval_graph() on the "
            "evaluation graph (built in a graph of its own) before exporting"
            % ("rewritten for training" if marks else "not rewritten for "
               "quantization"))
    return outputs, graph


def _placeholders(outputs):
    """The placeholders the outputs depend on, by name."""
    found, stack, seen = {}, [t.op for t in outputs], set()
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder":
            found[op.name] = op.outputs[0]
        stack.extend(t.op for t in op.inputs)
    return [found[name] for name in sorted(found)]


def _data_input_range(tensor, session, input_ranges):
    """``(min, max)`` of a data input's grid, and the grids' ops found."""
    name = tensor.op.name
    if name in input_ranges:
        low, high = input_ranges[name]
        return _checks.check_interval(low, high, "input_ranges[%r]" % name,
                                      "input_ranges[%r]" % name)
    grids = [op for op in _input_grids(tensor) if _is_uint8_grid(op)]
    if not grids:
        raise QuantizedGraphError(
            "input %r: no 8-bit FakeQuant reads it (directly or through a "
            "concatenation), so the graph gives it no uint8 grid: put "
            "tf.quantization.fake_quant_with_min_max_args on it, or pass "
            "input_ranges={%r: (min, max)}" % (name, name))
    ranges = [_quant_range(op, session) for op in grids]
    # Several grids (a GRU's two concatenations of the input): the widest,
    # which clips none of them; the others requantize from it.
    return max(ranges, key=lambda r: r[1] - r[0])


def _write_atomically(path, model):
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(suffix=".tflite", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(model)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _output_name(tensor):
    return tensor.op.name if tensor.value_index == 0 else "%s_%d" % (
        tensor.op.name, tensor.value_index)


def export_quantized_graph(outputs, path, session=None, checkpoint=None,
                           states=None, inputs=None, input_ranges=None):
    """Writes a graph rewritten by ``create_eval_graph`` as a fully uint8
    TFLite file, from its session or a checkpoint.

    Args:
      outputs: a tensor or a list of tensors of the eval graph (static
        shapes): what the file computes. Each must be quantized (a
        FakeQuant's output, or read by one FakeQuant: see the module's
        note); its name (without ``:0``) is the file's output name.
      path: the ``.tflite`` file to write (written whole or not at all).
      session: a session of the graph holding the trained values; or None
        and ``checkpoint``.
      checkpoint: a checkpoint prefix restored with ``tf.train.Saver()``
        into a new session of the graph (when ``session`` is None).
      states: optional dict state input -> state output (or a list of
        such pairs): a placeholder of a recurrent state and the tensor of
        the next state fed back into it (``(c, new_state.c)``). Each
        output is added to the file's outputs (under its own name); each
        input is on its output's grid.
      inputs: the file's data inputs (float placeholders); default: every
        placeholder the outputs depend on that is not a state input, by
        name.
      input_ranges: optional dict data input name -> ``(min, max)``: the
        grid of an input that no FakeQuant reads (it overrides the graph's
        grid where one does).

    Returns:
      a :data:`QuantizedFile`: the path, each input's and output's uint8
      ``(scale, zero_point)``, the ops left float (:func:`float_ops`) and
      the warnings logged to :data:`LOGGER_NAME` (ops left float; 8-bit
      tensors requantized with two roundings, `requantizations`: TF 2.15).

    Raises:
      QuantizedGraphError: a graph not rewritten by ``create_eval_graph``,
        an output without a FakeQuant, a data input without a grid, a bad
        ``states`` pair (each message names the argument and tensor).
      ValueError: no ``session`` nor ``checkpoint``, or a session of
        another graph.
      tf.lite.ConverterError: the converter rejects the graph.
    """
    outputs, graph = _check_graph(outputs)
    pairs = _pairs(states, graph)
    input_ranges = dict(input_ranges or {})
    if session is None and checkpoint is None:
        raise ValueError("session or checkpoint: give one (the trained "
                         "values of the graph), got neither")
    if session is not None and session.graph is not graph:
        raise ValueError("session must be a session of the outputs' graph")
    state_inputs = [state_in for state_in, _ in pairs]
    if inputs is None:
        inputs = [t for t in _placeholders(
            outputs + [o for _, o in pairs]) if t not in state_inputs]
    inputs = [_checks.check_tensor(t, "inputs[%d]" % k)
              for k, t in enumerate(inputs)]
    if session is None:
        with graph.as_default():
            saver = tf.train.Saver()
        with tf.Session(graph=graph) as owned:
            saver.restore(owned, checkpoint)
            return _export(owned, outputs, path, pairs, inputs,
                           input_ranges)
    return _export(session, outputs, path, pairs, inputs, input_ranges)


def _export(session, outputs, path, pairs, inputs, input_ranges):
    converted, names = [], []
    for k, tensor in enumerate(outputs + [o for _, o in pairs]):
        arg = ("outputs[%d]" % k if k < len(outputs)
               else "states[%d]'s output" % (k - len(outputs)))
        if _output_name(tensor) in names:
            continue    # an LSTM's output is its state's h
        quantized, _ = _quantized_output(tensor, arg)
        converted.append(quantized)
        names.append(_output_name(tensor))
    stats = {}
    for tensor in inputs:
        if tensor.dtype == tf.float32:
            stats[tensor.op.name] = graphdef.input_stats(
                *_data_input_range(tensor, session, input_ranges))
    for k, (state_in, state_out) in enumerate(pairs):
        _, source = _quantized_output(state_out, "states[%d]'s output" % k)
        stats[state_in.op.name] = graphdef.input_stats(
            *_quant_range(source, session))
    model = graphdef.convert(session, inputs + [s for s, _ in pairs],
                             converted, stats, output_names=names)
    # TF 2.15's converter requantizes concatenations' inputs in ops that
    # round twice; the concatenation itself rescales in one rounding.
    model, _ = bypass_requantizations(model)
    _write_atomically(path, model)
    left = float_ops(model)
    warnings = []
    if left:
        shown = ", ".join("%s %s" % (f.op, "/".join(f.outputs))
                          for f in left[:5])
        warnings.append(
            "export_quantized_graph: %s: %d ops left float (%s%s)" % (
                path, len(left), shown, ", ..." if len(left) > 5 else ""))
    twice = requantizations(model)
    if twice:
        warnings.append(
            "export_quantized_graph: %s: %d QUANTIZE ops requantize 8-bit "
            "tensors onto a coarser grid (%s): TFLite's Requantize kernel "
            "rounds twice there, one code off for about 1 value in 8 (the "
            "TF 2.15 converter puts them before each concatenation of "
            "inputs on other grids; docs/quantization.md)" % (
                path, len(twice), ", ".join(twice[:3])
                + (", ..." if len(twice) > 3 else "")))
    merged = merged_grids(model)
    if merged:
        warnings.append(
            "export_quantized_graph: %s: %d products are written on the "
            "grid of the concatenation that reads them (%s): one rounding "
            "where the eval graph rounds twice, so the file can differ from "
            "the graph by several output steps on recurrent states (the TF "
            "2.15 converter; TF 1.x and >= 2.16 keep the product's grid; "
            "docs/quantization.md)" % (path, len(merged), ", ".join(
                merged[:3]) + (", ..." if len(merged) > 3 else "")))
    for line in warnings:
        logging.getLogger(LOGGER_NAME).warning("%s", line)
    grids = tensor_grids(model)
    return QuantizedFile(
        path, {n: grids[n] for n in [t.op.name for t in inputs]
               + [s.op.name for s, _ in pairs]},
        {n: grids[n] for n in names}, left, warnings)


def _operator_name(code):
    return _OPERATOR_NAMES.get(code, "BUILTIN_%d" % code)


#: The schema's names of the builtin operators an 8-bit graph holds
#: (others are named by their code).
_OPERATOR_NAMES = {
    0: "ADD", 2: "CONCATENATION", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D",
    6: "DEQUANTIZE", 7: "EMBEDDING_LOOKUP", 9: "FULLY_CONNECTED",
    14: "LOGISTIC", 16: "LSTM", 17: "MAX_POOL_2D", 18: "MUL", 19: "RELU",
    21: "RELU6", 22: "RESHAPE", 25: "SOFTMAX", 28: "TANH", 32: "CUSTOM",
    34: "PAD", 36: "GATHER", 39: "TRANSPOSE", 41: "SUB", 43: "SQUEEZE",
    44: "UNIDIRECTIONAL_SEQUENCE_LSTM", 45: "STRIDED_SLICE", 49: "SPLIT",
    65: "SLICE", 70: "EXPAND_DIMS", 80: "FAKE_QUANT", 83: "PACK",
    88: "UNPACK", 102: "SPLIT_V", 114: "QUANTIZE", 124: "DENSIFY"}


def _subgraph(buf):
    model = tflite_file.root(buf)
    graph = tflite_file.tables(buf, model, "Model", "subgraphs")[0]
    return model, graph, tflite_file.tables(buf, graph, "SubGraph",
                                            "tensors")


def tensor_grids(model):
    """{tensor name: (scale, zero_point)} of a TFLite file's tensors
    (``(0.0, 0)`` for a tensor without quantization parameters; the
    first channel's of a per-channel one).

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = tflite_file.verify(model)
    _, _, tensors = _subgraph(buf)
    grids = {}
    for tensor in tensors:
        params = tflite_file.subtable(buf, tensor, "Tensor",
                                            "quantization")
        scales = zeros = ()
        if params is not None:
            scales = tflite_file.values(buf, params, "QuantizationParameters",
                                        "scale")
            zeros = tflite_file.values(buf, params, "QuantizationParameters",
                                       "zero_point")
        grids[tflite_file.string(buf, tensor, "Tensor", "name")] = (
            float(scales[0]) if scales else 0.0,
            int(zeros[0]) if zeros else 0)
    return grids


#: The schema's QUANTIZE operator and its 8-bit tensor types.
_QUANTIZE, _EIGHT_BITS = 114, (3, 9)


def requantizations(model):
    """The output names of a file's QUANTIZE ops from an 8-bit tensor to
    an 8-bit tensor whose scale is more than twice the input's, and whose
    output is read (by an operator, or as the file's output).

    TFLite's Requantize kernel multiplies the difference of the codes by
    a fixed-point multiplier and, for a ratio of scales below 1/2, shifts
    right after the multiplication has already rounded: two roundings,
    the output one code off for about one value in eight. (A
    CONCATENATION rescales its inputs itself, in one rounding.)

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = tflite_file.verify(model)
    root, graph, tensors = _subgraph(buf)
    grids = tensor_grids(buf)
    codes = _codes(buf, root)
    operators = tflite_file.tables(buf, graph, "SubGraph", "operators")
    read = set(tflite_file.ints(buf, graph, "SubGraph", "outputs"))
    for op in operators:
        read.update(tflite_file.ints(buf, op, "Operator", "inputs"))
    found = []
    for op in operators:
        if codes[tflite_file.scalar(buf, op, "Operator",
                                    "opcode_index")] != _QUANTIZE:
            continue
        (source,), (target,) = [tflite_file.ints(buf, op, "Operator", name)
                                for name in ("inputs", "outputs")]
        if target not in read:
            continue    # bypassed (`bypass_requantizations`)
        names = [tflite_file.string(buf, tensors[i], "Tensor", "name")
                 for i in (source, target)]
        if all(tflite_file.scalar(buf, tensors[i], "Tensor", "type")
               in _EIGHT_BITS for i in (source, target)) and \
                grids[names[0]][0] < 0.5 * grids[names[1]][0]:
            found.append(names[1])
    return found


#: The schema's CONCATENATION operator and its uint8 tensor type.
_CONCATENATION, _UINT8 = 2, 3


def bypass_requantizations(model):
    """The file with each uint8 -> uint8 QUANTIZE op that only feeds
    CONCATENATION ops bypassed: each concatenation reads the QUANTIZE's
    input instead of its output (the QUANTIZE is left, unread).

    A uint8 CONCATENATION rescales each input from the input's grid to
    its output's in one rounding (TOCO's files, TF 1.x's, rely on it);
    the QUANTIZE ops TF 2.15's converter puts before it round twice
    (`requantizations`). The patch rewrites operator input indices in
    place, so the file keeps its layout. int8 concatenations are left as
    they are: their kernel requires every input on the output's grid.

    Args:
      model: the file's bytes or path.

    Returns:
      ``(bytes, names)``: the patched file and the names of the QUANTIZE
      outputs bypassed (empty, and the bytes unchanged, where none).

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = bytearray(tflite_file.verify(model))
    root, graph, tensors = _subgraph(bytes(buf))
    codes = _codes(buf, root)
    operators = tflite_file.tables(buf, graph, "SubGraph", "operators")
    graph_outputs = set(tflite_file.ints(buf, graph, "SubGraph", "outputs"))

    def code(op):
        return codes[tflite_file.scalar(buf, op, "Operator", "opcode_index")]

    def uint8(index):
        return tflite_file.scalar(buf, tensors[index], "Tensor",
                                  "type") == _UINT8

    readers = collections.defaultdict(list)
    for op in operators:
        for slot, index in enumerate(
                tflite_file.ints(buf, op, "Operator", "inputs")):
            readers[index].append((op, slot))
    bypassed = []
    for op in operators:
        if code(op) != _QUANTIZE:
            continue
        (source,), (target,) = [tflite_file.ints(buf, op, "Operator", name)
                                for name in ("inputs", "outputs")]
        reads = readers[target]
        if (target in graph_outputs or not reads or not uint8(source)
                or not uint8(target)
                or any(code(reader) != _CONCATENATION
                       for reader, _ in reads)):
            continue
        for reader, slot in reads:
            start = tflite_file.subtable(buf, reader, "Operator", "inputs")
            struct.pack_into("<i", buf, start + 4 + 4 * slot, source)
        bypassed.append(tflite_file.string(buf, tensors[target], "Tensor",
                                           "name"))
    return bytes(buf), bypassed


def merged_grids(model):
    """The output names of a file's arithmetic ops (not QUANTIZE, not a
    move) read only by CONCATENATION ops and written directly on the
    concatenation's grid.

    An eval graph rounds such a value twice: on its own FakeQuant's grid,
    then on the concatenation's. TF 2.15's converter gives the op the
    concatenation's grid instead (one rounding), so its file can differ
    from the graph by a code there, which a recurrent state amplifies
    (a GRU's ``r * h``: docs/quantization.md). TOCO and TF >= 2.16 keep
    the op's own grid, and the concatenation rescales.

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = tflite_file.verify(model)
    root, graph, tensors = _subgraph(buf)
    codes = _codes(buf, root)
    grids = tensor_grids(buf)
    operators = tflite_file.tables(buf, graph, "SubGraph", "operators")
    readers = collections.defaultdict(list)
    for op in operators:
        for index in tflite_file.ints(buf, op, "Operator", "inputs"):
            readers[index].append(op)
    outputs = set(tflite_file.ints(buf, graph, "SubGraph", "outputs"))

    def code(op):
        return codes[tflite_file.scalar(buf, op, "Operator", "opcode_index")]

    def name(index):
        return tflite_file.string(buf, tensors[index], "Tensor", "name")

    found = []
    for op in operators:
        if code(op) not in _ARITHMETIC:
            continue
        for index in tflite_file.ints(buf, op, "Operator", "outputs"):
            reads = readers[index]
            if index in outputs or not reads or any(
                    code(r) != _CONCATENATION for r in reads):
                continue
            if all(grids[name(index)] == grids[name(
                    tflite_file.ints(buf, r, "Operator", "outputs")[0])]
                   for r in reads):
                found.append(name(index))
    return found


#: The schema's ADD, MUL and SUB: ops that compute a value on a grid of
#: their own (a move, a concatenation or a QUANTIZE only re-grids).
_ARITHMETIC = (0, 18, 41)


def _codes(buf, root):
    """The builtin code of each of a file's operator codes."""
    return [max(tflite_file.scalar(buf, c, "OperatorCode",
                                   "deprecated_builtin_code"),
                tflite_file.scalar(buf, c, "OperatorCode", "builtin_code"))
            for c in tflite_file.tables(buf, root, "Model",
                                        "operator_codes")]


def float_ops(model):
    """The operators of a TFLite file that compute in float: each with a
    float32 / float16 / float64 tensor among its inputs or outputs (a
    fully 8-bit file has none), in the subgraph's order.

    Args:
      model: the file's bytes or path.

    Returns:
      a list of :data:`FloatOp` (index, operator name, output tensors'
      names).

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file; OSError: a
        path that cannot be read.
    """
    buf = tflite_file.verify(model)
    root, graph, tensors = _subgraph(buf)
    codes = _codes(buf, root)
    found = []
    for index, op in enumerate(tflite_file.tables(buf, graph, "SubGraph",
                                                  "operators")):
        ins = [i for i in tflite_file.ints(buf, op, "Operator", "inputs")
               if i >= 0]
        outs = [i for i in tflite_file.ints(buf, op, "Operator", "outputs")
                if i >= 0]
        if any(tflite_file.scalar(buf, tensors[i], "Tensor", "type")
               in _FLOAT_TYPES for i in ins + outs):
            found.append(FloatOp(index, _operator_name(codes[tflite_file.scalar(
                buf, op, "Operator", "opcode_index")]), tuple(
                    tflite_file.string(buf, tensors[i], "Tensor", "name")
                    for i in outs)))
    return found
