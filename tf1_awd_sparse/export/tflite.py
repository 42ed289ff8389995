"""Export of a trained (quantization-aware) LSTM cell stack to TFLite.

:func:`export_tflite` rebuilds the stack in a fresh graph in eval mode with
a fixed batch and a fixed number of steps, unrolled with strided slices (TOCO
in TF 1.13 converts no while loop and no quantized ``Unpack``), copies the
trained values in, replaces every weight-side tensor by a constant, and
writes

* a float TFLite model of the float cells (``is_quant=False``), and
* a fully 8-bit (``inference_type=tf.uint8``) model of the fake-quant cells:
  every tensor, including the inputs and the initial state, carries a
  fake-quant range, so TOCO finds min/max everywhere.

Both models take ``inputs`` ``[batch, steps, depth]`` and, per layer, the
state ``state_<l>_c`` / ``state_<l>_h``; they return ``outputs``
``[batch, steps, h_depth]`` and the final ``final_<l>_c`` / ``final_<l>_h``,
so a caller can run a long sequence window by window.
"""
import contextlib
import os
import shutil
import sys

import numpy as np
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.variable_names import relative_variable_names
from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.base.checks import (
    check_checkpoint, check_interval, check_num_bits, check_positive_int)
from tf1_awd_sparse.ops import fake_quant as fq

INPUT_NAME = "inputs"
OUTPUT_NAME = "outputs"
_KEPT_OPS = ("FakeQuantWithMinMaxVars",)


def _as_cell_list(cells):
    """Validates ``cells`` and returns them as a flat list, bottom first: a
    ``tf.nn.rnn_cell.MultiRNNCell`` (also nested, or in a list) is unwrapped
    into its cells.

    Raises:
      ValueError: an empty stack, or a cell that is not a built
        ``WeightDropLSTMCell`` (the message says what to pass).
    """
    # Imported here: importing the cell module is needed only for this
    # check (the exporter's import stays light).
    from tf1_awd_sparse.layers.weight_drop_lstm import WeightDropLSTMCell
    pending = list(cells) if isinstance(cells, (list, tuple)) else [cells]
    flat = []
    while pending:
        cell = pending.pop(0)
        if isinstance(cell, tf.nn.rnn_cell.MultiRNNCell):
            # TF 1.13 and 1.15 have no public accessor for the cells.
            pending[:0] = list(cell._cells)  # pylint: disable=protected-access
            continue
        if not isinstance(cell, WeightDropLSTMCell):
            raise ValueError(
                "cells must be a built WeightDropLSTMCell, a list of them "
                "(bottom first) or a tf.nn.rnn_cell.MultiRNNCell of them; got "
                "%r" % (cell,))
        if not cell.built:
            raise ValueError("cells must be built (call them in the "
                             "training graph first); %r is not" % (cell,))
        flat.append(cell)
    if not flat:
        raise ValueError("cells must be a cell or a non-empty list of cells; "
                         "got an empty list")
    _check_stack_order(flat)
    return flat


def _check_stack_order(cells):
    """Raises ValueError unless every cell takes the output of the cell
    before it (a list bottom first). The order is not guessed: layers of
    equal sizes fit in either order, and only the caller knows theirs."""
    depths = [cell.input_depth for cell in cells]
    for i in range(1, len(cells)):
        if depths[i] != cells[i - 1].output_size:
            fits_reversed = all(
                depths[j - 1] == cells[j].output_size
                for j in range(1, len(cells)))
            raise ValueError(
                "cells must be bottom first, each taking the output of the "
                "one before it: cells[%d] takes inputs of depth %d but "
                "cells[%d] outputs %d (input depths %s, output sizes %s)%s"
                % (i, depths[i], i - 1, cells[i - 1].output_size, depths,
                   [c.output_size for c in cells],
                   "; reversed, the list fits: pass it bottom first"
                   if fits_reversed else ""))


