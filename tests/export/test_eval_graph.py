"""`export.eval_graph`, the evaluation graph the TFLite models are made of:
eval-mode copies of trained cells, built once and unrolled with strided
slices, with the models' named state inputs (on the cells' grids for a
uint8 model) and outputs, and the state inputs' converter statistics.

The references: the eval copies of the trained cells under TF's own
``tf.nn.dynamic_rnn`` (a while loop, not the unrolled slices), numpy fake quantization
(`support.references`) on the cells' learned ranges, and the grid's
(mean, std) = (zero point, 1 / scale) worked out from `nudge`."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.references import fake_quant, nudge
from tf1_awd_sparse.export import eval_graph, stack
from weight_drop_lstm import WeightDropLSTMCell

B, T, D = 2, 4, 3
SIZES = (5, 4)


def _trained(sess, **kwargs):
    """Two cells under dynamic_rnn (training mode), random weights and,
    with is_quant, ranges set by hand; returns the cells."""
    tf.train.get_or_create_global_step()
    cells = [WeightDropLSTMCell(n, weight_drop_kr=0.7, quant_delay=3,
                                **kwargs) for n in SIZES]
    tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells),
                      tf.zeros([B, T, D]), dtype=tf.float32)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    rng = np.random.RandomState(0)
    for cell in cells:
        for v in cell.weights:
            name = v.op.name.rpartition("lstm_cell/")[2]
            if name in ("kernel", "bias"):
                v.load(rng.randn(*v.shape.as_list()) * 0.5, sess)
            elif name.endswith("/min"):
                v.load(-rng.uniform(0.5, 2.), sess)
            elif name.endswith("/max"):
                v.load(rng.uniform(0.5, 2.), sess)
    return cells


def _eval_stack(cells, values, session, is_quant):
    """The eval graph of ``cells`` in the current graph: (inputs,
    placeholders, initial state, outputs, final outputs, copies)."""
    copies = [eval_graph.eval_cell(c, is_quant) for c in cells]
    eval_graph.build_cells(copies, B, D)
    inputs = tf.placeholder(tf.float32, [B, T, D], eval_graph.INPUT_NAME)
    placeholders, initial = eval_graph.state_inputs(copies, B, is_quant)
    outputs, final = eval_graph.unroll(copies, inputs, initial)
    stacked = eval_graph.stack_outputs(outputs, copies[-1], is_quant)
    finals = eval_graph.final_state_outputs(final)
    session.run(tf.global_variables_initializer())
    for copy, value in zip(copies, values):
        stack.load_values(copy, value, session)
    return inputs, placeholders, initial, stacked, finals, copies


def test_eval_cell_copies_the_config_for_evaluation(sess):
    cells = _trained(sess, is_quant=True, quant_activation="hard")
    for is_quant in (True, False):
        copy = eval_graph.eval_cell(cells[0], is_quant)
        config = copy.get_config()
        assert not copy.built and copy is not cells[0]
        assert (config["is_train"], config["quant_delay"],
                config["state_is_tuple"]) == (False, 0, True)
        assert config["num_units"] == SIZES[0]
        # Hard activations: the float copy is the quantized cell with its
        # fake-quants bypassed (the function that was trained).
        assert config["is_quant"] is True
        assert copy.quantizer.float_only == (not is_quant)
    plain = WeightDropLSTMCell(3)
    tf.nn.dynamic_rnn(plain, tf.zeros([B, T, D]), dtype=tf.float32,
                      scope="plain")
    assert eval_graph.eval_cell(plain, False).quantizer is None


def test_the_float_eval_graph_computes_what_dynamic_rnn_does(sess):
    cells = _trained(sess)
    x = np.random.RandomState(1).randn(B, T, D).astype(np.float32)
    states = [np.random.RandomState(2 + i).randn(B, n).astype(np.float32)
              for i, n in enumerate(SIZES) for _ in "ch"]
    values = stack.read_cell_values(cells, session=sess)
    # The reference: the eval copies under TF's dynamic_rnn (a while loop).
    with tf.Graph().as_default(), tf.Session() as session:
        copies = [eval_graph.eval_cell(c, False) for c in cells]
        ref_init = tuple(tf.nn.rnn_cell.LSTMStateTuple(
            tf.constant(states[2 * i]), tf.constant(states[2 * i + 1]))
            for i in range(len(SIZES)))
        want, want_final = tf.nn.dynamic_rnn(
            tf.nn.rnn_cell.MultiRNNCell(copies), tf.constant(x),
            initial_state=ref_init, scope="reference")
        session.run(tf.global_variables_initializer())
        for copy, value in zip(copies, values):
            stack.load_values(copy, value, session)
        want, want_final = session.run([want, want_final])
    with tf.Graph().as_default(), tf.Session() as session:
        inputs, placeholders, _, stacked, finals, _ = _eval_stack(
            cells, values, session, False)
        assert [p.op.name for p in placeholders] == [
            "state_0_c", "state_0_h", "state_1_c", "state_1_h"]
        assert [f.op.name for f in finals] == [
            "final_0_c", "final_0_h", "final_1_c", "final_1_h"]
        assert inputs.op.name == "inputs" and stacked.shape == (B, T, 4)
        feed = dict(zip(placeholders, states))
        feed[inputs] = x
        got, got_final = session.run([stacked, finals], feed)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for got_state, state in zip(got_final,
                                [s for pair in want_final for s in pair]):
        np.testing.assert_allclose(got_state, state, rtol=1e-5, atol=1e-6)


def test_uint8_state_inputs_and_outputs_are_on_the_cells_grids(sess):
    cells = _trained(sess, is_quant=True)
    values = stack.read_cell_values(cells, session=sess)
    rng = np.random.RandomState(3)
    x = rng.randn(B, T, D).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        inputs, placeholders, initial, stacked, _, copies = _eval_stack(
            cells, values, session, True)
        states = [rng.uniform(-3, 3, p.shape.as_list()).astype(np.float32)
                  for p in placeholders]
        feed = dict(zip(placeholders, states))
        feed[inputs] = x
        got_initial, got = session.run([initial, stacked], feed)
        ranges = session.run([{k: c.quantizer.run_ranges[k]
                               for k in ("state", "output")}
                              for c in copies])
        stats = eval_graph.state_input_stats(copies, session)
    for layer, (c, h) in enumerate(got_initial):
        np.testing.assert_allclose(
            c, fake_quant(states[2 * layer], *ranges[layer]["state"]),
            rtol=0, atol=1e-6)
        np.testing.assert_allclose(
            h, fake_quant(states[2 * layer + 1], *ranges[layer]["output"]),
            rtol=0, atol=1e-6)
    # The stacked outputs on the top cell's output grid.
    lo, _, scale = nudge(*ranges[-1]["output"])
    steps = (got.astype(np.float64) - lo) / scale
    assert np.abs(steps - np.round(steps)).max() < 1e-3
    for layer in range(len(SIZES)):
        for name, key in (("c", "state"), ("h", "output")):
            low, _, scale = nudge(*ranges[layer][key])
            mean, std = stats["state_%d_%s" % (layer, name)]
            assert mean == pytest.approx(-low / scale, abs=1e-4)
            assert std == pytest.approx(1.0 / scale, rel=1e-6)


def test_unroll_needs_a_static_number_of_steps():
    copies = [eval_graph.eval_cell(WeightDropLSTMCell(3), False)]
    eval_graph.build_cells(copies, B, D)
    initial = [tf.nn.rnn_cell.LSTMStateTuple(tf.zeros([B, 3]),
                                             tf.zeros([B, 3]))]
    with pytest.raises(TypeError):
        eval_graph.unroll(copies, tf.placeholder(tf.float32, [B, None, D]),
                          initial)
    outputs, final = eval_graph.unroll(copies, tf.zeros([B, 2, D]), initial)
    assert len(outputs) == 2 and len(final) == 1
    # No while loop and no Unpack: strided slices of the time axis.
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "Unpack" not in types and "Enter" not in types
    assert "StridedSlice" in types
