"""What one quantization rewrite did: the tensors it quantized and the
compute ops it left in float, each with the reason, so that nothing is
left float silently.

The rewrite fills a :class:`RewriteReport` as it goes (the FakeQuants it
inserts, and notes of why an op may stay float); at its end
:meth:`RewriteReport.finish` reads the graph it wrote
(:func:`audit.graph_float_ops`): an op is left float only if the graph
says so, with the rewrite's note as its reason when there is one.
``create_*_graph`` log its one-line summary (a warning when an op was left
float) and return it with ``report=True``.
"""
import collections
import logging

from tf1_awd_sparse.transforms.graph_quantize import audit

__all__ = ["LOGGER_NAME", "Quantized", "LeftFloat", "RewriteReport"]

#: The logger the rewrite's summary line goes to.
LOGGER_NAME = "tf1_awd_sparse.quantization"

#: A tensor the rewrite quantized: its name, the kind of FakeQuant
#: (``'weights_quant'``, ``'act_quant'``, ...) and the scope of its range
#: variables.
Quantized = collections.namedtuple("Quantized", ["tensor", "kind", "scope"])

#: An op the rewrite left in float: its name, type and why.
LeftFloat = collections.namedtuple("LeftFloat", ["op", "type", "reason"])


class RewriteReport(object):
    """The record of one ``create_training_graph`` / ``create_eval_graph``.

    Attributes:
      graph: the rewritten ``tf.Graph``.
      training: bool, the training (True) or eval (False) rewrite.
      quantized: list of :data:`Quantized`, in the order inserted.
      left_float: list of :data:`LeftFloat`: every ``Conv2D``,
        ``DepthwiseConv2dNative`` and ``MatMul`` (and other compute op the
        rewrite reasons about) that it did not quantize.
    """

    def __init__(self, graph, training):
        self.graph = graph
        self.training = training
        self.quantized = []
        self.left_float = []
        self._notes = collections.OrderedDict()
        #: Names of layer ops the rewrite replaced (folded with their batch
        #: norm: the original only feeds the batch statistics).
        self.replaced = set()
        #: None, or ``'training'`` / ``'eval'``: the graph had been
        #: rewritten so before, and this call changed nothing (as contrib's).
        self.previous = None

    def add_quantized(self, tensor, kind, scope):
        """Records a FakeQuant inserted on ``tensor`` (a ``tf.Tensor`` or
        its name) in the range scope ``scope``."""
        name = getattr(tensor, "name", tensor)
        self.quantized.append(Quantized(name, kind, scope))

    def add_left_float(self, op, reason):
        """Notes that ``op`` (a ``tf.Operation``) may stay float, and why
        (a short clause: ``'inside a control flow v2 While function'``).
        A product (``audit.PRODUCT_TYPES``) is listed only if
        :meth:`finish` finds it float in the graph; another op is
        listed as noted (the audit does not look into function bodies)."""
        self._notes[op.name] = (op, reason)

    def finish(self, scope=None):
        """Sets :attr:`left_float` from the rewritten graph: every product
        in ``scope`` whose weights or data are not fake-quantized
        (:func:`audit.graph_float_ops`), with its note's reason if noted,
        and every other op noted, in graph order."""
        found = {f.op.name: f for f in audit.graph_float_ops(
            self.graph, scope=scope, skip=self.replaced)}
        self.left_float = []
        for op in self.graph.get_operations():
            note = self._notes.get(op.name)
            if op.name in found:
                reason = note[1] if note else found[op.name].reason
            elif note and op.type not in audit.PRODUCT_TYPES:
                reason = note[1]
            else:
                continue
            self.left_float.append(LeftFloat(op.name, op.type, reason))

    def float_ops(self, reason_part=""):
        """The names of the ops left float whose reason contains
        ``reason_part`` (all of them by default)."""
        return [f.op for f in self.left_float if reason_part in f.reason]

    def summary(self):
        """One line: how many tensors were quantized and which ops were
        left float, grouped by reason."""
        kind = "training" if self.training else "eval"
        if self.previous is not None:
            return ("create_%s_graph: nothing done, the graph was rewritten "
                    "before (%s)" % (kind, self.previous))
        line = "create_%s_graph: %d tensors quantized" % (
            kind, len(self.quantized))
        if not self.left_float:
            return line + ", no layer op left float"
        by_reason = collections.OrderedDict()
        for entry in self.left_float:
            by_reason.setdefault(entry.reason, []).append(entry.op)
        parts = []
        for reason, ops in by_reason.items():
            shown = ", ".join(ops[:3]) + (", ..." if len(ops) > 3 else "")
            parts.append("%d %s (%s)" % (len(ops), reason, shown))
        return line + "; left float: " + "; ".join(parts)

    def log(self):
        """Logs :meth:`summary` to :data:`LOGGER_NAME`: a warning when an op
        was left float, else at INFO."""
        level = logging.WARNING if self.left_float else logging.INFO
        logging.getLogger(LOGGER_NAME).log(level, "%s", self.summary())

    def __str__(self):
        lines = [self.summary()]
        lines += ["  quantized  %-22s %s" % (q.kind, q.tensor)
                  for q in self.quantized]
        lines += ["  float      %-22s %s: %s" % (f.type, f.op, f.reason)
                  for f in self.left_float]
        return "\n".join(lines)