def read_cell_values(cells, session=None, checkpoint=None):
    """Trained values of each cell's variables, by name relative to the cell.

    Args:
      cells: list of built cells.
      session: a ``tf.Session`` on the cells' graph, or None.
      checkpoint: a checkpoint path (or directory), used if no session.

    Returns:
      list (one per cell) of dict relative name -> numpy array.

    Raises:
      ValueError: neither or both of ``session``/``checkpoint`` given; a
        checkpoint that is neither a checkpoint prefix nor a directory
        holding a ``checkpoint`` file, that lacks a variable of the cells,
        or whose data file is truncated (see
        ``tf1_awd_sparse.base.checks.check_checkpoint``).
    """
    if (session is None) == (checkpoint is None):
        raise ValueError("give exactly one of session= or checkpoint=; got "
                         "session=%r, checkpoint=%r" % (session, checkpoint))
    reader = (check_checkpoint(checkpoint, "checkpoint")
              if checkpoint is not None else None)
    result = []
    for cell in cells:
        # Dropout masks are per-process sampling state (never in a
        # checkpoint) and an exported model does not drop.
        masks = set(mask_placement.mask_variables(cell.weights[0].graph))
        variables = [v for v in cell.weights if v not in masks]
        if reader is not None:
            values = [reader.get_tensor(v.op.name) for v in variables]
        else:
            values = session.run(variables)
        result.append(dict(zip(relative_variable_names(variables), values)))
    return result


def _build_cells(cells, batch_size, depth):
    """Builds each cell (in the scopes :func:`unroll` uses) with one call on
    zeros; the call's ops feed no output and are pruned from the model."""
    x = tf.zeros([batch_size, depth])
    for layer, cell in enumerate(cells):
        with tf.variable_scope("layer_%d" % layer, reuse=tf.AUTO_REUSE):
            x, _ = cell(x, cell.zero_state(batch_size, tf.float32))


def unroll(cells, inputs, initial_state):
    """Runs a cell stack over a fixed number of steps, without a while loop
    and without ``Unpack`` (the time axis is sliced with strided slices).

    Args:
      cells: list of cells, bottom first.
      inputs: ``[batch, steps, depth]`` tensor with a static ``steps``.
      initial_state: list (per cell) of ``LSTMStateTuple(c, h)``.

    Returns:
      ``(outputs, final_state)``: the top cell's outputs per step (a list of
      ``[batch, h_depth]`` tensors) and the list of final states.
    """
    steps = dimension_value(inputs.get_shape()[1])
    state = list(initial_state)
    outputs = []
    for t in range(steps):
        x = inputs[:, t, :]
        for layer, cell in enumerate(cells):
            with tf.variable_scope("layer_%d" % layer,
                                   reuse=tf.AUTO_REUSE):
                x, state[layer] = cell(x, state[layer])
        outputs.append(x)
    return outputs, state


def nudged_quantization(range_min, range_max, num_bits=8):
    """The uint8 (scale, zero point) ``tf.fake_quant_with_min_max_vars`` uses
    for a range (it nudges the range so that 0 is on the grid).

    Args:
      range_min, range_max: floats.
      num_bits: bit width.

    Returns:
      ``(scale, zero_point)``: float and int.

    Raises:
      ValueError: a bad ``num_bits``, or a range that is not two finite
        numbers ``range_min < range_max`` (in float32).
    """
    # float32: the ranges are a model's float32 values.
    range_min, range_max = check_interval(range_min, range_max, "range_min",
                                          "range_max", tf.float32)
    quant_max = 2 ** check_num_bits(num_bits) - 1
    scale = (float(range_max) - float(range_min)) / quant_max
    zero_point = -float(range_min) / scale
    return scale, int(np.clip(np.round(zero_point), 0, quant_max))


