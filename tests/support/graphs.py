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


def eval_graph_file(build, name, data, checkpoint, input_range, path):
    """The rewrite's evaluation graph of ``build`` (a function of the
    float placeholder ``name`` of ``data``'s shape, returning the output),
    restored from ``checkpoint``, converted to a uint8 ``.tflite`` file at
    ``path`` whose input is quantized over ``input_range``.

    Returns:
      (the graph, the graph's output on ``data``: what the file should give).
    """
    import tensorflow.compat.v1 as tf
    from tf1_awd_sparse import quantization as quantize
    from tf1_awd_sparse.export.graphdef import convert, nudged_quantization
    with tf.Graph().as_default() as graph:
        inputs = tf.placeholder(tf.float32, data.shape, name)
        output = build(inputs)
        quantize.create_eval_graph()
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, checkpoint)
            expected = sess.run(output, {inputs: data})
            scale, zero_point = nudged_quantization(*input_range)
            model = convert(sess, [inputs], [output],
                            {name: (zero_point, 1.0 / scale)})
    with open(path, "wb") as handle:
        handle.write(model)
    return graph, expected
