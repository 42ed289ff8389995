"""`transforms.graph_quantize.fold_batch_norm.fold`, through the rewrite
that calls it: a batch norm folded into the layer before it (conv fused and
unfused, depthwise, matmul, slim's reshaped 2-D one, dilated) computes the
batch norm's own output, with batch statistics in training and moving ones
in evaluation, before ``freeze_bn_delay`` and after it (what inference
computes, the moving statistics, in numpy).

The references: the batch norm's output in the same graph (its readers
are rerouted, it still computes), with the folded weights' FakeQuant fed
the weights it quantizes, and numpy's inference batch norm."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from support.graphs import forward_quants

SHAPE = [4, 8, 8, 3]


def _bn_layer(kind, x, training):
    """A layer then a tf.layers batch norm (on every version)."""
    if kind == "depthwise":
        w = tf.get_variable("dw", [3, 3, 3, 2])
        h = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
    elif kind == "matmul":
        h = tf.layers.dense(tf.layers.flatten(x), 5, use_bias=False,
                            name="d1")
    elif kind == "matmul_reshaped":     # slim's 2-D batch norm, by hand
        h = tf.layers.dense(tf.layers.flatten(x), 5, use_bias=False,
                            name="d1")
        h = tf.layers.batch_normalization(tf.reshape(h, [-1, 1, 1, 5]),
                                          training=training, name="bn")
        return tf.reshape(h, [-1, 5])
    elif kind == "dilated":
        h = tf.layers.conv2d(x, 4, 3, dilation_rate=2, use_bias=False,
                             padding="same", name="c1")
    else:
        h = tf.layers.conv2d(x, 4, 3, use_bias=False, name="c1")
    return tf.layers.batch_normalization(
        h, fused=kind != "unfused" and kind != "matmul", training=training,
        name="bn")


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("kind", ["fused", "unfused", "depthwise", "matmul",
                                  "matmul_reshaped", "dilated"])
def test_folded_layer_is_the_batch_norm(kind, training):
    """With its weights' FakeQuant fed the weights it quantizes, the folded
    layer computes the batch norm's output (batch statistics in training,
    moving ones in evaluation), before freeze_bn_delay and after it."""
    rng = np.random.RandomState(1)
    for freeze in (None, 0):
        with tf.Graph().as_default() as graph:
            tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32, SHAPE)
            norm = _bn_layer(kind, x, training)
            y = tf.nn.relu(norm)
            rewrite = (quantize.experimental_create_training_graph if training
                       else quantize.experimental_create_eval_graph)
            rewrite(**({"freeze_bn_delay": freeze} if training else {}))
            weight_quant = [op for op in forward_quants(graph)
                            if op.get_attr("narrow_range")]
            assert len(weight_quant) == 1, weight_quant
            folded = y.op.inputs[0]
            assert folded.op.name.endswith("add_fold")
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for v in tf.global_variables():
                    if "moving" in v.op.name or "gamma" in v.op.name:
                        v.load(rng.uniform(0.5, 2.0, v.shape), sess)
                feed = {x: rng.randn(*SHAPE).astype(np.float32)}
                feed[weight_quant[0].outputs[0]] = sess.run(
                    weight_quant[0].inputs[0], feed)
                if training and freeze == 0:
                    # Frozen: what inference computes, moving statistics.
                    want = _inference_norm(sess, norm, feed)
                else:
                    want = sess.run(norm, feed)
                np.testing.assert_allclose(sess.run(folded, feed), want,
                                           rtol=1e-4, atol=1e-4)
        if not training:
            break


def _inference_norm(sess, norm, feed):
    """The batch norm's output with its moving statistics (numpy)."""
    graph = norm.graph
    values = {n: sess.run(graph.get_tensor_by_name("bn/%s:0" % n))
              for n in ("gamma", "beta", "moving_mean", "moving_variance")}
    fused = [op for op in graph.get_operations()
             if op.type.startswith("FusedBatchNorm")]
    if fused:
        source = fused[0].inputs[0]
    else:
        source = [op for op in graph.get_operations()
                  if op.type in ("Conv2D", "DepthwiseConv2dNative", "MatMul")
                  and not op.name.endswith("_Fold")][0].outputs[0]
    h = sess.run(source, feed).reshape(norm.shape.as_list())
    return (values["gamma"] * (h - values["moving_mean"])
            / np.sqrt(values["moving_variance"] + 1e-3) + values["beta"])