def _folded_graph_def(session, input_tensors, output_tensors):
    """GraphDef of the subgraph from inputs to outputs in which every tensor
    that does not depend on an input is replaced by its current value (a
    Const): variables, masks, weight ranges and learned activation ranges.
    """
    graph = session.graph
    live = set(t.op for t in input_tensors)
    frontier = list(live)
    while frontier:
        op = frontier.pop()
        for out in op.outputs:
            for consumer in out.consumers():
                if consumer not in live:
                    live.add(consumer)
                    frontier.append(consumer)
    needed, frontier = set(), [t.op for t in output_tensors]
    folded = {}
    while frontier:
        op = frontier.pop()
        if op in needed:
            continue
        needed.add(op)
        for tensor in op.inputs:
            # A weight's FakeQuant stays (its input and range become
            # constants): TOCO needs it to quantize that weight narrow-range.
            if tensor.op in live or tensor.op.type in _KEPT_OPS:
                frontier.append(tensor.op)
            elif tensor.op.type != "Const":
                folded[tensor.name] = tensor
            else:
                needed.add(tensor.op)
    values = session.run(folded)
    graph_def = tf.GraphDef()
    const_names = {}
    for i, (name, value) in enumerate(sorted(values.items())):
        node = graph_def.node.add()
        node.name = "folded_%d" % i
        node.op = "Const"
        node.attr["dtype"].type = folded[name].dtype.as_datatype_enum
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
        const_names[name] = node.name
    for op in graph.get_operations():
        if op not in needed:
            continue
        node = graph_def.node.add()
        node.CopyFrom(op.node_def)
        if "_class" in node.attr:
            del node.attr["_class"]
        del node.input[:]
        for tensor in op.inputs:
            node.input.append(const_names.get(tensor.name, tensor.name))
        # Control inputs inside the live graph only (training-time
        # accumulations are absent in eval, so nothing is lost).
        node.input.extend("^" + c.name for c in op.control_inputs
                          if c in needed)
    keep = set(t.op.name for t in list(input_tensors) + list(output_tensors))
    _gathered_weights_on_full_range(graph_def, session)
    return _shorten_names(_one_weight_quant_per_use(graph_def), keep)


#: The ops that look rows up in a table (TFLite's Gather copies the bytes).
_GATHER_OPS = ("Gather", "GatherV2")


def _narrow_as_full_range(range_min, range_max, num_bits=8):
    """The full-range bounds (codes ``0 .. 2**bits - 1``) of the grid that
    ``tf.fake_quant_with_min_max_vars(..., narrow_range=True)`` uses on
    ``[range_min, range_max]`` (codes ``1 .. 2**bits - 1``): the same scale
    and zero point, one unused code below.

    Computed in float32 as the op nudges: ``scale = (max - min) / (2**bits
    - 2)``, zero point ``round(1 - min / scale)``; returns ``(-zero_point *
    scale, (2**bits - 1 - zero_point) * scale)`` and the nudged narrow
    bounds ``((1 - zero_point) * scale, (2**bits - 1 - zero_point) *
    scale)``, all float32 numbers.

    Raises:
      ValueError: a bad ``num_bits``, or not two finite numbers
        ``range_min < range_max`` (in float32).
    """
    range_min, range_max = check_interval(range_min, range_max, "range_min",
                                          "range_max", tf.float32)
    quant_max = np.float32(2 ** check_num_bits(num_bits) - 1)
    low, high, one = np.float32(range_min), np.float32(range_max), \
        np.float32(1)
    scale = (high - low) / (quant_max - one)
    zero_point = np.float32(np.clip(np.round(one - low / scale), one,
                                    quant_max))
    return ((-zero_point * scale, (quant_max - zero_point) * scale),
            ((one - zero_point) * scale, (quant_max - zero_point) * scale))


