"""WeightDropLSTMCell with is_quant=True: the fake-quant math against numpy,
quant_delay, learned vs frozen ranges, config, checkpoints."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.references import (fake_quant, grid_offset, lstm_float_step,
                                lstm_quant_step, lstm_tolerance, nudge)
from tf1_awd_sparse.base.variable_names import relative_variable_names
from weight_drop_lstm import WeightDropLSTMCell

B, T, D, N = 3, 5, 4, 6
RANGES = {"input": (-2.0, 2.5), "gates": (-3.0, 2.0),
          "forget_state": (-0.8, 0.9), "input_state": (-0.7, 0.6),
          "state": (-1.2, 1.1), "output": (-0.6, 0.5)}


def _data(seed=0):
    rng = np.random.RandomState(seed)
    return (rng.randn(B, T, D).astype(np.float32),
            (rng.randn(D + N, 4 * N) * 0.4).astype(np.float32),
            (rng.randn(4 * N) * 0.2).astype(np.float32))


def _variables(cell):
    return dict(zip(relative_variable_names(cell.weights), cell.weights))


def _set(sess, cell, kernel, bias, ranges=None, **weights):
    """Loads the kernel, bias, other weights (keyword: variable name, '/'
    as '__') and ranges into the cell's variables."""
    variables = _variables(cell)
    weights.update(kernel=kernel, bias=bias)
    for name, value in weights.items():
        variables[name.replace("__", "/")].load(value, sess)
    for name, (lo, hi) in (ranges or {}).items():
        variables["quant/%s/min" % name].load(lo, sess)
        variables["quant/%s/max" % name].load(hi, sess)


def _pending_range(sess, cell, name):
    """The range the next training run folds in and uses (first fold: the
    mean over steps of the observed minima / maxima)."""
    observed = sess.run(_variables(cell)["quant/observed"])
    names = cell.quantizer.ranges.names
    k, index = len(names), names.index(name)
    return (min(observed[index] / observed[-1], 0.0),
            max(observed[k + index] / observed[-1], 0.0))


def _numpy_run(x, weights, ranges, **kwargs):
    """The numpy fake-quantized LSTM over ``x`` from a zero state."""
    c = np.zeros((B, N), np.float32)
    depth = weights["projection"].shape[1] if "projection" in weights else N
    h = np.zeros((B, depth), np.float32)
    outputs = []
    for t in range(x.shape[1]):
        h, c = lstm_quant_step(x[:, t], c, h, weights, ranges, **kwargs)
        outputs.append(h)
    return np.stack(outputs, 1)


def _assert_matches_numpy(got, want, output_range):
    """Float32 ties can round one way in TF and the other in numpy; such a
    step then propagates a little. Almost everything is exact."""
    _, _, scale = nudge(*output_range)
    exact = np.mean(np.abs(got - want) < 1e-5)
    steps = np.mean(np.abs(got - want)) / scale
    print("%.1f %% equal to numpy's, %.3f steps off on average"
          % (100 * exact, steps))
    assert exact > 0.95 and steps < 0.1, (
        "%.1f %% of the outputs equal numpy's (> 95 %% expected), %.3f "
        "steps off on average" % (100 * exact, steps))
    assert grid_offset(got, *output_range).max() < 1e-3


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("rnn", ["dynamic", "static"])
def test_eval_matches_numpy_fake_quant_lstm(sess, rnn, hard):
    x_data, kernel, bias = _data()
    cell = WeightDropLSTMCell(N, is_quant=True, is_train=False,
                              quant_activation="hard" if hard else "standard")
    x = tf.constant(x_data)
    if rnn == "dynamic":
        out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    else:
        out = tf.stack(tf.nn.static_rnn(cell, tf.unstack(x, axis=1),
                                        dtype=tf.float32)[0], 1)
    sess.run(tf.global_variables_initializer())
    _set(sess, cell, kernel, bias, RANGES)
    got = sess.run(out)
    want = _numpy_run(x_data, {"kernel": kernel, "bias": bias}, RANGES,
                      hard=hard)
    _assert_matches_numpy(got, want, RANGES["output"])


P, CELL_CLIP, PROJ_CLIP = 4, 0.9, 0.35
# The clips bind: state (-1.2, 1.1) -> +-0.9, output (-0.6, 0.5) -> +-0.35.
PEEPHOLE_RANGES = dict(
    RANGES, peephole_i=(-0.5, 0.4), gate_i=(-3.2, 2.1),
    peephole_f=(-0.45, 0.5), gate_f=(-2.9, 2.3), peephole_o=(-0.6, 0.55),
    gate_o=(-3.1, 2.4), cell_output=(-0.7, 0.8))


