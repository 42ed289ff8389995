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
import tempfile

from tf1_awd_sparse.base import checks as _checks
from tf1_awd_sparse.base import scalar_checks as _scalar_checks
from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.export import graphdef
from tf1_awd_sparse.export.tflite_audit import (
    bypass_requantizations, float_ops, merged_grids, requantizations,
    tensor_grids)
from tf1_awd_sparse.transforms.graph_quantize.api import REWRITTEN_COLLECTION

__all__ = ["QuantizedGraphError", "QuantizedFile", "export_quantized_graph",
           "LOGGER_NAME"]

#: The logger the export's warnings go to (ops left float, TF 2.15).
LOGGER_NAME = "tf1_awd_sparse.export"


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
        return _scalar_checks.check_interval(
            low, high, "input_ranges[%r]" % name, "input_ranges[%r]" % name)
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
