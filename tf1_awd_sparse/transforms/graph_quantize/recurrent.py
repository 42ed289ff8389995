"""Quantizing TensorFlow's own recurrent cells (``LSTMCell``,
``BasicLSTMCell``, ``GRUCell``) in a built graph: under
``tf.nn.dynamic_rnn`` / ``bidirectional_dynamic_rnn`` (inside a TF1 while
loop) and called once on placeholders (a streaming, one-step graph).

A cell step is found by its shape: a ``MatMul`` of a ``ConcatV2`` (the
``[inputs, state]`` concatenation) by a variable's value, with the other
ops of the step in the same name scope. In that scope the rewrite
quantizes what a full-integer TFLite graph of the step needs:

* each kernel once, outside the loop (a weight is loop-invariant; the
  loop's ``Enter`` of it is rerouted to the FakeQuant), by
  ``insert.quantize_weight`` (one per variable);
* the outputs of ``ConcatV2``, ``BiasAdd`` (matmul + bias), and each
  ``Add`` / ``AddV2`` / ``Sub`` / ``Mul``, on learned ranges;
* the outputs of ``Sigmoid`` / ``Tanh``, on the fixed ranges TFLite's
  8-bit kernels write (``fake_quant.fixed_output_range``).

The range design is the library's own quantized cell's
(``ops.fake_quant.RangeSet``), for the reason given there: the ranges are
read (and, in training, the last run's observations folded into their
moving averages) once per ``session.run``, outside the loop, so every time
step of a run quantizes on the same grids, as the exported model will;
each step adds its minima and maxima to one accumulator (one
``assign_add`` per step, in the loop). A moving average updated at every
step inside the loop would instead move the grids between the steps of one
sequence and race between parallel iterations.

The range variables are named from the cell's variable scope (the scope of
its kernels, without the loop's ``while/``): ``<cell>/quant/<op>/min``,
``max``, ``quant/observed``, ``quant/initialized``, where ``<op>`` is the
quantized op's name within the step's scope. A one-step graph of the cell
built in the same variable scope therefore has the same variables, and a
plain ``tf.train.Saver`` restores it from the training checkpoint.

Left to the plain layer rewrite (weights and matmul + bias quantized, as
contrib does), with the gates and state float, and reported: the steps of
``tf.nn.static_rnn``, which share one name scope, so that its steps cannot
be told apart by name.
"""
import collections

from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.ops import fake_quant as fq
from tf1_awd_sparse.transforms.graph_quantize import insert
from tf1_awd_sparse.transforms.graph_quantize._graph import (
    is_fake_quant, op_scope, reroute, variable_op)

__all__ = ["LEARNED_TYPES", "FIXED_TYPES", "quantize_cells"]

#: Op types whose output a cell step quantizes on a learned range.
LEARNED_TYPES = ("ConcatV2", "BiasAdd", "Add", "AddV2", "Sub", "Mul")
#: Op types whose output has a fixed TFLite range: type -> kind.
FIXED_TYPES = {"Sigmoid": "sigmoid", "Tanh": "tanh"}

_STATIC_REASON = (
    "a step of a cell whose steps share one name scope (tf.nn.static_rnn): "
    "quantized as a plain layer (weights, matmul + bias), its gates and "
    "state left float; build with dynamic_rnn, or export a one-step graph")


def _context(op):
    return op._get_control_flow_context()  # pylint: disable=W0212


def _kernel_read(matmul):
    """The tensor outside any loop that ``matmul``'s weight input is (the
    input itself, or what a loop's ``Enter`` ops bring in), and the op to
    reroute (the ``Enter`` reading it, or ``matmul``)."""
    tensor, reader = matmul.inputs[1], matmul
    while tensor.op.type == "Enter":
        reader, tensor = tensor.op, tensor.op.inputs[0]
    return tensor, reader


def _is_cell_matmul(op):
    if op.type != "MatMul" or op.inputs[0].op.type != "ConcatV2":
        return False
    kernel, _ = _kernel_read(op)
    return variable_op(kernel) is not None and not is_fake_quant(kernel.op)


def _variable_scope(kernels):
    """The longest common scope of the kernels' variables (``'rnn/
    lstm_cell/'``; a GRU's gates/ and candidate/ kernels share theirs)."""
    parts = [variable_op(k).name.split("/")[:-1] for k in kernels]
    common = []
    for level in zip(*parts):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return "/".join(common) + "/" if common else ""


class _Step(object):
    """One cell step: its name scope, MatMuls and the ops to quantize."""

    def __init__(self, scope, matmuls):
        self.scope, self.matmuls = scope, matmuls
        self.kernels = [_kernel_read(m)[0] for m in matmuls]
        self.cell_scope = _variable_scope(self.kernels)
        graph = matmuls[0].graph
        self.ops = [op for op in graph.get_operations()
                    if op_scope(op) == scope]
        self.learned = [op for op in self.ops if op.type in LEARNED_TYPES
                        and op.outputs[0].dtype == tf.float32
                        and not _followed_by_fake_quant(op)]
        self.fixed = [op for op in self.ops if op.type in FIXED_TYPES
                      and not _followed_by_fake_quant(op)]

    def role(self, op):
        """The op's name within the step's scope: what names its range."""
        return op.name[len(self.scope):]


