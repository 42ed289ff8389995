"""Walking a graph's ops."""


def ancestors(ops):
    """Every op that ``ops`` depend on, through inputs and control
    inputs, ``ops`` included (a set of ``tf.Operation``)."""
    seen, stack = set(), list(ops)
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return seen


def forward_quants(graph):
    """The FakeQuantWithMinMaxVars ops of the forward pass (not of the
    gradients)."""
    return [op for op in graph.get_operations()
            if op.type == "FakeQuantWithMinMaxVars"
            and not op.name.startswith("gradients")]
