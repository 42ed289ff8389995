"""The rewrite's report is read from the graph it wrote, and the FakeQuants
sit where the converter needs them (issue 54, items 3, 4 and 10):

* TF's LSTMCell / GRUCell under dynamic_rnn with ``quant_delay`` > 0: no
  MatMul reported float whose inputs are fake-quantized (checked against
  the graph here), and the delay switch's direction (before the delay the
  float graph, after it the quant_delay=0 rewrite);
* a head behind ``tf.identity`` and behind ``reduce_mean``: quantized
  (numpy fake quant of the float value), where contrib leaves it float;
* an Add / Mul reading a quantized activation through ``tf.identity``
  gets its FakeQuant, as contrib's;
* resource weights read twice: one weight FakeQuant.
"""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from tf1_awd_sparse.transforms.graph_quantize.audit import graph_float_ops
from support.references import fake_quant as np_fake_quant
from support.versions import contrib, needs_contrib

BATCH, TIME, DEPTH, UNITS, DELAY = 3, 4, 2, 5, 3
CELLS = {"lstm": lambda: tf.nn.rnn_cell.LSTMCell(UNITS),
         "gru": lambda: tf.nn.rnn_cell.GRUCell(UNITS)}
_ONE_THREAD = tf.ConfigProto(inter_op_parallelism_threads=1,
                             intra_op_parallelism_threads=1)
_PASS = ("Identity", "Enter", "Switch")


def _is_fq(op):
    return op.type.startswith("FakeQuantWithMinMax")


def _fake_quantized(tensor):
    """The test's own reading: ``tensor`` is a FakeQuant's output through
    Identity / Enter / Switch, or a Merge / Select one of whose two
    branches is, the other being that FakeQuant's input (the delay)."""
    op = tensor.op
    while op.type in _PASS:
        op = op.inputs[0].op
    if _is_fq(op):
        return True
    if op.type in ("Merge", "Select", "SelectV2"):
        branches = op.inputs[-2:]
        done = [t for t in branches if _fake_quantized(t)]
        return len(done) == 2 or (len(done) == 1 and any(
            _raw(t).name == _raw(_quant_op(done[0]).inputs[0]).name
            for t in branches if t.name != done[0].name))
    return False


def _raw(tensor):
    while tensor.op.type in _PASS:
        tensor = tensor.op.inputs[0]
    return tensor


def _quant_op(tensor):
    op = _raw(tensor).op
    if op.type in ("Merge", "Select", "SelectV2"):
        return next(_quant_op(t) for t in op.inputs[-2:]
                    if _fake_quantized(t))
    return op


def _forward_matmuls(graph):
    return [op for op in graph.get_operations() if op.type == "MatMul"
            and not op.name.startswith("gradients")]


def _rnn(cell, x):
    seq, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="rnn")
    return seq


@pytest.mark.parametrize("delay", [0, DELAY])
@pytest.mark.parametrize("cell", sorted(CELLS))
def test_recurrent_report_names_no_quantized_matmul(cell, delay):
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [BATCH, TIME, DEPTH])
        tf.layers.dense(_rnn(CELLS[cell](), x)[:, -1], 2, name="head")
        report = quantize.create_training_graph(quant_delay=delay,
                                                report=True)
        loop = [op for op in _forward_matmuls(graph) if "/while/" in op.name]
    assert len(loop) == (1 if cell == "lstm" else 2)
    # Each cell product reads a fake-quantized concat and kernel (through
    # the loop's Enter and, with a delay, the switch).
    for op in loop:
        assert _fake_quantized(op.inputs[0]) and _fake_quantized(
            op.inputs[1]), op.name
    # The head's kernel is; its data is the loop's output, written to the
    # output TensorArray from a fake-quantized tensor.
    head = graph.get_operation_by_name("head/MatMul")
    assert _fake_quantized(head.inputs[1])
    writes = [op for op in graph.get_operations()
              if op.type == "TensorArrayWriteV3" and "/while/" in op.name]
    assert writes and all(_fake_quantized(w.inputs[2]) for w in writes)
    assert report.left_float == [], report.summary()
    assert "no layer op left float" in report.summary()


