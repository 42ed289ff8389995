"""What a rewritten graph computes in float, read from the graph itself (not
from what the rewrite meant to do): the rewrite's report is this audit of
the graph it wrote, and an exporter can run it on an evaluation graph with
the outputs it is about to convert.

A tensor counts as *fake-quantized* when its value is a FakeQuant op's
output, followed through ops that keep values on their grid:

* reads and control flow: ``Identity``, ``Enter``, ``Exit``, ``Switch``,
  ``NextIteration``, ``StopGradient``, ...; a ``Merge`` or ``Select`` whose
  inputs all are (a loop variable: its start and its next value), or that
  chooses between a FakeQuant and its own input (the ``quant_delay``
  switch: quantized from the delay on);
* shape and selection: ``Reshape``, ``Squeeze``, ``ExpandDims``,
  ``Transpose``, ``StridedSlice``, ``Slice``, ``GatherV2``, ``Tile``,
  ``Pad``, ``ReverseV2``, ``ConcatV2``, ``Pack``, ``Unpack``, ``Split``,
  ``BatchToSpaceND`` / ``SpaceToBatchND``, TensorArray reads (every write
  to the array);
* ops whose output the converters put on their input's grid: ``MaxPool``,
  ``AvgPool``, ``Max``, ``Relu`` (ranges contain 0).

A product (``Conv2D``, ``DepthwiseConv2dNative``, ``MatMul``) is quantized
when its weights (input 1) are fake-quantized and its data (input 0) is
fake-quantized or a graph input (a placeholder: the converter takes its
range from the caller).
"""
import collections

from tf1_awd_sparse.transforms.graph_quantize._graph import (
    in_gradients, is_fake_quant)

__all__ = ["PRODUCT_TYPES", "Finding", "graph_float_ops"]

#: The op types whose inputs the audit checks.
PRODUCT_TYPES = ("Conv2D", "DepthwiseConv2dNative", "MatMul")

#: A float op found: the op, and why it is float (a short clause).
Finding = collections.namedtuple("Finding", ["op", "reason"])

# Ops whose output is their input 0's value (or a part or rearrangement).
_SAME_VALUES = frozenset((
    "Identity", "Snapshot", "StopGradient", "PreventGradient", "Enter",
    "RefEnter", "Exit", "RefExit", "Switch", "RefSwitch", "NextIteration",
    "RefNextIteration", "Reshape", "Squeeze", "ExpandDims", "Transpose",
    "StridedSlice", "Slice", "Gather", "GatherV2", "Tile", "Pad",
    "BatchToSpaceND", "SpaceToBatchND", "Unpack", "SplitV", "MaxPool",
    "AvgPool", "Max", "Relu", "ResizeNearestNeighbor", "ReverseV2",
    "ReverseSequence"))
# Ops whose output is made of several inputs' values: which inputs.
_JOINS = {"ConcatV2": lambda op: op.inputs[:-1],
          "Concat": lambda op: op.inputs[1:],
          "Pack": lambda op: op.inputs,
          "Split": lambda op: op.inputs[1:]}
# Ops that choose one input's value: which inputs.
_CHOICES = {"Merge": lambda op: op.inputs, "RefMerge": lambda op: op.inputs,
            "Select": lambda op: op.inputs[1:],
            "SelectV2": lambda op: op.inputs[1:]}
_ARRAY_READS = ("TensorArrayReadV3", "TensorArrayGatherV3",
                "TensorArrayConcatV3")
# A write to a TensorArray: the index of its value input.
_ARRAY_WRITES = {"TensorArrayWriteV3": 2, "TensorArrayScatterV3": 2,
                 "TensorArraySplitV3": 1}
_INPUT_TYPES = ("Placeholder", "PlaceholderWithDefault", "PlaceholderV2")
# Values stored in the graph (weights of a product are its own finding).
_STORED_TYPES = ("VariableV2", "VarHandleOp", "ReadVariableOp", "Const")
_PLAIN = frozenset(("Identity", "Snapshot", "Enter", "RefEnter", "Switch",
                    "RefSwitch", "Exit", "RefExit"))


def _plain_source(tensor):
    """``tensor`` followed back through ops that only pass it on."""
    for _ in range(64):
        if tensor.op.type not in _PLAIN:
            return tensor
        tensor = tensor.op.inputs[0]
    return tensor


def _array_values(read):
    """The values written to the TensorArray that ``read`` reads."""
    handle = read.inputs[0]
    for _ in range(16):
        if handle.op.type.startswith("TensorArrayV"):
            break
        if not handle.op.inputs:
            return []
        handle = handle.op.inputs[0]
    values, frontier, seen = [], [handle], set()
    while frontier:
        tensor = frontier.pop()
        for op in tensor.consumers():
            if op in seen:
                continue
            seen.add(op)
            if op.type in _ARRAY_WRITES:
                values.append(op.inputs[_ARRAY_WRITES[op.type]])
            elif op.type in _PLAIN:
                frontier.extend(op.outputs)
    return values