def _gathered_weights_on_full_range(graph_def, session):
    """Rewrites (in place) each narrow-range FakeQuant of a constant that
    a Gather reads rows of (an embedding table) into the full-range
    FakeQuant of the same grid (`_narrow_as_full_range`) of the table's
    trained values (the FakeQuant's output in ``session``, where the
    GraphDef's nodes have their names).

    TFLite's uint8 Gather copies the table's codes, read with its output's
    (scale, zero point). TOCO (TF 1.x) gives that output the table's range
    on the activation grid (codes 0..255): a scale 255/254 of the table's
    and, for about half of all ranges, a zero point one lower, so every row
    was read 0.4 % small and one step high, exact zeros included (1.4 %
    in perplexity on a 95 % sparse PTB model). On the full-range grid both
    tensors get the table's scale and zero point; values already on it
    are stored as their trained codes (the weights' own values at half a
    step would round either way under the two scales' float32 rounding).
    TF 2.x's converter gave the output the table's parameters already.
    """
    nodes = {node.name: node for node in graph_def.node}

    def source(ref):
        return nodes.get(ref.lstrip("^").partition(":")[0])

    tables = {}
    for node in graph_def.node:
        quant = source(node.input[0]) if node.op in _GATHER_OPS else None
        if (quant is not None and quant.op in _KEPT_OPS
                and quant.attr["narrow_range"].b
                and all(getattr(source(ref), "op", None) == "Const"
                        for ref in quant.input[:3])):
            tables[quant.name] = quant
    trained = session.run({name: session.graph.get_tensor_by_name(
        name + ":0") for name in tables})
    for name in sorted(tables):
        quant = tables[name]
        low, high = [tf.make_ndarray(source(ref).attr["value"].tensor)
                     for ref in quant.input[1:3]]
        bits = quant.attr["num_bits"].i if "num_bits" in quant.attr else 8
        full, _ = _narrow_as_full_range(float(low), float(high), bits)
        for k, array in enumerate([trained[name]] + list(full)):
            const = graph_def.node.add()
            const.name = "%s_full_range_%d" % (name, k)
            const.op = "Const"
            const.attr["dtype"].type = tf.float32.as_datatype_enum
            const.attr["value"].tensor.CopyFrom(
                tf.make_tensor_proto(np.asarray(array, np.float32)))
            quant.input[k] = const.name
        quant.attr["narrow_range"].b = False


#: Attribute that tells the copies of one weight FakeQuant apart (internal:
#: TensorFlow ignores node attributes whose name starts with "_").
_USE_ATTR = "_tf1_awd_sparse_use"


def _one_weight_quant_per_use(graph_def):
    """Gives every consumer of a weight's FakeQuant (a FakeQuant of a
    Const) its own copy of that node, each marked with a different
    `_USE_ATTR`, and returns ``graph_def`` (changed in place).

    An unrolled cell multiplies by its kernel's FakeQuant at every step.
    TF 2.x's converter (MLIR) turns a FakeQuant into quantization
    parameters only when its output has one use; a shared one is folded
    into a float constant and the weight requantized from its own values,
    which loses the trained grid (for an all-zero, fully pruned, matrix a
    ``[0, 0]`` range whose zeros come out one step above the zero point).
    The marks keep the converter from merging the copies back into one;
    the quantized copies, all equal, are stored once. TOCO (TF 1.x)
    reads the range of a shared FakeQuant as well.
    """
    nodes = {node.name: node for node in graph_def.node}
    weight_quants = {
        node.name for node in graph_def.node
        if node.op in _KEPT_OPS and node.input and nodes.get(
            node.input[0].partition(":")[0], node).op == "Const"}
    uses = {}
    for node in graph_def.node:
        for k, ref in enumerate(node.input):
            name = ref.partition(":")[0]
            if name in weight_quants:  # a control input starts with "^"
                uses.setdefault(name, []).append((node, k))
    for name in sorted(uses):
        for i, (node, k) in enumerate(uses[name][1:], 1):
            copy = graph_def.node.add()
            copy.CopyFrom(nodes[name])
            copy.name = "%s_use_%d" % (name, i)
            copy.attr[_USE_ATTR].i = i
            node.input[k] = copy.name
    return graph_def


