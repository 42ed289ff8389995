"""The quantization rewrite of TensorFlow's own recurrent cells (issue 44,
graph_quantize/recurrent.py): LSTMCell, BasicLSTMCell and GRUCell under
dynamic_rnn (and a bidirectional LSTM) get FakeQuants inside the loop on
their weights and activations, train with ranges learned from inside the
loop, rewrite for evaluation and restore from the training checkpoint;
a one-step eval graph equals a numpy reference of the quantized step."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from tf1_awd_sparse.ops.fake_quant import MIN_RANGE_WIDTH
from support.references import fake_quant as np_fq
from support.references import sigmoid
from support.tolerances import quant_step

UNITS, DEPTH, BATCH, TIME, STEPS = 6, 3, 4, 5, 30
CELLS = {"lstm": lambda: tf.nn.rnn_cell.LSTMCell(UNITS),
         "basic_lstm": lambda: tf.nn.rnn_cell.BasicLSTMCell(UNITS),
         "gru": lambda: tf.nn.rnn_cell.GRUCell(UNITS)}
#: The op types each step quantizes on its outputs.
QUANTIZED_TYPES = {"lstm": {"ConcatV2", "BiasAdd", "Add", "Mul", "Sigmoid",
                            "Tanh"},
                   "gru": {"ConcatV2", "BiasAdd", "Sub", "Add", "Mul",
                           "Sigmoid", "Tanh"}}
QUANTIZED_TYPES["basic_lstm"] = QUANTIZED_TYPES["lstm"]
_ONE_THREAD = tf.ConfigProto(inter_op_parallelism_threads=1,
                             intra_op_parallelism_threads=1)


def _data():
    rng = np.random.RandomState(0)
    return (rng.randn(BATCH, TIME, DEPTH).astype(np.float32),
            rng.randn(BATCH, 2).astype(np.float32))


def _model(cell, bidirectional=False):
    x = tf.placeholder(tf.float32, [BATCH, TIME, DEPTH], name="x")
    if bidirectional:
        (fw, bw), _ = tf.nn.bidirectional_dynamic_rnn(
            CELLS[cell](), CELLS[cell](), x, dtype=tf.float32)
        last = tf.concat([fw[:, -1], bw[:, 0]], 1)
    else:
        seq, _ = tf.nn.dynamic_rnn(CELLS[cell](), x, dtype=tf.float32)
        last = seq[:, -1]
    return x, tf.layers.dense(last, 2, name="head")


def _in_loop_quants(graph):
    """FakeQuant ops of the forward pass inside a while loop, by the type
    of the op they quantize."""
    return [op for op in graph.get_operations()
            if op.type.startswith("FakeQuant") and "/while/" in op.name
            and not op.name.startswith("gradients")]


def _train(cell, bidirectional, path):
    x_data, y_data = _data()
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(1)
        step = tf.train.get_or_create_global_step()
        x, prediction = _model(cell, bidirectional)
        loss = tf.reduce_mean(tf.square(prediction - y_data))
        report = quantize.create_training_graph(report=True)
        train = tf.train.AdamOptimizer(0.02).minimize(loss, global_step=step)
        loop_quants = _in_loop_quants(graph)
        ranges = {v.op.name: v for v in tf.global_variables()
                  if "/quant/" in v.op.name and v.op.name.endswith(
                      ("/min", "/max", "initialized"))}
        with tf.Session(config=_ONE_THREAD) as sess:
            sess.run(tf.global_variables_initializer())
            initial = sess.run(ranges)
            losses = [sess.run([loss, train], {x: x_data})[0]
                      for _ in range(STEPS)]
            final = sess.run(ranges)
            trained_loss = sess.run(loss, {x: x_data})
            tf.train.Saver().save(sess, path)
    kernels = [op for op in graph.get_operations() if op.type == "MatMul"
               and "/while/" in op.name and not op.name.startswith(
                   "gradients")]
    return {"report": report, "losses": losses + [trained_loss],
            "initial": initial, "final": final, "path": path,
            "quantized_types": {q.inputs[0].op.type for q in loop_quants},
            "kernel_sources": [_through_enters(m.inputs[1]).op.type
                               for m in kernels]}


def _through_enters(tensor):
    while tensor.op.type == "Enter":
        tensor = tensor.op.inputs[0]
    return tensor


CASES = [("lstm", False), ("basic_lstm", False), ("gru", False),
         ("lstm", True)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("recurrent")
    return {case: _train(case[0], case[1], str(root / ("%s_%d" % case)))
            for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=["%s%s" % (c, "_bi" * b)
                                             for c, b in CASES])
def test_cells_are_quantized_inside_the_loop(trained, case):
    run = trained[case]
    # (x + y is an Add on TF 1.13, an AddV2 from 1.15 on.)
    assert {t.replace("AddV2", "Add") for t in run["quantized_types"]} == (
        QUANTIZED_TYPES[case[0]])
    # Every kernel read in the loop is a FakeQuant's output (made outside
    # the loop, once, and entered).
    assert run["kernel_sources"] and set(run["kernel_sources"]) == {
        "FakeQuantWithMinMaxVars"}
    assert run["report"].left_float == []


@pytest.mark.parametrize("case", CASES, ids=["%s%s" % (c, "_bi" * b)
                                             for c, b in CASES])
def test_cells_train_with_ranges_learned_in_the_loop(trained, case):
    run = trained[case]
    assert run["losses"][-1] < 0.8 * run["losses"][0]
    initialized = [k for k in run["final"] if k.endswith("initialized")]
    assert initialized and all(run["final"][k] == 1.0 for k in initialized)
    moved = [k for k in run["final"] if "/quant/" in k and k.endswith("max")
             and run["final"][k] != run["initial"][k]]
    assert len(moved) >= 5


def _one_step_graph(cell):
    """The cell once on placeholders in the training graph's variable
    scope: the streaming graph an export takes."""
    x = tf.placeholder(tf.float32, [BATCH, DEPTH], name="x")
    c = tf.placeholder(tf.float32, [BATCH, UNITS], name="c")
    h = tf.placeholder(tf.float32, [BATCH, UNITS], name="h")
    made = CELLS[cell]()
    state = h if cell == "gru" else tf.nn.rnn_cell.LSTMStateTuple(c, h)
    with tf.variable_scope("rnn"):
        output, new_state = made(x, state)
    new_c = new_state if cell == "gru" else new_state.c
    return (x, c, h), (output, new_c)


def _quantized(tensor):
    fake_quants = [op for op in tensor.consumers()
                   if op.type.startswith("FakeQuant")]
    assert len(fake_quants) == 1, tensor
    return fake_quants[0].outputs[0]


def _ranges(values, cell_scope, role):
    low = min(values["%squant/%s/min" % (cell_scope, role)], 0.0)
    high = max(values["%squant/%s/max" % (cell_scope, role)], 0.0)
    return low, max(high, low + MIN_RANGE_WIDTH)


def _np_lstm(values, x, c, h, names, scope="rnn/lstm_cell/"):
    """TF's LSTMCell / BasicLSTMCell step with a FakeQuant at each
    quantized tensor (``names``: the op names of add-forget-bias, the three
    products, the new state)."""
    def learned(t, role):
        return np_fq(t, *_ranges(values, scope, role))
    kernel = np_fq(values[scope + "kernel"],
                   values[scope + "weights_quant/min"],
                   values[scope + "weights_quant/max"], narrow=True)
    sig = lambda t: np_fq(sigmoid(t), 0.0, 255.0 / 256)   # noqa: E731
    tanh = lambda t: np_fq(np.tanh(t), -1.0, 127.0 / 128)  # noqa: E731
    joined = learned(np.concatenate([x, h], 1), "concat")
    gates = learned(joined @ kernel + values[scope + "bias"], "BiasAdd")
    i, j, f, o = np.split(gates, 4, axis=1)
    forget = sig(learned(f + np.float32(1.0), names[0]))
    kept = learned(forget * c, names[1])
    added = learned(sig(i) * tanh(j), names[2])
    new_c = learned(kept + added, names[4])
    return learned(sig(o) * tanh(new_c), names[3]), new_c


def _np_gru(values, x, h, scope="rnn/gru_cell/"):
    def learned(t, role):
        return np_fq(t, *_ranges(values, scope, role))

    def weight(name):
        return np_fq(values[scope + name + "/kernel"],
                     values[scope + name + "/weights_quant/min"],
                     values[scope + name + "/weights_quant/max"], narrow=True)
    gates = learned(learned(np.concatenate([x, h], 1), "concat")
                    @ weight("gates") + values[scope + "gates/bias"],
                    "BiasAdd")
    r, u = np.split(np_fq(sigmoid(gates), 0.0, 255.0 / 256), 2, axis=1)
    joined = learned(np.concatenate([x, learned(r * h, "mul")], 1),
                     "concat_1")
    candidate = np_fq(np.tanh(learned(
        joined @ weight("candidate") + values[scope + "candidate/bias"],
        "BiasAdd_1")), -1.0, 127.0 / 128)
    new_h = learned(learned(u * h, "mul_1")
                    + learned(learned(np.float32(1.0) - u, "sub")
                              * candidate, "mul_2"), "add")
    return new_h, new_h


#: The op names of LSTMCell's and BasicLSTMCell's forget-bias add, three
#: products (kept state, added state, output) and new state.
LSTM_NAMES = {"lstm": ("add", "mul", "mul_1", "mul_2", "add_1"),
              "basic_lstm": ("Add", "Mul", "Mul_1", "Mul_2", "Add_1")}


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_one_step_eval_graph_restores_and_equals_numpy(trained, cell):
    """The eval rewrite of a one-step graph restores from the dynamic_rnn
    training checkpoint (a plain Saver: the same variables) and computes
    the quantized step as numpy does, on the restored ranges."""
    rng = np.random.RandomState(2)
    with tf.Graph().as_default():
        inputs, outputs = _one_step_graph(cell)
        report = quantize.create_eval_graph(report=True)
        assert report.left_float == []
        saver = tf.train.Saver()
        with tf.Session(config=_ONE_THREAD) as sess:
            saver.restore(sess, trained[(cell, False)]["path"])
            values = {v.op.name: sess.run(v) for v in tf.global_variables()}
            scope = "rnn/%s/" % ("gru_cell" if cell == "gru" else
                                 "lstm_cell" if cell == "lstm" else
                                 "basic_lstm_cell")
            # The state on its own grids, as the loop carries it.
            state = _ranges(values, scope, "add" if cell == "gru" else
                            LSTM_NAMES[cell][4])
            feed = [rng.randn(BATCH, DEPTH).astype(np.float32),
                    np_fq(rng.uniform(*state, size=(BATCH, UNITS)), *state),
                    np_fq(rng.uniform(-1, 1, (BATCH, UNITS)), -1.0, 1.0)]
            if cell == "gru":
                feed[2] = feed[1]
            # The cell returned its tensors before the rewrite: what the
            # graph computes from them on is their FakeQuant's output.
            got = sess.run([_quantized(t) for t in outputs],
                           dict(zip(inputs, feed)))
    if cell == "gru":
        want = _np_gru(values, feed[0], feed[2], scope)
    else:
        want = _np_lstm(values, feed[0], feed[1], feed[2], LSTM_NAMES[cell],
                        scope)
    for name, mine, ref in zip(("output", "state"), got, want):
        role = ("add" if cell == "gru" else
                LSTM_NAMES[cell][3 if name == "output" else 4])
        low, high = _ranges(values, scope, role)
        step = quant_step((high - low) / 255.0)
        diff = np.abs(mine - ref)
        # numpy and TF round the same float32 values but by different
        # routes (matmul order, exp): a value within an ulp of a rounding
        # tie may take the other code, and the step after it moves by one
        # code of each tensor on its way; not more, and rarely.
        assert diff.max() <= 4 * step + 1e-6, name
        assert diff.mean() <= 0.05 * step, name


def test_static_rnn_is_reported_left_float():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [BATCH, DEPTH])
        tf.nn.static_rnn(CELLS["lstm"](), [x, x, x], dtype=tf.float32)
        report = quantize.create_training_graph(report=True)
    reasons = {f.reason for f in report.left_float}
    assert len(report.left_float) == 3 and len(reasons) == 1
    assert "static_rnn" in reasons.pop()
    # What contrib does with it: one weight FakeQuant for the shared kernel,
    # each step's matmul + bias.
    assert sorted(q.kind for q in report.quantized) == [
        "act_quant"] * 3 + ["weights_quant"]
