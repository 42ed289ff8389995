"""Finding the layers of a built graph that the quantization rewrite
changes: a ``Conv2D``, ``DepthwiseConv2dNative`` or ``MatMul`` whose
weights are read from a variable, then (each optional, in this order) the
``BatchToSpaceND`` of a dilated convolution, its ``BiasAdd`` or batch
norm, a residual ``Add`` before the activation, the activation (``Relu``,
``Relu6``, ``Identity``) and a residual ``Add`` after it.

A layer is left alone when its weights already come out of a FakeQuant op
(a cell that quantizes its own kernel, e.g. ``WeightDropLSTMCell(
is_quant=True)``), when it sits inside a TF1 while loop or cond branch
(the rewrite creates variables and reads the global step, which a loop
body cannot),
or when it is outside the ``scope`` asked for.
"""
from tf1_awd_sparse.transforms.graph_quantize import batch_norm
from tf1_awd_sparse.transforms.graph_quantize._graph import (
    only_consumer, op_scope, weight_source)

__all__ = ["LAYER_TYPES", "ACTIVATION_TYPES", "Layer", "in_control_flow",
           "find_layers"]

LAYER_TYPES = ("Conv2D", "DepthwiseConv2dNative", "MatMul")
ACTIVATION_TYPES = ("Relu", "Relu6", "Identity")
_ADD_TYPES = ("Add", "AddV2")
_BIAS_TYPES = ("BiasAdd",)


class Layer(object):
    """One matched layer (every attribute an op of the graph, or None).

    Attributes:
      op: the Conv2D / DepthwiseConv2dNative / MatMul.
      weight: its weight tensor (input 1, a variable's value).
      bias_add: the BiasAdd after it, or None.
      batch_norm: a :class:`batch_norm.BatchNorm` after it, or None.
      bypass: the residual Add between it and the activation, or None.
      activation: the Relu / Relu6 / Identity, or None.
      post_bypass: the residual Add after the activation, or None.
      folded_output: once the batch norm is folded, the folded layer's
        output (``fold_batch_norm.fold`` sets it and ``op`` / ``weight``).
      batch_to_space: the BatchToSpaceND after a dilated Conv2D, or None.
    """

    def __init__(self, op):
        self.op = op
        self.weight = op.inputs[1]
        self.bias_add = self.batch_norm = None
        self.bypass = self.activation = self.post_bypass = None
        self.folded_output = self.batch_to_space = None

    @property
    def scope(self):
        """The layer op's name scope (see :func:`op_scope`)."""
        return op_scope(self.op)

    def output(self):
        """The tensor the layer op, its bias or its batch norm ends in:
        what a bypass Add or the activation reads (the folded layer's once
        its batch norm is folded)."""
        if self.folded_output is not None:
            return self.folded_output
        if self.batch_norm is not None:
            return self.batch_norm.output
        if self.bias_add is not None:
            return self.bias_add.outputs[0]
        if self.batch_to_space is not None:
            return self.batch_to_space.outputs[0]
        return self.op.outputs[0]

    def last(self):
        """The tensor the whole match ends in before a post-activation
        bypass (the activation's, else the bypass', else :meth:`output`)."""
        for op in (self.activation, self.bypass):
            if op is not None:
                return op.outputs[0]
        return self.output()


def in_control_flow(op):
    """Whether ``op`` is in a TF1 while loop or cond branch (where the
    rewrite could create no variable, nor read the global step)."""
    # pylint: disable=protected-access
    return op._get_control_flow_context() is not None


# Ops whose computation is a function body the rewrite does not enter:
# control flow v2 (TF 2.x's default, also for tf.nn.dynamic_rnn) and
# function calls (tf.function, Defun).
_FUNCTION_TYPES = ("While", "StatelessWhile", "If", "StatelessIf", "Case",
                   "StatelessCase", "PartitionedCall", "StatefulPartitionedCall")
_FUNCTION_REASON = (
    "a function body (control flow v2 or a function call): its ops are not "
    "rewritten (for TF1 loops, call tf.compat.v1.disable_control_flow_v2() "
    "or disable_v2_behavior() before building)")


def _is_function_call(op):
    """Whether ``op`` runs a function body (control flow v2, a call)."""
    # pylint: disable=protected-access
    return op.type in _FUNCTION_TYPES or op.graph._is_function(op.type)


def _is_residual_add(op, tensor):
    """An Add of ``tensor`` and another tensor of its shape (not a bias)."""
    if op is None or op.type not in _ADD_TYPES:
        return False
    other = [t for t in op.inputs if t is not tensor]
    return (len(other) == 1 and other[0].op.type != "Const"
            and other[0].shape.ndims == tensor.shape.ndims)


def _match(op):
    """The :class:`Layer` that starts at a layer op."""
    layer = Layer(op)
    out = op.outputs[0]
    nxt = only_consumer(out)
    if nxt is not None and nxt.type == "BatchToSpaceND":
        # A dilated convolution: SpaceToBatchND, Conv2D, BatchToSpaceND.
        layer.batch_to_space, out = nxt, nxt.outputs[0]
        nxt = only_consumer(out)
    if nxt is not None and nxt.type in _BIAS_TYPES:
        layer.bias_add, out = nxt, nxt.outputs[0]
    else:
        layer.batch_norm = batch_norm.match(out)
        if layer.batch_norm is not None:
            out = layer.batch_norm.output
    nxt = only_consumer(out)
    if _is_residual_add(nxt, out):
        layer.bypass, out = nxt, nxt.outputs[0]
        nxt = only_consumer(out)
    if nxt is not None and nxt.type in ACTIVATION_TYPES:
        layer.activation, out = nxt, nxt.outputs[0]
        # After the activation the output may go on to the next layer as
        # well; the Add is taken when it is one of its readers.
        adds = [c for c in out.consumers() if _is_residual_add(c, out)]
        if len(adds) == 1:
            layer.post_bypass = adds[0]
    return layer


def find_layers(graph, scope=None, report=None):
    """Every layer of ``graph`` the rewrite changes, in graph order.

    Args:
      graph: a ``tf.Graph``.
      scope: None, or a name scope: only layer ops whose name starts with
        it are taken.
      report: None, or a :class:`report.RewriteReport` that records each
        layer op left float and why.

    Returns:
      list of :class:`Layer`.
    """
    layers = []
    for op in graph.get_operations():
        if scope and not op.name.startswith(scope):
            continue
        if report is not None and _is_function_call(op):
            report.add_left_float(op, _FUNCTION_REASON)
        if op.type not in LAYER_TYPES:
            continue
        source = weight_source(op.inputs[1])
        if source == "quantized":
            continue  # quantized already (e.g. a cell with is_quant=True)
        if in_control_flow(op):
            if report is not None:
                report.add_left_float(op, "inside a TF1 while loop or cond")
            continue
        if source != "variable":
            if report is not None:
                report.add_left_float(op, "weights not read from a variable")
            continue
        layers.append(_match(op))
    return layers