def _shorten_names(graph_def, keep):
    """Renames every node but ``keep`` to a short name: an unrolled model
    has hundreds of tensors, and their scoped names would otherwise be a
    large part of a small model file."""
    new_names = {}
    for i, node in enumerate(graph_def.node):
        new_names[node.name] = (node.name if node.name in keep
                                else "t%x" % i)
    for node in graph_def.node:
        node.name = new_names[node.name]
        for k, ref in enumerate(node.input):
            control = ref.startswith("^")
            name, sep, port = ref.lstrip("^").partition(":")
            node.input[k] = ("^" if control else "") + new_names[name] + \
                sep + port
    return graph_def


@contextlib.contextmanager
def _toco_on_path():
    """Within the block, ``toco_from_protos`` is on ``PATH``.

    TF 1.x's TFLiteConverter runs that script; inside a venv that is not
    activated it is not on PATH, so the block puts the interpreter's
    directory first. On exit ``PATH`` is what it was (also unset, and also
    when the block raises): nothing outside the conversion sees the change.
    """
    if shutil.which("toco_from_protos") is not None:
        yield
        return
    before = os.environ.get("PATH")
    os.environ["PATH"] = (os.path.dirname(sys.executable) + os.pathsep
                          + (before or ""))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def _eval_cell(cell, is_quant):
    """An unbuilt eval-mode copy of ``cell``: fake-quant for the uint8
    model; for the float model the float cell, or for
    ``quant_activation='hard'`` the quantized cell with every fake-quant
    bypassed (float hard sigmoid / ReLU, the function that was trained)."""
    config = dict(cell.get_config())
    hard = config.get("quant_activation") == "hard" and config["is_quant"]
    # The model's state inputs / outputs are (c, h) pairs whatever the
    # trained cell's state_is_tuple (the variables do not depend on it).
    config.update(is_train=False, is_quant=is_quant or hard, quant_delay=0,
                  state_is_tuple=True)
    copy = type(cell).from_config(config)
    if copy.quantizer is not None:
        copy.quantizer.float_only = hard and not is_quant
    return copy


def state_inputs(cells, batch_size, is_quant):
    """The model's state inputs ``state_<l>_c`` / ``state_<l>_h`` (float
    placeholders) and the initial state the cells receive: for a uint8
    model on the cells' state / output grids (the cells quantize the state
    they produce, not the state they receive). Call after the cells are
    built.

    Returns:
      ``(placeholders, list of LSTMStateTuple)``.
    """
    placeholders, initial_state = [], []
    for layer, cell in enumerate(cells):
        c = tf.placeholder(tf.float32, [batch_size, cell.state_size.c],
                           name="state_%d_c" % layer)
        h = tf.placeholder(tf.float32, [batch_size, cell.state_size.h],
                           name="state_%d_h" % layer)
        placeholders += [c, h]
        if is_quant:
            ranges = cell.quantizer.run_ranges
            bits = cell.quantizer.activation_bits
            c = fq.fake_quant(c, *ranges["state"], num_bits=bits)
            h = fq.fake_quant(h, *ranges["output"], num_bits=bits)
        initial_state.append(tf.nn.rnn_cell.LSTMStateTuple(c, h))
    return placeholders, initial_state


def stack_outputs(outputs, top_cell, is_quant):
    """The top cell's per-step outputs as ``[batch, steps, h_depth]``; for
    a uint8 model on the cell's output grid (TFLite's quantized Pack needs
    equal zero points)."""
    stacked = tf.stack(outputs, axis=1)
    if is_quant:
        lo, hi = top_cell.quantizer.run_ranges["output"]
        stacked = fq.fake_quant(stacked, lo, hi,
                                top_cell.quantizer.activation_bits)
    return stacked


def final_state_outputs(final):
    """``final_<l>_c`` / ``final_<l>_h`` identities of the final states."""
    tensors = []
    for layer, state in enumerate(final):
        tensors += [tf.identity(state.c, "final_%d_c" % layer),
                    tf.identity(state.h, "final_%d_h" % layer)]
    return tensors