def _followed_by_fake_quant(op):
    return any(is_fake_quant(c) for c in op.outputs[0].consumers())


def find_steps(graph, scope=None, report=None):
    """The cell steps of ``graph``, grouped by the cell's variable scope.

    Returns:
      ``OrderedDict`` cell scope -> list of :class:`_Step`.
    """
    by_scope = collections.OrderedDict()
    for op in graph.get_operations():
        if scope and not op.name.startswith(scope):
            continue
        if _is_cell_matmul(op):
            by_scope.setdefault(op_scope(op), []).append(op)
    cells = collections.OrderedDict()
    for name_scope, matmuls in by_scope.items():
        kernels = [variable_op(_kernel_read(m)[0]) for m in matmuls]
        if len(set(kernels)) != len(kernels):
            if report is not None:
                for matmul in matmuls:
                    report.add_left_float(matmul, _STATIC_REASON)
            continue
        step = _Step(name_scope, matmuls)
        cells.setdefault(step.cell_scope, []).append(step)
    return cells


class _CellRanges(object):
    """The learned ranges of one cell (shared by its steps: a forward and
    a backward cell are two cells; the steps of a loop are one step op
    set)."""

    def __init__(self, cell_scope, roles, settings):
        self.ranges = fq.RangeSet(roles, ema_decay=insert.EMA_DECAY,
                                  init_range=(0.0, 6.0))
        with tf.variable_scope(cell_scope.rstrip("/") or None,
                               reuse=tf.AUTO_REUSE, auxiliary_name_scope=False):
            self.ranges.create_variables(
                fq.range_variable_creator(tf.get_variable))
        self.run = self.ranges.run_ranges(settings.training)
        self.training = settings.training


def _fake_quant(tensor, low, high, bits, active):
    quantized = fq.fake_quant(tensor, low, high, bits)
    if active is None:
        return quantized
    return tf.where(tf.fill(tf.shape(tensor), active), quantized, tensor)


def _quantize_step(step, cell, settings, active):
    """Inserts the step's activation FakeQuants (in its loop's context) and,
    in training, the per-step observation of their inputs."""
    bits = settings.activation_bits
    context = _context(step.matmuls[0])
    if context is not None:
        context.Enter()
    try:
        with tf.name_scope(step.scope):
            seen, outputs = {}, []
            for op in step.ops:
                tensor = op.outputs[0]
                if op in step.learned:
                    role = step.role(op)
                    seen[role] = tensor
                    low, high = cell.run[role]
                    kind = "quant/" + role
                elif op in step.fixed:
                    low, high = fq.fixed_output_range(FIXED_TYPES[op.type],
                                                      bits)
                    kind = "fixed_quant"
                else:
                    continue
                readers = list(tensor.consumers())
                with tf.name_scope(step.role(op) + "_quant"):
                    quantized = _fake_quant(tensor, low, high, bits, active)
                reroute(tensor, quantized, readers)
                settings.record(tensor, kind, step.cell_scope)
                outputs.append((quantized, readers))
            if cell.training and seen:
                _observe_each_step(step, cell, seen, outputs)
    finally:
        if context is not None:
            context.Exit()


def _observe_each_step(step, cell, seen, outputs):
    """Makes the step's exits (quantized tensors read outside its scope)
    wait for its observation, so that it runs at every step; nothing the
    observation reads depends on them."""
    observe = cell.ranges.observe(seen)
    for quantized, readers in outputs:
        outside = [r for r in readers if op_scope(r) != step.scope]
        if not outside:
            continue
        with tf.control_dependencies([observe]):
            gated = tf.identity(quantized, name="observed")
        reroute(quantized, gated, outside)


def quantize_cells(graph, settings, scope=None):
    """Quantizes every cell step of ``graph`` (see the module docstring).

    Args:
      graph: the ``tf.Graph`` (its default graph context entered).
      settings: the rewrite's ``insert.Settings`` (its report records each
        FakeQuant and each step left float).
      scope: None, or a name scope: only steps inside it.

    Returns:
      the number of cell steps quantized.
    """
    cells = find_steps(graph, scope, settings.report)
    active = None
    if settings.training and settings.quant_delay:
        active = settings.reached(settings.quant_delay)
    count = 0
    for cell_scope, steps in cells.items():
        for step in steps:
            for matmul, kernel in zip(step.matmuls, step.kernels):
                _, reader = _kernel_read(matmul)
                weight_scope = (variable_op(kernel).name.rpartition("/")[0]
                                + "/")
                quantized = insert.quantize_weight(kernel, weight_scope,
                                                   settings)
                reroute(kernel, quantized, [reader])
        roles = sorted({s.role(op) for s in steps for op in s.learned})
        cell = _CellRanges(cell_scope, roles, settings)
        for step in steps:
            _quantize_step(step, cell, settings, active)
            count += 1
    return count
