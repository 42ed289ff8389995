"""The four functions of ``tf.contrib.quantize``, on every TensorFlow the
library supports: they rewrite a built TF1 graph in place for
quantization-aware training (``create_training_graph``) or for the
evaluation / export graph (``create_eval_graph``).

Call the training rewrite after the model is built and before the
optimizer (the gradients must go through the FakeQuant ops), then
``tf.global_variables_initializer()``; build the evaluation graph (batch
norms in inference mode) in a graph of its own, call the eval rewrite,
then restore the trained variables into it.
"""
import re

from tf1_awd_sparse.base import checks as _checks
from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.transforms.graph_quantize import (
    fold_batch_norm, insert, patterns)
from tf1_awd_sparse.transforms.graph_quantize.report import RewriteReport
from tf1_awd_sparse.transforms.graph_quantize._graph import (
    is_fake_quant, op_scope, reroute)

__all__ = ["GraphRewriteError", "REWRITTEN_COLLECTION",
           "create_training_graph", "create_eval_graph",
           "experimental_create_training_graph",
           "experimental_create_eval_graph"]

#: The graph collection a rewrite marks its graph in ('training' / 'eval').
REWRITTEN_COLLECTION = "tf1_awd_sparse_quantize_rewrite"


class GraphRewriteError(ValueError, Error):
    """The quantization rewrite was called on a graph it must not change:
    one that already holds training ops (optimizer updates or gradients:
    they would not see the FakeQuant ops), or one already rewritten."""


def _in_gradients(op):
    """Whether ``op`` was made by ``tf.gradients`` (its name scope is
    ``gradients``, ``gradients_1``, ..., at any depth)."""
    return any(re.match(r"gradients(_\d+)?$", part)
               for part in op.name.split("/")[:-1])


def _check_rewritable(graph, training):
    done = graph.get_collection(REWRITTEN_COLLECTION)
    if done:
        raise GraphRewriteError(
            "this graph was already rewritten for quantization (%s graph): "
            "rewrite a graph once, training or eval" % done[0])
    if not training:
        return
    for op in graph.get_operations():
        if (op.type.startswith(("Apply", "ResourceApply", "SparseApply",
                                "ResourceSparseApply"))
                or _in_gradients(op)):
            raise GraphRewriteError(
                "the graph already holds training ops (%s, %r): call "
                "create_training_graph after building the model and before "
                "the optimizer (minimize / compute_gradients)"
                % (op.type, op.name))


def _already_quantized(tensor):
    return any(is_fake_quant(op) for op in tensor.consumers())


def _quantize_layer(layer, settings):
    """Folds the layer's batch norm and inserts its FakeQuant ops."""
    if layer.batch_norm is not None:
        fold_batch_norm.fold(layer, settings)
    # Conv2D only: TF 2.15's converter rejects a per-channel MatMul weight
    # (its FullyConnected transposes it, "mismatched quantized axes").
    per_channel = settings.per_channel and layer.op.type == "Conv2D"
    quantized = insert.quantize_weight(layer.weight, layer.scope, settings,
                                       per_channel)
    # The layer op reads the quantized weights; other readers of the
    # variable (e.g. a tied embedding) are not this layer's.
    reroute(layer.weight, quantized, [layer.op])
    if layer.bypass is not None:
        insert.quantize_activation(layer.output(), layer.scope, "conv_quant",
                                   settings, readers=[layer.bypass])
    last = layer.last()
    scope = (op_scope(layer.bypass) if layer.bypass is not None
             else layer.scope)
    if not _already_quantized(last):
        insert.quantize_activation(last, scope, "act_quant", settings)
    post = layer.post_bypass
    if post is not None and not _already_quantized(post.outputs[0]):
        insert.quantize_activation(post.outputs[0], op_scope(post),
                                   "post_activation_bypass_quant", settings)


def _rewrite(input_graph, settings, scope, report):
    graph = _checks.check_graph(input_graph, "input_graph")
    if scope is not None and not isinstance(scope, str):
        raise ValueError("scope must be a name scope (str) or None, got %r"
                         % (scope,))
    report = _checks.check_bool(report, "report")
    _check_rewritable(graph, settings.training)
    record = settings.report = RewriteReport(graph, settings.training)
    with graph.as_default():
        layers = patterns.find_layers(graph, scope, record)
        for layer in layers:
            _quantize_layer(layer, settings)
        graph.add_to_collection(REWRITTEN_COLLECTION, "training"
                                if settings.training else "eval")
    record.log()
    return record if report else graph