def state_input_stats(cells, session):
    """``quantized_input_stats`` entries of the state inputs (mean = zero
    point, std = 1 / scale) from the grids they are put on."""
    ranges = session.run({
        name: cell.quantizer.run_ranges[key]
        for layer, cell in enumerate(cells)
        for name, key in (("state_%d_c" % layer, "state"),
                          ("state_%d_h" % layer, "output"))})
    return {name: _stats(lo, hi) for name, (lo, hi) in ranges.items()}


def _stats(lo, hi):
    scale, zero_point = nudged_quantization(lo, hi)
    return float(zero_point), 1.0 / scale


def convert(session, input_tensors, output_tensors, quantized_input_stats):
    """Folds a session's graph between inputs and outputs to constants and
    converts it with TOCO.

    Args:
      session: the session holding the trained values.
      input_tensors, output_tensors: lists of tensors of its graph.
      quantized_input_stats: None for a float model; for a uint8 model a
        dict input name -> (mean, std) for every input.

    Returns:
      the ``.tflite`` bytes.

    Raises:
      tf.lite.ConverterError: if TOCO rejects the graph.
    """
    graph_def = _folded_graph_def(session, input_tensors, output_tensors)
    frozen = tf.Graph()
    with frozen.as_default():
        tf.import_graph_def(graph_def, name="")
        converter = tf.lite.TFLiteConverter(
            graph_def,
            [frozen.get_tensor_by_name(t.name) for t in input_tensors],
            [frozen.get_tensor_by_name(t.name) for t in output_tensors])
        if quantized_input_stats is not None:
            converter.inference_type = tf.uint8
            converter.quantized_input_stats = quantized_input_stats
        with _toco_on_path():
            return converter.convert()


def _build_and_convert(cells, values, batch_size, num_steps, is_quant):
    """Builds the unrolled eval graph of a cell stack, loads ``values`` and
    converts it.

    Returns:
      the ``.tflite`` bytes.
    """
    graph = tf.Graph()
    with graph.as_default():
        new_cells = [_eval_cell(c, is_quant) for c in cells]
        depth = values[0]["kernel"].shape[0] - new_cells[0].state_size.h
        inputs = tf.placeholder(tf.float32, [batch_size, num_steps, depth],
                                name=INPUT_NAME)
        _build_cells(new_cells, batch_size, depth)
        placeholders, initial_state = state_inputs(new_cells, batch_size,
                                                   is_quant)
        outputs, final = unroll(new_cells, inputs, initial_state)
        output_tensors = [tf.identity(
            stack_outputs(outputs, new_cells[-1], is_quant),
            name=OUTPUT_NAME)] + final_state_outputs(final)
        config = tf.ConfigProto(intra_op_parallelism_threads=1,
                                inter_op_parallelism_threads=1)
        with tf.Session(graph=graph, config=config) as session:
            session.run(tf.global_variables_initializer())
            for cell, cell_values in zip(new_cells, values):
                _load_values(cell, cell_values, session)
            stats = None
            if is_quant:
                stats = state_input_stats(new_cells, session)
                # The first fake-quant the inputs meet is the bottom
                # cell's concat.
                stats[INPUT_NAME] = _stats(*session.run(
                    new_cells[0].quantizer.run_ranges["concat"]))
            return convert(session, [inputs] + placeholders, output_tensors,
                           stats)


def _load_values(cell, values, session):
    """Assigns trained values to a freshly built cell, by relative name."""
    names = relative_variable_names(cell.weights)
    for name, variable in zip(names, cell.weights):
        if name not in values:
            raise ValueError(
                "the trained cell has no variable %r; an 8-bit export "
                "needs a cell trained with is_quant=True (has: %s)"
                % (name, sorted(values)))
        variable.load(values[name], session)


