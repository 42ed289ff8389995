"""From a session's graph to ``.tflite`` bytes: the GraphDef rewrites
TOCO (TF 1.x) and TF 2.x's converter need, and the conversion itself.

:func:`convert` folds every tensor that does not depend on an input into a
constant (keeping the weights' FakeQuant nodes), rewrites the FakeQuant of
an embedding table onto the full-range grid (`narrow_as_full_range`),
gives every use of a weight's FakeQuant its own copy, shortens the node
names and runs the converter with ``toco_from_protos`` on ``PATH`` for the
conversion only. :func:`nudged_quantization` and :func:`input_stats` give
the converter's ``quantized_input_stats`` of a range.

Two quantization formulas are kept apart on purpose:
:func:`nudged_quantization` (in Python floats: the full-range grid of an
input, for the converter's input stats) and :func:`narrow_as_full_range`
(in float32, as ``tf.fake_quant_with_min_max_vars`` nudges: a table's
narrow-range grid). Each matches a different computation at its own
precision; one formula for both would be off by a rounding for one.
"""
import contextlib
import os
import shutil
import sys

import numpy as np
from tf1_awd_sparse.base import _stderr
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_interval, check_num_bits

__all__ = ["nudged_quantization", "input_stats", "narrow_as_full_range",
           "convert"]

#: The ops the folding keeps (a weight's FakeQuant: TOCO quantizes the
#: weight on its range, narrow-range).
_KEPT_OPS = ("FakeQuantWithMinMaxVars",)


def nudged_quantization(range_min, range_max, num_bits=8):
    """The uint8 (scale, zero point) ``tf.fake_quant_with_min_max_vars`` uses
    for a range (it nudges the range so that 0 is on the grid), computed in
    Python floats (see the module's note on `narrow_as_full_range`).

    Args:
      range_min, range_max: floats (or numpy scalars).
      num_bits: int bit width, 2 to 8.

    Returns:
      ``(scale, zero_point)``: a Python float and an int in
      ``0 .. 2**num_bits - 1``.

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


def input_stats(lo, hi):
    """The converter's ``quantized_input_stats`` entry of a uint8 input on
    the 8-bit grid of ``[lo, hi]``: ``(mean, std)`` = ``(zero point,
    1 / scale)`` of :func:`nudged_quantization`.

    Args:
      lo, hi: floats, the input's range.

    Returns:
      ``(mean, std)``: two Python floats.

    Raises:
      ValueError: not two finite numbers ``lo < hi`` (in float32).
    """
    scale, zero_point = nudged_quantization(lo, hi)
    return float(zero_point), 1.0 / scale


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


def narrow_as_full_range(range_min, range_max, num_bits=8):
    """The full-range bounds (codes ``0 .. 2**bits - 1``) of the grid that
    ``tf.fake_quant_with_min_max_vars(..., narrow_range=True)`` uses on
    ``[range_min, range_max]`` (codes ``1 .. 2**bits - 1``): the same scale
    and zero point, one unused code below.

    Computed in float32 as the op nudges: ``scale = (max - min) / (2**bits
    - 2)``, zero point ``round(1 - min / scale)``; returns ``(-zero_point *
    scale, (2**bits - 1 - zero_point) * scale)`` and the nudged narrow
    bounds ``((1 - zero_point) * scale, (2**bits - 1 - zero_point) *
    scale)``, all float32 numbers.

    Args:
      range_min, range_max: floats, the FakeQuant's range.
      num_bits: int bit width, 2 to 8.

    Returns:
      ``((full_min, full_max), (narrow_min, narrow_max))``: two pairs of
      ``numpy.float32``.

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
    FakeQuant of the same grid (`narrow_as_full_range`) of the table's
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
        full, _ = narrow_as_full_range(float(low), float(high), bits)
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


def _named_outputs(graph_def, output_tensors, output_names):
    """Names (without ``:0``) of the model's outputs: each tensor's op name,
    or the name ``output_names`` gives it, an ``Identity`` of the tensor
    added to ``graph_def`` (after `_shorten_names`, so that the name may be
    one a folded or shortened node had)."""
    if output_names is None:
        return [t.name for t in output_tensors]
    if len(output_names) != len(output_tensors) or len(
            set(output_names)) != len(output_names):
        raise ValueError("output_names must be %d different names, one per "
                         "output tensor, got %r" % (len(output_tensors),
                                                    output_names))
    taken = {node.name for node in graph_def.node}
    names = []
    for tensor, name in zip(output_tensors, output_names):
        if name == tensor.op.name and tensor.value_index == 0:
            names.append(tensor.name)
            continue
        if name in taken:
            raise ValueError("output_names: %r is the name of another "
                             "tensor of the model" % (name,))
        node = graph_def.node.add()
        node.name, node.op = name, "Identity"
        node.input.append(tensor.name)
        node.attr["T"].type = tensor.dtype.as_datatype_enum
        names.append(name + ":0")
    return names


def convert(session, input_tensors, output_tensors, quantized_input_stats,
            output_names=None):
    """Folds a session's graph between inputs and outputs to constants and
    converts it with ``tf.lite.TFLiteConverter`` (TOCO on TF 1.x).

    Args:
      session: the session holding the trained values.
      input_tensors, output_tensors: lists of tensors of its graph, with
        static shapes (their names, without ``:0``, are the model's input
        and output names).
      quantized_input_stats: None for a float model; for a uint8 model
        (``inference_type=tf.uint8``) a dict input name -> ``(mean, std)``
        for every input (`input_stats`); every tensor between the inputs
        and the outputs must then carry a fake-quant range.
      output_names: optional list of names, one per output tensor: the
        model's output names (an ``Identity`` of each tensor so named);
        by default each tensor's op name.

    Returns:
      the ``.tflite`` bytes.

    Raises:
      ValueError: ``output_names`` not one different name per output, or
        a name another tensor of the model has.
      tf.lite.ConverterError (``ConverterError``): if the converter
        rejects the graph.
    """
    graph_def = _folded_graph_def(session, input_tensors, output_tensors)
    outputs = _named_outputs(graph_def, output_tensors, output_names)
    frozen = tf.Graph()
    with frozen.as_default():
        tf.import_graph_def(graph_def, name="")
        converter = tf.lite.TFLiteConverter(
            graph_def,
            [frozen.get_tensor_by_name(t.name) for t in input_tensors],
            [frozen.get_tensor_by_name(name) for name in outputs])
        if quantized_input_stats is not None:
            converter.inference_type = tf.uint8
            converter.quantized_input_stats = quantized_input_stats
        # The converter's summary of the ops it left (TF 2.15: about 20
        # lines per conversion) dropped, where the program asked for quiet.
        with _toco_on_path(), _stderr.converter_output():
            return converter.convert()
