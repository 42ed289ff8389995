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
from tf1_awd_sparse.base import checks as _checks
from tf1_awd_sparse.base import scalar_checks as _scalar_checks
from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.transforms.graph_quantize import (
    fold_batch_norm, insert, patterns, recurrent)
from tf1_awd_sparse.transforms.graph_quantize.report import RewriteReport
from tf1_awd_sparse.transforms.graph_quantize._graph import (
    in_gradients, is_fake_quant, op_scope, reroute)

__all__ = ["GraphRewriteError", "REWRITTEN_COLLECTION",
           "create_training_graph", "create_eval_graph",
           "experimental_create_training_graph",
           "experimental_create_eval_graph"]

#: The graph collection a rewrite marks its graph in ('training' / 'eval').
REWRITTEN_COLLECTION = "tf1_awd_sparse_quantize_rewrite"


class GraphRewriteError(ValueError, Error):
    """The training rewrite was called on a graph that already holds
    training ops (optimizer updates or gradients: they would not see the
    FakeQuant ops), as contrib refuses it. (A second rewrite of a graph is
    no error: as contrib's, it changes nothing.)"""


def _check_rewritable(graph, training):
    if not training:
        return
    for op in graph.get_operations():
        if (op.type.startswith(("Apply", "ResourceApply", "SparseApply",
                                "ResourceSparseApply"))
                or in_gradients(op)):
            raise GraphRewriteError(
                "the graph already holds training ops (%s, %r): call "
                "create_training_graph after building the model and before "
                "the optimizer (minimize / compute_gradients)"
                % (op.type, op.name))


def _already_quantized(tensor):
    return any(is_fake_quant(op) for op in tensor.consumers())


# contrib's rule for the outputs of arithmetic on quantized tensors: the
# ops whose output gets a FakeQuant, the ops looked through to find a
# quantized input, and the activations that make the FakeQuant needless.
_ARITHMETIC_TYPES = ("Add", "AddV2", "Mul")
_PASS_THROUGH_TYPES = ("Reshape", "Identity", "BatchToSpaceND",
                       "SpaceToBatchND", "MaxPool", "Max")
_RELU_TYPES = ("Relu", "Relu6")


def _reads_quantized(op):
    """Whether an Add / AddV2 / Mul ``op`` needs a FakeQuant on its output
    (contrib's rule): it is not quantized already nor read by a Relu /
    Relu6 alone, and one of its inputs, looked at through pass-through ops,
    is quantized (a FakeQuant or a quant-delay Merge) or is such an Add /
    Mul whose own inputs qualify."""
    if op.type not in _ARITHMETIC_TYPES or _already_quantized(op.outputs[0]):
        return False
    readers = op.outputs[0].consumers()
    if len(readers) == 1 and readers[0].type in _RELU_TYPES:
        return False
    for tensor in op.inputs:
        source = _pass_through(tensor).op
        if is_fake_quant(source) or source.name.endswith("delayed_quant/Merge"):
            return True
        if source.type in _ARITHMETIC_TYPES and any(
                _reads_quantized(t.op) for t in source.inputs):
            return True
    return False


def _quantize_arithmetic(graph, settings, scope):
    """A FakeQuant after each Add / AddV2 / Mul that computes on quantized
    activations (``<op>/activation_<type>_quant``, as contrib names it),
    in graph order, so that an op reading one quantized here qualifies."""
    for op in graph.get_operations():
        if scope and not op.name.startswith(scope):
            continue
        if patterns.in_control_flow(op) or not _reads_quantized(op):
            continue
        # Asymmetric whatever ``symmetric`` says, as contrib's.
        insert.quantize_activation(op.outputs[0], op.name + "/",
                                   "activation_%s_quant" % op.type, settings,
                                   symmetric=False)


def _pass_through(tensor):
    while tensor.op.type in _PASS_THROUGH_TYPES and tensor.op.inputs:
        tensor = tensor.op.inputs[0]
    return tensor


def _quantize_means(layers, settings):
    """Beyond contrib: a FakeQuant after a Mean of quantized activations that
    a layer reads (global average pooling before a head): TF 2.x's
    converter gives a Mean no range of its own, so the head would run in
    float (``<Mean>/activation_Mean_quant``, asymmetric)."""
    for layer in layers:
        mean = _pass_through(layer.op.inputs[0]).op
        if mean.type != "Mean" or _already_quantized(mean.outputs[0]):
            continue
        source = _pass_through(mean.inputs[0]).op
        if is_fake_quant(source) or source.name.endswith(
                "delayed_quant/Merge"):
            insert.quantize_activation(mean.outputs[0], mean.name + "/",
                                       "activation_Mean_quant", settings,
                                       symmetric=False)


def _quantize_layer(layer, settings):
    """Folds the layer's batch norm and inserts its FakeQuant ops."""
    if layer.batch_norm is not None:
        settings.report.replaced.add(layer.op.name)
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
    if layer.activation is not None and layer.activation.type == "Identity":
        # Before an Identity, not after it as contrib: it is often the
        # model's named output (tf.identity(x, "logits")), which must read
        # the FakeQuant for the converter to have its range.
        last = layer.activation.inputs[0]
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
    report = _scalar_checks.check_bool(report, "report")
    record = settings.report = RewriteReport(graph, settings.training)
    # As contrib's: a training rewrite refuses a graph with training ops
    # (their gradients would miss the FakeQuants) even if rewritten before;
    # otherwise a second call changes nothing (code written for contrib
    # calls it again, e.g. once per tower).
    _check_rewritable(graph, settings.training)
    done = graph.get_collection(REWRITTEN_COLLECTION)
    if done:
        record.previous = done[0]
    else:
        with graph.as_default():
            recurrent.quantize_cells(graph, settings, scope)
            layers = patterns.find_layers(graph, scope, record)
            for layer in layers:
                _quantize_layer(layer, settings)
            _quantize_arithmetic(graph, settings, scope)
            _quantize_means(layers, settings)
            graph.add_to_collection(REWRITTEN_COLLECTION, "training"
                                    if settings.training else "eval")
        record.finish(scope)
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


def create_training_graph(input_graph=None, quant_delay=0, report=False):
    """:func:`experimental_create_training_graph` with 8-bit weights and
    activations, asymmetric ranges, no batch norm freezing and no scope
    (``report``: as there).

    Raises:
      GraphRewriteError, ValueError: as there.
    """
    return experimental_create_training_graph(input_graph,
                                              quant_delay=quant_delay,
                                              report=report)


def create_eval_graph(input_graph=None, report=False):
    """:func:`experimental_create_eval_graph` with its defaults (8 bits,
    asymmetric): for a graph trained with :func:`create_training_graph`
    (``report``: as there).

    Raises:
      GraphRewriteError, ValueError: as there.
    """
    return experimental_create_eval_graph(input_graph, report=report)