def export_tflite(cells, batch_size, num_steps, float_path=None,
                  quant_path=None, session=None, checkpoint=None):
    """Writes float and fully 8-bit TFLite models of a trained cell stack.

    Args:
      cells: a built ``WeightDropLSTMCell``, a list of them (bottom first)
        or the ``tf.nn.rnn_cell.MultiRNNCell`` of them, as used in the
        training graph. For ``quant_path`` they must have been built with
        ``is_quant=True`` (their learned ranges are exported).
      batch_size: int, the models' fixed batch.
      num_steps: int, the number of unrolled steps per model call.
      float_path: where to write the float model, or None to skip.
      quant_path: where to write the uint8 model, or None to skip.
      session: a session holding the trained values, or
      checkpoint: a checkpoint path / directory holding them (exactly one).

    Returns:
      dict with ``'float_bytes'`` / ``'quant_bytes'`` (file sizes, for the
      models written).

    Raises:
      ValueError: bad sizes, cells of another kind (say what to pass),
        unbuilt cells, cells not bottom first (a cell whose input depth is
        not the output size of the cell before it), both or neither of
        ``session`` / ``checkpoint``, a checkpoint that is not a prefix or
        a directory with a ``checkpoint`` file (or lacks a variable of the
        cells, or is truncated), neither output path or both the same, an
        output path that is not a string in an existing directory, or an
        8-bit export of float cells.
      tf.lite.ConverterError (``ConverterError``): if TOCO rejects a graph.
    """
    cells = _as_cell_list(cells)
    batch_size = check_positive_int(batch_size, "batch_size")
    num_steps = check_positive_int(num_steps, "num_steps")
    _check_output_paths(float_path, quant_path)
    values = read_cell_values(cells, session=session, checkpoint=checkpoint)
    sizes = {}
    for path, is_quant, key in ((float_path, False, "float_bytes"),
                                (quant_path, True, "quant_bytes")):
        if path is None:
            continue
        model = _build_and_convert(cells, values, batch_size, num_steps,
                                   is_quant)
        with open(path, "wb") as handle:
            handle.write(model)
        sizes[key] = len(model)
    return sizes


def _check_output_paths(float_path, quant_path):
    """Checks the output paths before the conversion (which takes a
    while), not at the write.

    Raises:
      ValueError: neither path (nothing would be written), both naming
        one file, or a path that `_check_output_path` refuses.
    """
    if float_path is None and quant_path is None:
        raise ValueError("export_tflite writes files: give float_path= "
                         "and/or quant_path=, got neither (nothing would be "
                         "written)")
    for path, arg_name in ((float_path, "float_path"),
                           (quant_path, "quant_path")):
        if path is not None:
            _check_output_path(path, arg_name)
    if float_path is not None and quant_path is not None and (
            os.path.abspath(float_path) == os.path.abspath(quant_path)):
        raise ValueError("float_path and quant_path must be two files, got "
                         "%r for both (the uint8 model would overwrite the "
                         "float one)" % (float_path,))


def _check_output_path(path, arg_name):
    """Raises ValueError naming ``arg_name`` unless ``path`` is a string
    naming a file in an existing directory."""
    if not isinstance(path, str) or not path:
        raise ValueError("%s must be a file path (str), got %r"
                         % (arg_name, path))
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory) or os.path.isdir(path):
        raise ValueError("%s must name a file in an existing directory, got "
                         "%r" % (arg_name, path))


