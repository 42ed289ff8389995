"""Small facts about ops and tensors that the rewrite's modules share, and
the two changes it makes to ops it did not build (through the graph's
private methods: public TensorFlow has no way to change a built op)."""
import re

__all__ = []

# What stands between a variable and the op that uses its value (Enter:
# a TF1 while loop's entry of a value read outside it).
_READ_TYPES = ("Identity", "ReadVariableOp", "Enter")
_VARIABLE_TYPES = ("VariableV2", "Variable", "VarHandleOp")


def in_gradients(op):
    """Whether ``op`` was made by ``tf.gradients`` (its name scope is
    ``gradients``, ``gradients_1``, ..., at any depth)."""
    return any(re.match(r"gradients(_\d+)?$", part)
               for part in op.name.split("/")[:-1])


def is_fake_quant(op):
    """Whether ``op`` is one of TensorFlow's FakeQuant ops."""
    return op.type.startswith("FakeQuantWithMinMax")


def op_scope(op):
    """The name scope ``op`` was made in, with its trailing slash ('' at
    the root): where the rewrite puts the ops it adds for ``op``."""
    return op.name.rpartition("/")[0] + "/" if "/" in op.name else ""


def only_consumer(tensor):
    """The one op that reads ``tensor``, or None (no chaining through a
    tensor that several ops read: rewiring it would change them all)."""
    consumers = tensor.consumers()
    return consumers[0] if len(consumers) == 1 else None


def _read_chain(tensor):
    """The ops from ``tensor`` back through reads and identities (at most
    8), ending at the first op that is no read."""
    op = tensor.op
    for _ in range(8):
        yield op
        if op.type not in _READ_TYPES or not op.inputs:
            return
        op = op.inputs[0].op


def weight_source(tensor):
    """``"variable"`` when ``tensor`` is a variable's value (through reads
    and identities), ``"quantized"`` when a FakeQuant op is on that way,
    else None."""
    for op in _read_chain(tensor):
        if is_fake_quant(op):
            return "quantized"
        if op.type in _VARIABLE_TYPES:
            return "variable"
    return None


def variable_op(tensor):
    """The variable op whose value ``tensor`` is (through reads and
    identities), or None."""
    for op in _read_chain(tensor):
        if op.type in _VARIABLE_TYPES:
            return op
    return None


def reroute(old, new, readers):
    """Makes each op of ``readers`` read ``new`` where it read ``old``
    (``readers`` is taken before the ops computing ``new`` from ``old``
    were built, so that those keep reading ``old``)."""
    for op in readers:
        for index, tensor in enumerate(op.inputs):
            if tensor is old:
                # The graph's own in-place input swap: public TensorFlow has
                # none (contrib's graph_editor did the same).
                op._update_input(index, new)  # pylint: disable=W0212


def run_after(op, ops):
    """Makes the built op ``op`` wait for ``ops`` (control inputs)."""
    for before in ops:
        op._add_control_input(before)  # pylint: disable=W0212