class _Walk(object):
    """Memoized: is a tensor fake-quantized (see the module docstring)?"""

    def __init__(self):
        self._memo = {}

    def quantized(self, tensor, inputs_ok):
        """Whether ``tensor`` is fake-quantized (or, with ``inputs_ok``, a
        graph input followed through ops that keep its values)."""
        # By name: a tensor may be unhashable (TF 2.x tensor equality).
        key = (tensor.name, inputs_ok)
        if key not in self._memo:
            # A cycle (a loop variable) is as quantized as its other ways.
            self._memo[key] = True
            self._memo[key] = self._compute(tensor, inputs_ok)
        return self._memo[key]

    def _compute(self, tensor, inputs_ok):
        op = tensor.op
        if is_fake_quant(op):
            return True
        if op.type in _INPUT_TYPES:
            return inputs_ok
        if op.type in _SAME_VALUES and op.inputs:
            return self.quantized(op.inputs[0], inputs_ok)
        if op.type in _JOINS:
            parts = list(_JOINS[op.type](op))
            return bool(parts) and all(self.quantized(t, inputs_ok)
                                       for t in parts)
        if op.type in _CHOICES:
            return self._choice(list(_CHOICES[op.type](op)), inputs_ok)
        if op.type in _ARRAY_READS:
            values = _array_values(op)
            return bool(values) and all(self.quantized(t, inputs_ok)
                                        for t in values)
        return False

    def _choice(self, options, inputs_ok):
        """A Merge / Select: every option quantized, or a FakeQuant and its
        own input (the quant_delay switch)."""
        done = [t.name for t in options if self.quantized(t, inputs_ok)]
        if len(done) == len(options):
            return True
        quants = [_plain_source(t).op for t in options if t.name in done]
        raw = {_plain_source(op.inputs[0]).name for op in quants
               if is_fake_quant(op)}
        return bool(raw) and all(_plain_source(t).name in raw
                                 for t in options if t.name not in done)


def _first_float(tensor):
    """The name of the op where ``tensor``'s float value comes from (the
    first op on its way back that keeps no grid)."""
    for _ in range(64):
        op = tensor.op
        if op.type not in _SAME_VALUES or not op.inputs:
            break
        tensor = op.inputs[0]
    return tensor.op.name


def _product_findings(graph, walk, scope, skip):
    found = []
    for op in graph.get_operations():
        if (op.type not in PRODUCT_TYPES or op.name in skip
                or in_gradients(op) or (scope and
                                        not op.name.startswith(scope))):
            continue
        weights, data = op.inputs[1], op.inputs[0]
        if not walk.quantized(weights, False):
            found.append(Finding(op, "its weights are not fake-quantized "
                                 "(from %s)"
                                 % _first_float(weights)))
        elif not walk.quantized(data, True):
            found.append(Finding(op, "it reads float values (from %s)"
                                 % _first_float(data)))
    return found


def _output_findings(walk, outputs, already):
    """Every op that computes in float on the way back from ``outputs`` to
    fake-quantized tensors, graph inputs and variables (not those of
    ``already``, found before)."""
    found, seen = [], set()
    names = ", ".join(t.name for t in outputs)
    frontier = list(outputs)
    while frontier:
        tensor = frontier.pop()
        op = tensor.op
        if (op in seen or not tensor.dtype.is_floating
                or walk.quantized(tensor, True)):
            continue
        seen.add(op)
        if op.type in _SAME_VALUES:
            frontier.append(op.inputs[0])
        elif op.type in _JOINS:
            frontier.extend(_JOINS[op.type](op))
        elif op.type in _CHOICES:
            frontier.extend(_CHOICES[op.type](op))
        elif op.type in _ARRAY_READS:
            frontier.extend(_array_values(op))
        elif op.type not in _STORED_TYPES:
            # A product of quantized values: its float output is the
            # accumulator the converter fuses with the bias after it.
            if op not in already and not (
                    op.type in PRODUCT_TYPES
                    and walk.quantized(op.inputs[1], False)
                    and walk.quantized(op.inputs[0], True)):
                found.append(Finding(op, "it computes in float on the way "
                                     "to the outputs (%s)" % names))
            frontier.extend(op.inputs)
    return found


def graph_float_ops(graph, outputs=None, scope=None, skip=()):
    """What a (rewritten) graph computes in float, read from the graph: each
    product whose weights are not fake-quantized or whose data is float
    (see the module docstring), then, if ``outputs`` are given, each op
    that computes in float between fake-quantized tensors (or the graph's
    inputs) and the outputs: what a uint8 TFLite file of the graph could
    not hold in 8 bits.

    Args:
      graph: a ``tf.Graph``.
      outputs: None, or an iterable of the output ``tf.Tensor`` s of
        ``graph`` (those an export converts).
      scope: None, or a name scope: only products inside it are checked.
      skip: names of products not to check (those a rewrite replaced,
        e.g. a layer op refolded with its batch norm).

    Returns:
      a list of :data:`Finding` (op, reason), products first in graph
      order, then the outputs' float ops from the outputs back.

    Raises:
      ValueError: an output not a float tensor of ``graph``.
    """
    walk = _Walk()
    found = _product_findings(graph, walk, scope, set(skip))
    if outputs is not None:
        outputs = list(outputs)
        for tensor in outputs:
            if getattr(tensor, "graph", None) is not graph or not getattr(
                    tensor, "dtype", None) or not tensor.dtype.is_floating:
                raise ValueError("outputs must be float tensors of the "
                                 "graph, got %r" % (tensor,))
        found += _output_findings(walk, outputs, {f.op for f in found})
    return found