@pytest.mark.parametrize("hard", [False, True])
def test_peepholes_and_projection_match_numpy_fake_quant_lstm(sess, hard):
    """The o gate's peephole reads the new cell state, i and f the
    previous one; the projection and both clips as LSTMCell's."""
    rng = np.random.RandomState(7)
    x_data = rng.randn(B, T, D).astype(np.float32)
    weights = {"kernel": rng.randn(D + P, 4 * N) * 0.4,
               "bias": rng.randn(4 * N) * 0.2,
               "projection": rng.randn(N, P) * 0.5}
    for gate in "ifo":
        weights["w_%s_diag" % gate] = rng.randn(N) * 0.6
    weights = {k: v.astype(np.float32) for k, v in weights.items()}
    cell = WeightDropLSTMCell(N, use_peepholes=True, num_proj=P,
                              cell_clip=CELL_CLIP, proj_clip=PROJ_CLIP,
                              is_quant=True, is_train=False,
                              quant_activation="hard" if hard else
                              "standard")
    out, _ = tf.nn.dynamic_rnn(cell, tf.constant(x_data), dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    others = {k.replace("projection", "projection__kernel"): v
              for k, v in weights.items() if k not in ("kernel", "bias")}
    _set(sess, cell, weights["kernel"], weights["bias"], PEEPHOLE_RANGES,
         **others)
    got = sess.run(out)
    want = _numpy_run(x_data, weights, PEEPHOLE_RANGES, hard=hard,
                      cell_clip=CELL_CLIP, proj_clip=PROJ_CLIP)
    _assert_matches_numpy(got, want, (-PROJ_CLIP, PROJ_CLIP))


def test_quant_delay_float_before_then_on_grid(sess):
    x_data, kernel, bias = _data(1)
    step = tf.train.get_or_create_global_step()
    cell = WeightDropLSTMCell(N, is_quant=True, quant_delay=3, is_train=True)
    out, _ = tf.nn.dynamic_rnn(cell, tf.constant(x_data), dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    _set(sess, cell, kernel, bias)
    before = sess.run(out)
    c = h = np.zeros((B, N), np.float32)
    want = []
    for t in range(T):
        h, c = lstm_float_step(x_data[:, t], c, h, kernel, bias)
        want.append(h)
    # Before the delay: a float LSTM, TF against numpy float32.
    np.testing.assert_allclose(before, np.stack(want, 1),
                               atol=lstm_tolerance(tf.float32, 2, steps=T,
                                                   terms=D + N + 1))
    # Ranges were learned meanwhile; at the delay the outputs are quantized.
    step.load(3, sess)
    lo, hi = _pending_range(sess, cell, "output")
    after = sess.run(out)
    assert np.abs(after - before).max() > 1e-3
    assert grid_offset(after, lo, hi).max() < 1e-3


def test_quant_delay_needs_global_step():
    cell = WeightDropLSTMCell(N, is_quant=True, quant_delay=5)
    with pytest.raises(ValueError, match="global step"):
        tf.nn.dynamic_rnn(cell, tf.zeros([B, T, D]), dtype=tf.float32)


def test_ranges_learned_once_per_run_and_frozen_in_eval(sess):
    rng = np.random.RandomState(3)
    runs = [rng.randn(B, T, D).astype(np.float32) * s for s in (1.0, 3.0)]
    x = tf.placeholder(tf.float32, [B, T, D])
    is_train = tf.placeholder_with_default(True, [])
    cell = WeightDropLSTMCell(N, is_quant=True, is_train=is_train,
                              weight_drop_kr=0.5)
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    variables = _variables(cell)
    in_range = [variables["quant/input/min"], variables["quant/input/max"]]
    observed = variables["quant/observed"]
    decay = cell.quantizer.ranges.ema_decay

    def mean_extremes(data):
        return (np.mean(data.min(axis=(0, 2))), np.mean(data.max(axis=(0, 2))))

    sess.run(out, {x: runs[0]})
    # One accumulation per time step; the EMA is not touched in the run.
    assert sess.run(observed)[-1] == T
    np.testing.assert_allclose(sess.run(in_range), [-6.0, 6.0])
    # Eval: nothing changes, however often it runs.
    for _ in range(2):
        sess.run(out, {x: runs[1], is_train: False})
    assert sess.run(observed)[-1] == T
    np.testing.assert_allclose(sess.run(in_range), [-6.0, 6.0])
    # Next training run: the first fold replaces the initial guess.
    sess.run(out, {x: runs[1]})
    first = np.array(mean_extremes(runs[0]))
    np.testing.assert_allclose(sess.run(in_range), first, rtol=1e-5)
    assert sess.run(observed)[-1] == T
    sess.run(out, {x: runs[0]})
    np.testing.assert_allclose(
        sess.run(in_range),
        first + (1 - decay) * (np.array(mean_extremes(runs[1])) - first),
        rtol=1e-5)


def test_every_step_of_a_training_run_uses_the_same_range(sess):
    """Ranges are read once per run (resource variables), so assignments
    made while the loop runs cannot move the grid between time steps."""
    x_data, kernel, bias = _data(4)
    cell = WeightDropLSTMCell(N, is_quant=True, is_train=True)
    out, _ = tf.nn.dynamic_rnn(cell, tf.constant(x_data * 4),
                               dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    _set(sess, cell, kernel, bias)
    sess.run(out)  # learns ranges, folded at the start of the next run
    lo, hi = _pending_range(sess, cell, "output")
    got = sess.run(out)
    assert grid_offset(got, lo, hi).max() < 1e-3


def test_config_round_trip_and_bad_arguments():
    cell = WeightDropLSTMCell(N, is_quant=True, quant_delay=7, weight_bits=6,
                              activation_bits=7, quant_activation="hard",
                              weight_drop_kr=0.5)
    config = cell.get_config()
    assert {k: config[k] for k in ("is_quant", "quant_delay", "weight_bits",
                                   "activation_bits", "quant_activation")} \
        == {"is_quant": True, "quant_delay": 7, "weight_bits": 6,
            "activation_bits": 7, "quant_activation": "hard"}
    assert WeightDropLSTMCell.from_config(config).get_config() == config
    for kwargs, match in [({"weight_bits": 9}, "weight_bits"),
                          ({"activation_bits": 1}, "activation_bits"),
                          ({"quant_activation": "relu6"}, "quant_activation"),
                          ({"quant_delay": -1}, "quant_delay"),
                          ({"dtype": tf.float64}, "float32"),
                          ({"activation": tf.nn.relu}, "activation")]:
        with pytest.raises(ValueError, match=match):
            WeightDropLSTMCell(N, is_quant=True, **kwargs)


def test_float_checkpoint_restores_into_quantized_graph(tmp_path):
    x_data, kernel, bias = _data(5)
    path = str(tmp_path / "float.ckpt")
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    with tf.Graph().as_default(), tf.Session(config=config) as sess:
        cell = WeightDropLSTMCell(N, weight_drop_kr=0.5, is_train=False)
        float_out, _ = tf.nn.dynamic_rnn(cell, tf.constant(x_data),
                                         dtype=tf.float32)
        sess.run(tf.global_variables_initializer())
        _set(sess, cell, kernel, bias)
        float_values = sess.run(float_out)
        tf.train.Saver().save(sess, path)
    with tf.Graph().as_default(), tf.Session(config=config) as sess:
        tf.set_random_seed(5)
        is_train = tf.placeholder_with_default(True, [])
        cell = WeightDropLSTMCell(N, weight_drop_kr=0.5, is_train=is_train,
                                  is_quant=True)
        out, _ = tf.nn.dynamic_rnn(cell, tf.constant(x_data),
                                   dtype=tf.float32)
        quant_vars = [v for v in tf.global_variables()
                      if "/quant/" in v.name]
        float_vars = [v for v in tf.global_variables()
                      if v not in quant_vars]
        tf.train.Saver(float_vars).restore(sess, path)
        sess.run(tf.variables_initializer(quant_vars))
        np.testing.assert_array_equal(sess.run(_variables(cell)["kernel"]),
                                      kernel)
        sess.run(out)  # calibration run (training): ranges observed
        quant_values = sess.run(out, {is_train: False})
        lo, hi = sess.run([_variables(cell)["quant/output/min"],
                           _variables(cell)["quant/output/max"]])
    step = nudge(min(lo, 0), max(hi, 0))[2]
    assert np.mean(np.abs(quant_values - float_values)) < 3 * step
    assert np.abs(quant_values - fake_quant(float_values, lo, hi)).max() > 0


def test_trains_in_monitored_session_with_finalized_graph(tmp_path):
    """Per-run range ops are built with the graph, so a finalized graph
    (MonitoredTrainingSession) trains and learns ranges."""
    x_data, _, _ = _data(6)
    tf.set_random_seed(6)
    step = tf.train.get_or_create_global_step()
    cell = WeightDropLSTMCell(N, is_quant=True, weight_drop_kr=0.5,
                              use_vd=True, quant_delay=1)
    out, _ = tf.nn.dynamic_rnn(cell, tf.constant(x_data), dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(out - 0.1))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=step)
    with tf.control_dependencies([train]):
        train = tf.group(*cell.get_vd_update_op())
    observed = _variables(cell)["quant/observed"]
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), save_checkpoint_secs=None,
            save_summaries_steps=None, log_step_count_steps=None,
            config=tf.ConfigProto(intra_op_parallelism_threads=1,
                                  inter_op_parallelism_threads=1)) as sess:
        assert tf.get_default_graph().finalized
        for _ in range(3):
            sess.run(train)
        assert sess.run(observed)[-1] == T
        lo, hi = sess.run([_variables(cell)["quant/state/min"],
                           _variables(cell)["quant/state/max"]])
    assert lo < 0 < hi and (lo, hi) != (-6.0, 6.0)