class TFLiteRunner(object):
    """Runs an exported model with a TFLite interpreter on float arrays,
    quantizing inputs and dequantizing outputs for uint8 models.

    Args:
      path: a ``.tflite`` file written by :func:`export_tflite`.
      interpreter: which interpreter runs it
        (`tf1_awd_sparse.base.compat.interpreter_class`). The
        default, None or ``"auto"``, is LiteRT's
        ``ai_edge_litert.interpreter.Interpreter`` where ``ai-edge-litert``
        is installed (TF 2.x's Pythons), else ``tf.lite.Interpreter``;
        ``"tf"`` or ``"litert"`` asks for one of them, or pass a class
        with their API.

    Raises:
      ValueError: ``path`` is not an existing file, or not a TFLite model
        the interpreter can load (its message included); an unknown or
        uninstalled ``interpreter``.
    """

    def __init__(self, path, interpreter=None):
        if not isinstance(path, str) or not os.path.isfile(path):
            raise ValueError("path must name an existing .tflite file, got "
                             "%r" % (path,))
        make = _compat.interpreter_class(interpreter)
        try:
            self.interpreter = make(model_path=path)
        except ValueError as error:
            raise ValueError("path %r is not a TFLite model the interpreter "
                             "can load: %s" % (path, error))
        self.interpreter.allocate_tensors()
        self.inputs = {d["name"]: d
                       for d in self.interpreter.get_input_details()}
        self.outputs = {d["name"]: d
                        for d in self.interpreter.get_output_details()}

    def output_quantization(self, name=OUTPUT_NAME):
        """``(scale, zero_point)`` of an output (``(0.0, 0)`` if float)."""
        return self.outputs[name]["quantization"]

    def run(self, inputs, state=None):
        """One call of the model.

        Args:
          inputs: ``[batch, steps, depth]`` float array, the model's fixed
            shape, finite values.
          state: optional dict input name (``'state_0_c'``...) -> float
            array of that input's shape; zeros for missing entries.

        Raises:
          ValueError: a ``state`` key that is not an input of the model,
            or an array (named) that is not numeric, of another shape than
            the model's input or not finite (a NaN has no uint8 code, and a
            float model would only return NaN).

        Returns:
          dict output name -> float array.
        """
        if not isinstance(state, (dict, type(None))):
            raise ValueError("state must be a dict input name -> array, got "
                             "%r" % (state,))
        state = dict(state or {})
        unknown = sorted(set(state) - set(self.inputs))
        if unknown:
            raise ValueError("state: %s not among the model's inputs %s"
                             % (", ".join(map(repr, unknown)),
                                sorted(self.inputs)))
        if INPUT_NAME in state:
            raise ValueError("state: %r is the inputs argument, not a state"
                             % (INPUT_NAME,))
        state[INPUT_NAME] = inputs
        for name, detail in self.inputs.items():
            value = _input_array(
                state.get(name, np.zeros(detail["shape"])), detail["shape"],
                "inputs" if name == INPUT_NAME else "state[%r]" % (name,))
            if detail["dtype"] == np.uint8:
                scale, zero_point = detail["quantization"]
                value = np.clip(np.round(value / scale + zero_point), 0, 255)
            self.interpreter.set_tensor(detail["index"],
                                        value.astype(detail["dtype"]))
        self.interpreter.invoke()
        result = {}
        for name, detail in self.outputs.items():
            value = self.interpreter.get_tensor(detail["index"])
            if detail["dtype"] == np.uint8:
                scale, zero_point = detail["quantization"]
                value = (value.astype(np.float32) - zero_point) * scale
            result[name] = value
        return result


def _input_array(value, shape, arg_name):
    """``value`` as a float32 array of the model input's ``shape``.

    Raises:
      ValueError: not numeric, another shape, or not finite.
    """
    try:
        array = np.asarray(value, np.float32)
    except (TypeError, ValueError):
        raise ValueError("%s must be a float array, got %r"
                         % (arg_name, value))
    # Python ints: the interpreter's shapes are int32 arrays, whose list()
    # numpy 2 prints as [np.int32(2), ...].
    shape = np.asarray(shape).tolist()
    if list(array.shape) != shape:
        raise ValueError("%s must have the model's shape %s, got %s"
                         % (arg_name, shape, list(array.shape)))
    if not np.all(np.isfinite(array)):
        raise ValueError("%s must be finite, got NaN or inf" % (arg_name,))
    return array