def experimental_create_training_graph(input_graph=None, weight_bits=8,
                                       activation_bits=8, symmetric=False,
                                       quant_delay=0, freeze_bn_delay=None,
                                       scope=None, per_channel=False,
                                       report=False):
    """Rewrites a built training graph in place for quantization-aware
    training: batch norms folded into the layers before them, a FakeQuant
    on each layer's weights and on its activation (and around residual
    Adds), ranges learned while training.

    Matched layers: Conv2D, DepthwiseConv2dNative and MatMul on variable
    weights (not in a TF1 while loop or cond, not already quantized, e.g. by
    ``WeightDropLSTMCell(is_quant=True)``), with their BiasAdd or batch
    norm, residual Adds and Relu / Relu6 / Identity.

    Args:
      input_graph: the ``tf.Graph`` (default: the default graph).
      weight_bits, activation_bits: bit widths, ints in [2, 8].
      symmetric: ranges symmetric about 0 (weights and activations).
      quant_delay: int >= 0: FakeQuant is bypassed while the global step
        is below it (ranges are learned meanwhile). The global step is
        created if missing; the optimizer must increment it.
      freeze_bn_delay: None or int >= 0: from this global step on the
        folded batch norms use (and stop updating) their moving statistics.
      scope: None, or a name scope: only layers inside it are rewritten.
      per_channel: beyond contrib: Conv2D weights get one symmetric range
        per output channel (``[C]`` variables,
        FakeQuantWithMinMaxVarsPerChannel), the form TF 2.x's converter
        turns into int8 per-channel weights (``inference_type=tf.int8``;
        TF 1.x's TOCO makes no working int8 file). Other layers' weights
        keep one range, symmetric (int8 wants zero points at 0; 2.15's
        converter rejects a per-channel MatMul).
      report: beyond contrib: return a :class:`report.RewriteReport`
        (what was quantized, what was left float and why) instead of the
        graph. Either way its summary line is logged to the
        ``tf1_awd_sparse.quantization`` logger, as a warning when a layer
        op was left float.

    Returns:
      the rewritten graph, or its report with ``report=True``.

    Raises:
      GraphRewriteError (a ValueError): the graph holds training ops or was
        rewritten before.
      ValueError: an argument out of its domain.
    """
    settings = insert.Settings(True, weight_bits, activation_bits, symmetric,
                               quant_delay, freeze_bn_delay, per_channel)
    return _rewrite(input_graph, settings, scope, report)


def experimental_create_eval_graph(input_graph=None, weight_bits=8,
                                   activation_bits=8, symmetric=False,
                                   quant_delay=None, scope=None,
                                   per_channel=False, report=False):
    """Rewrites a built evaluation graph (batch norms in inference mode) in
    place with the training rewrite's FakeQuant ops, reading the ranges it
    learned (restore them after this call), batch norms folded with their
    moving statistics: the graph to evaluate and export.

    Args: as :func:`experimental_create_training_graph` (``quant_delay``
      None: quantized from the start; the arguments must be the training
      rewrite's).

    Returns:
      the rewritten graph, or its report with ``report=True``.

    Raises:
      GraphRewriteError (a ValueError): the graph was rewritten before.
      ValueError: an argument out of its domain.
    """
    settings = insert.Settings(False, weight_bits, activation_bits, symmetric,
                               quant_delay, per_channel=per_channel)
    return _rewrite(input_graph, settings, scope, report)


def create_training_graph(input_graph=None, quant_delay=0):
    """:func:`experimental_create_training_graph` with 8-bit weights and
    activations, asymmetric ranges, no batch norm freezing and no scope.

    Raises:
      GraphRewriteError, ValueError: as there.
    """
    return experimental_create_training_graph(input_graph,
                                              quant_delay=quant_delay)


def create_eval_graph(input_graph=None):
    """:func:`experimental_create_eval_graph` with its defaults (8 bits,
    asymmetric): for a graph trained with :func:`create_training_graph`.

    Raises:
      GraphRewriteError, ValueError: as there.
    """
    return experimental_create_eval_graph(input_graph)