def test_report_names_what_the_graph_leaves_float():
    """The other direction: a product whose kernel the graph does not
    quantize is named, whatever the rewrite meant."""
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [BATCH, DEPTH])
        w = tf.get_variable("w", [DEPTH, UNITS])
        tf.nn.relu(tf.matmul(x, w, name="product"))
        report = quantize.create_training_graph(report=True)
        # Cut the product's kernel off its FakeQuant afterwards: the audit
        # of the graph sees it, the rewrite's intentions do not.
        product = graph.get_operation_by_name("product")
        assert _fake_quantized(product.inputs[1])
        product._update_input(1, w.value())  # pylint: disable=W0212
        found = graph_float_ops(graph)
    assert report.left_float == []
    assert [(f.op.name, "weights" in f.reason) for f in found] == [
        ("product", True)]


def _delay_graph(cell_name, delay):
    """(x, rewritten sequence, the float sequence of the same variables
    built after the rewrite) of a training rewrite with ``delay``."""
    tf.set_random_seed(4)
    step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [BATCH, TIME, DEPTH], name="x")
    cell = CELLS[cell_name]()
    seq = _rnn(cell, x)
    quantize.create_training_graph(quant_delay=delay)
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        float_seq = _rnn(cell, x)
    return step, x, seq, float_seq


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_quant_delay_switch_direction_in_tf_cells(cell, tmp_path):
    data = np.random.RandomState(1).uniform(
        -2, 2, [BATCH, TIME, DEPTH]).astype(np.float32)
    path = str(tmp_path / "start")
    with tf.Graph().as_default():
        step, x, seq, float_seq = _delay_graph(cell, DELAY)
        with tf.Session(config=_ONE_THREAD) as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, path)
            step.load(DELAY - 1, sess)
            before, reference = sess.run([seq, float_seq], {x: data})
        with tf.Session(config=_ONE_THREAD) as sess:
            tf.train.Saver().restore(sess, path)
            step.load(DELAY, sess)
            after, float_after = sess.run([seq, float_seq], {x: data})
    with tf.Graph().as_default():
        _, x, seq, _ = _delay_graph(cell, 0)
        with tf.Session(config=_ONE_THREAD) as sess:
            tf.train.Saver().restore(sess, path)
            quantized = sess.run(seq, {x: data})
    # Before the delay: TF's float cell; from it on: the quantized cell
    # (the rewrite without a delay, from the same variables and ranges).
    np.testing.assert_allclose(before, reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(after, quantized, rtol=1e-6, atol=1e-6)
    assert np.abs(quantized - float_after).max() > 1e-3


def _head_model(x, kind):
    """A relu dense layer, then a head: behind tf.identity, or after a
    reduce_mean of the relu layer's output, named ``logits``."""
    h = tf.layers.dense(x, 6, activation=tf.nn.relu, name="body")
    if kind == "mean":
        h = tf.reduce_mean(tf.reshape(h, [BATCH, 3, 2]), axis=1)
    return tf.identity(tf.layers.dense(h, 2, name="head"), name="logits")


def _rewrite_and_run(kind, rewrite):
    rng = np.random.RandomState(2)
    data = rng.uniform(-1, 1, [BATCH, DEPTH]).astype(np.float32)
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(2)
        x = tf.placeholder(tf.float32, [BATCH, DEPTH])
        logits = _head_model(x, kind)
        rewrite()
        head_quants = [op for op in graph.get_operations()
                       if _is_fq(op) and op.name.startswith("head/")
                       and not op.get_attr("narrow_range")]
        assert len(head_quants) == 1
        quant = head_quants[0]
        fetch = {"logits": logits, "float": quant.inputs[0],
                 "low": quant.inputs[1], "high": quant.inputs[2],
                 "quant": quant.outputs[0]}
        with tf.Session(config=_ONE_THREAD) as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(fetch, {x: data})
        head = graph.get_operation_by_name("head/MatMul")
        return {"values": values, "found": graph_float_ops(graph, [logits]),
                "logits_quantized": _fake_quantized(logits),
                "head_data_quantized": _fake_quantized(head.inputs[0]),
                "quants": sorted(op.name for op in graph.get_operations()
                                 if _is_fq(op))}


@pytest.mark.parametrize("kind", ["identity", "mean"])
def test_head_behind_identity_or_mean_is_quantized(kind):
    mine = _rewrite_and_run(kind, quantize.create_training_graph)
    values = mine["values"]
    # The named output is the head's FakeQuant of its float value (numpy).
    assert mine["logits_quantized"]
    np.testing.assert_allclose(
        values["logits"], np_fake_quant(values["float"], values["low"],
                                        values["high"]), atol=1e-6)
    assert mine["found"] == []
    # The head reads a quantized tensor (after a reduce_mean: the Mean's).
    assert mine["head_data_quantized"]
    if kind == "mean":
        assert "Mean/activation_Mean_quant/FakeQuantWithMinMaxVars" in (
            mine["quants"])


@needs_contrib
@pytest.mark.parametrize("kind", ["identity", "mean"])
def test_head_placement_against_contrib(kind):
    """contrib quantizes the head after the Identity (the named output
    stays float) and not after the Mean (the head reads float): the audit
    names what it leaves float; the rewrite's head FakeQuant computes the
    same values, where the output reads it."""
    mine = _rewrite_and_run(kind, quantize.create_training_graph)
    theirs = _rewrite_and_run(kind, contrib.quantize.create_training_graph)
    assert not theirs["logits_quantized"]
    named = [f.op.name for f in theirs["found"]]
    assert named == (["head/BiasAdd"] if kind == "identity" else
                     ["head/MatMul", "head/BiasAdd", "Mean"])
    if kind == "identity":
        np.testing.assert_allclose(mine["values"]["quant"],
                                   theirs["values"]["quant"], atol=1e-6)
    # Every FakeQuant of contrib's is the rewrite's; it adds the Mean's.
    extra = set(mine["quants"]) - set(theirs["quants"])
    assert set(theirs["quants"]) <= set(mine["quants"])
    assert extra == (set() if kind == "identity" else
                     {"Mean/activation_Mean_quant/FakeQuantWithMinMaxVars"})


def test_outputs_audit_names_float_ops_after_the_head():
    """A reduction after the quantized head, on the way to the output, is
    named by the audit of that output (the rewrite does not quantize it:
    no layer reads it)."""
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [BATCH, DEPTH])
        out = tf.reduce_mean(_head_model(x, "identity"), axis=1, name="avg")
        report = quantize.create_eval_graph(report=True)
        found = graph_float_ops(graph, [out])
        with pytest.raises(ValueError, match="outputs"):
            graph_float_ops(graph, [tf.constant(1)])
    assert report.left_float == []
    assert [f.op.name for f in found] == ["avg"]
    assert "avg:0" in found[0].reason


def _identity_arithmetic(rewrite):
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [BATCH, DEPTH])
        h = tf.layers.dense(x, 4, activation=tf.nn.relu6, name="d")
        y = tf.identity(h) * 2.0 + tf.identity(h, name="again")
        rewrite()
        return y, sorted((op.name, op.inputs[0].op.type)
                         for op in graph.get_operations() if _is_fq(op))


def test_arithmetic_through_identity_is_quantized():
    y, quants = _identity_arithmetic(quantize.create_training_graph)
    kinds = {name.split("/")[0]: kind for name, kind in quants}
    assert kinds.get("mul") == "Mul"
    assert kinds[y.op.name] in ("Add", "AddV2")
    if contrib is not None:
        assert quants == _identity_arithmetic(
            contrib.quantize.create_training_graph)[1]


def test_resource_weights_read_twice_get_one_fake_quant():
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [BATCH, DEPTH])
        w = tf.get_variable("w", [DEPTH, DEPTH], use_resource=True)
        first = tf.matmul(x, w, name="first")
        second = tf.matmul(tf.nn.relu(first), w, name="second")
        tf.nn.relu(second)
        reads = {first.op.inputs[1].name, second.op.inputs[1].name}
        assert len(reads) == 2                   # two ReadVariableOps
        quantize.create_training_graph()
        weight_quants = [op for op in graph.get_operations() if _is_fq(op)
                         and op.get_attr("narrow_range")]
    assert len(weight_quants) == 1
    assert {first.op.inputs[1].name, second.op.inputs[1].name} == {
        weight_quants[0].outputs[0].name}
