"""WeightDropLSTM, the sequence-level layer (issue 14): the same outputs,
gradients and variables as WeightDropLSTMCell under dynamic_rnn, with the
same masks, in every input layout; checkpoints move both ways."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base import compat as _compat
from support.references import lstm_tolerance
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell

B, T, D, N = 3, 5, 4, 6


def _x(dtype, time_major=False):
    value = np.random.RandomState(0).randn(B, T, D)
    if time_major:
        value = value.transpose(1, 0, 2)
    return tf.constant(value, dtype)


def _pair(dtype, time_major=False, lengths=None, state=False, **kwargs):
    """The layer and the cell (reusing the layer's variables) on one input;
    returns (layer outputs, cell outputs, layer, cell) with final states."""
    x = _x(dtype, time_major)
    seq = None if lengths is None else tf.constant(lengths, tf.int32)
    init = None
    if state:
        rng = np.random.RandomState(3)
        init = tf.nn.rnn_cell.LSTMStateTuple(
            tf.constant(rng.randn(B, N), dtype),
            tf.constant(rng.randn(B, N), dtype))
    layer = WeightDropLSTM(N, time_major=time_major, dtype=dtype, **kwargs)
    out, final = layer(x, initial_state=init, sequence_length=seq,
                       dtype=dtype)
    cell = WeightDropLSTMCell(N, reuse=True, dtype=dtype, **kwargs)
    ref, ref_final = tf.nn.dynamic_rnn(
        cell, x, sequence_length=seq, initial_state=init, dtype=dtype,
        time_major=time_major, scope="rnn")
    return (out, final), (ref, ref_final), layer, cell


CASES = [
    ("eval", dict(is_train=False)),
    ("held_mask", dict(weight_drop_kr=0.5, use_vd=True)),
    ("held_mask_inputs", dict(weight_drop_kr=0.5, use_vd=True,
                              drop_input_weights=True)),
    ("pruning_mask_eval", dict(pruning_mask=True, is_train=False)),
]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("layout", ["batch", "time", "lengths_state"])
def test_outputs_and_gradients_equal_the_cell(sess, name, kwargs, dtype,
                                              layout):
    # Two graphs of one function, forward and backward.
    tol = lstm_tolerance(dtype, evaluations=2, backward=True, steps=T)
    time_major = layout == "time"
    lengths = [5, 0, 3] if layout == "lengths_state" else None
    (out, final), (ref, ref_final), layer, _ = _pair(
        dtype, time_major=time_major, lengths=lengths,
        state=layout == "lengths_state", **kwargs)
    assert layer.fast_path
    names = sorted(v.op.name for v in tf.global_variables() +
                   tf.local_variables())
    assert "rnn/lstm_cell/kernel" in names
    assert not any("lstm_cell_1" in n for n in names)  # one set, shared
    loss = tf.reduce_sum(tf.sin(out)) + tf.reduce_sum(final.c * final.h)
    ref_loss = (tf.reduce_sum(tf.sin(ref))
                + tf.reduce_sum(ref_final.c * ref_final.h))
    variables = layer.cell.trainable_weights
    grads = tf.gradients(loss, variables)
    ref_grads = tf.gradients(ref_loss, variables)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    got, want = sess.run([[out, final, grads], [ref, ref_final, ref_grads]])
    for a, b in zip(_compat.nest.flatten(got), _compat.nest.flatten(want)):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_fresh_mask_per_run_is_one_mask_for_every_step(sess):
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, seed=4)
    out, _ = layer(_x(tf.float32))
    sess.run(tf.global_variables_initializer())
    kernels = [sess.run([out, layer.effective_kernel])[1] for _ in range(2)]
    assert not np.array_equal(kernels[0], kernels[1])  # new per run
    kernel = sess.run(layer.cell.weights[0])
    dropped = kernels[0][D:] == 0
    assert 0.3 < dropped.mean() < 0.7 and not np.any(kernels[0][:D] == 0)
    np.testing.assert_allclose(kernels[0][D:][~dropped],
                               2 * kernel[D:][~dropped], rtol=1e-6)


def test_update_ops_and_train_flag_tensor(sess):
    is_train = tf.placeholder_with_default(True, [])
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True,
                           is_train=is_train)
    out, _ = layer(_x(tf.float32))
    loss = tf.reduce_mean(tf.square(out))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    assert layer.get_vd_update_op() == tf.get_collection(
        tf.GraphKeys.UPDATE_OPS)
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([train, loss])[1] for _ in range(5)]
    assert np.all(np.isfinite(losses))
    evals = [sess.run(out, {is_train: False}) for _ in range(2)]
    np.testing.assert_array_equal(evals[0], evals[1])
    # With the flag False the layer is a plain LSTMCell on its weights (no
    # mask: a held mask alone would also give equal runs).
    plain = tf.nn.rnn_cell.LSTMCell(N, reuse=True)
    ref, _ = tf.nn.dynamic_rnn(plain, _x(tf.float32), dtype=tf.float32,
                               scope="rnn")
    tol = lstm_tolerance(tf.float32, evaluations=2, steps=T)
    np.testing.assert_allclose(evals[0], sess.run(ref), rtol=0, atol=tol)


@pytest.mark.parametrize("source,target", [("layer", "lstmcell"),
                                           ("lstmcell", "layer"),
                                           ("cell", "layer")])
def test_checkpoints_move_between_layer_cell_and_lstmcell(tmp_path, source,
                                                          target):
    path = str(tmp_path / "model.ckpt")

    def build(kind):
        x = _x(tf.float32)
        if kind == "layer":
            return WeightDropLSTM(N, is_train=False)(x)[0]
        cell = (tf.nn.rnn_cell.LSTMCell(N) if kind == "lstmcell"
                else WeightDropLSTMCell(N, weight_drop_kr=0.5,
                                        is_train=False))
        return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]

    with tf.Graph().as_default():
        out = build(source)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            expected = sess.run(out)
            tf.train.Saver().save(sess, path)
    with tf.Graph().as_default():
        out = build(target)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_allclose(sess.run(out), expected, rtol=1e-5,
                                       atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(is_quant=True), dict(num_proj=3),
                                    dict(use_peepholes=True)])
def test_cell_path_for_what_the_fast_path_does_not_compute(sess, kwargs):
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, is_train=False, **kwargs)
    assert not layer.fast_path
    out, _ = layer(_x(tf.float32))
    cell = WeightDropLSTMCell(N, reuse=True, is_train=False, **kwargs)
    ref, _ = tf.nn.dynamic_rnn(cell, _x(tf.float32), dtype=tf.float32,
                               scope="rnn")
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    np.testing.assert_array_equal(*sess.run([out, ref]))


def test_config_round_trip_and_errors():
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True,
                           time_major=True)
    again = WeightDropLSTM.from_config(layer.get_config())
    assert again.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="rank 3"):
        layer(tf.zeros([B, D]))
    with pytest.raises(ValueError, match="time_major"):
        WeightDropLSTM(N, time_major="yes")
    with pytest.raises(ValueError, match="num_units"):
        WeightDropLSTM(0)


# ----------------------------------------------------------------------
# The layer as a layer (issue 19.3): variables, built once, a named
# error on another input depth (its scopes: tests/layers/test_sequence_base.py).
# ----------------------------------------------------------------------
def test_two_layers_without_scope_stack_and_train(sess):
    first = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True, seed=1)
    second = WeightDropLSTM(N, weight_drop_kr=0.5, seed=2)
    h, _ = first(_x(tf.float32))
    out, _ = second(h)
    assert (first.scope_name, second.scope_name) == ("rnn", "rnn_1")
    ours = [first.variables, second.variables]
    assert not set(ours[0]) & set(ours[1])
    assert [v.op.name for v in first.trainable_variables] == [
        "rnn/lstm_cell/kernel", "rnn/lstm_cell/bias"]
    assert [v.op.name for v in second.trainable_variables] == [
        "rnn_1/lstm_cell/kernel", "rnn_1/lstm_cell/bias"]
    loss = tf.reduce_mean(tf.square(out - 0.5))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    trainable = first.trainable_variables + second.trainable_variables
    before = sess.run(trainable)
    for _ in range(2):
        sess.run(train)
    after = sess.run(trainable)
    for variable, old, new in zip(trainable, before, after):
        assert not np.allclose(old, new), variable.op.name


def test_second_call_reuses_the_variables(sess):
    layer = WeightDropLSTM(N, is_train=False)
    x = _x(tf.float32)
    first, _ = layer(x)
    count = len(tf.global_variables())
    again, _ = layer(x)
    elsewhere, _ = layer(x, scope="other")
    assert len(tf.global_variables()) == count == len(layer.variables)
    assert layer.built and layer.scope_name == "rnn"
    sess.run(tf.global_variables_initializer())
    a, b, c = sess.run([first, again, elsewhere])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("kwargs", [dict(), dict(use_peepholes=True)],
                         ids=["fast_path", "cell_path"])
def test_other_depth_is_a_named_error(kwargs):
    layer = WeightDropLSTM(N, **kwargs)
    layer(_x(tf.float32))
    with pytest.raises(ValueError, match=r"inputs.shape\[2\] must be %d "
                       r"\(the input depth the layer was built for\)" % D):
        layer(tf.zeros([B, T, D + 3]))


def test_variables_are_exactly_the_layers():
    tf.get_variable("unrelated", [2])
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True,
                           pruning_mask=True, is_quant=True,
                           sparsity="variational_dropout")
    assert layer.variables == [] and not layer.built
    before = set(tf.global_variables() + tf.local_variables())
    layer(_x(tf.float32))
    created = set(tf.global_variables() + tf.local_variables()) - before
    assert set(layer.variables) == created
    assert len(layer.variables) == len(created)
    assert set(layer.trainable_variables) == (
        created & set(tf.trainable_variables()))
    assert set(layer.non_trainable_variables) == (
        created - set(tf.trainable_variables()))


def test_update_op_before_the_call_uses_the_layers_scope():
    first = WeightDropLSTM(N)
    first(_x(tf.float32))
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True)
    assert len(layer.get_vd_update_op()) == 1
    layer(_x(tf.float32))
    assert layer.scope_name == "rnn_1"
    assert {v.op.name.split("/")[0] for v in layer.variables} == {"rnn_1"}


def test_is_train_of_unknown_rank_is_checked_when_run(sess):
    is_train = tf.placeholder(tf.bool)
    layer = WeightDropLSTM(N, weight_drop_kr=0.5, use_vd=True,
                           is_train=is_train)
    out, _ = layer(_x(tf.float32))
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    assert sess.run(out, {is_train: True}).shape == (B, T, N)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="is_train must be a scalar"):
        sess.run(out, {is_train: [True, False]})


def test_initial_state_of_another_width_is_a_named_error():
    layer = WeightDropLSTM(N)
    state = tf.nn.rnn_cell.LSTMStateTuple(tf.zeros([B, N]),
                                          tf.zeros([B, N + 2]))
    with pytest.raises(ValueError, match=r"initial_state\.h\.shape\[1\] "
                       r"must be %d" % N):
        layer(_x(tf.float32), initial_state=state)


# ----------------------------------------------------------------------
# The layer's plumbing pinned (issue 28.4): what a stacked pair of layers
# names its variables, what the old properties returned, and checkpoints
# of the pair restoring into plain cells under dynamic_rnn.
# ----------------------------------------------------------------------
# The names main's WeightDropLSTM (a plain object, before the layer base)
# gave, written down from a run of that code on TF 1.13.1, 1.15.5, 2.15.1
# and 2.21 (identical on all four), in the order of `layer.variables`.
FAST_KWARGS = dict(weight_drop_kr=0.5, use_vd=True, pruning_mask=True,
                   sparsity="variational_dropout")
FAST_NAMES = ["log_sigma2", "kernel", "bias", "pruning_mask",
              "pruning_threshold", "weight_drop_mask"]
FAST_NON_TRAINABLE = ["pruning_mask", "pruning_threshold", "weight_drop_mask"]
_QUANT_TENSORS = ["input", "gates", "forget_state", "input_state", "state",
                  "output"]
QUANT_NON_TRAINABLE = (["quant/%s/min" % t for t in _QUANT_TENSORS]
                       + ["quant/%s/max" % t for t in _QUANT_TENSORS]
                       + ["quant/observed", "quant/initialized"])
QUANT_NAMES = ["kernel", "bias"] + QUANT_NON_TRAINABLE
PINNED = [("fast_path", FAST_KWARGS, True, FAST_NAMES, FAST_NON_TRAINABLE),
          ("cell_path", dict(is_quant=True, weight_drop_kr=0.5), False,
           QUANT_NAMES, QUANT_NON_TRAINABLE)]


def _stacked_pair(**kwargs):
    first = WeightDropLSTM(N, **kwargs)
    second = WeightDropLSTM(N, **kwargs)
    out, _ = second(first(_x(tf.float32))[0])
    return first, second, out


@pytest.mark.parametrize("name,kwargs,fast,names,non_trainable", PINNED,
                         ids=[p[0] for p in PINNED])
def test_stacked_pair_names_and_properties_are_mains(name, kwargs, fast,
                                                     names, non_trainable):
    del name
    pair = [WeightDropLSTM(N, **kwargs) for _ in range(2)]
    assert [l.built for l in pair] == [False, False]
    assert [l.variables for l in pair] == [[], []]
    assert [l.scope_name for l in pair] == [None, None]
    assert [l.effective_kernel for l in pair] == [None, None]
    reference = dict(WeightDropLSTMCell(N, **kwargs).get_config(),
                     time_major=False, scope=None)
    assert [l.get_config() for l in pair] == [reference, reference]
    pair[1](pair[0](_x(tf.float32))[0])
    graph = tf.global_variables() + tf.local_variables()
    trainable = set(tf.trainable_variables())
    for layer, scope in zip(pair, ("rnn", "rnn_1")):
        prefix = scope + "/lstm_cell/"
        assert layer.built and layer.scope_name == scope
        assert layer.fast_path is fast
        assert isinstance(layer.cell, WeightDropLSTMCell) and layer.cell.built
        assert [v.op.name for v in layer.variables] == [
            prefix + n for n in names]
        # The reference: the graph's collections, not the layer.
        ours = [v for v in graph if v.op.name.startswith(scope + "/")]
        assert set(layer.variables) == set(ours)
        assert layer.weights == layer.variables == layer.cell.weights
        assert layer.trainable_variables == [
            v for v in layer.variables if v in trainable]
        assert [v.op.name for v in layer.non_trainable_variables] == [
            prefix + n for n in non_trainable]
        assert layer.effective_kernel is layer.cell.effective_kernel
        # The config: a cell's made apart, plus the layer's two (and the
        # dtype the build fixed).
        assert layer.get_config() == dict(reference, dtype="float32")


def test_stacked_pair_checkpoint_restores_into_cells_under_dynamic_rnn(
        tmp_path):
    path = str(tmp_path / "pair.ckpt")
    kwargs = dict(FAST_KWARGS, is_train=False)
    with tf.Graph().as_default():
        out = _stacked_pair(**kwargs)[2]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            # Not the initial values: a restore that missed one would show.
            sess.run([v.assign(v + 0.1 * (i + 1)) for i, v in enumerate(
                tf.trainable_variables())])
            expected = sess.run(out)
            tf.train.Saver().save(sess, path)
    saved = sorted(name for name, _ in tf.train.list_variables(path))
    assert saved == sorted(
        "%s/lstm_cell/%s" % (scope, n) for scope in ("rnn", "rnn_1")
        for n in FAST_NAMES if n != "weight_drop_mask")  # a local variable
    with tf.Graph().as_default():
        h = _x(tf.float32)
        for scope in ("rnn", "rnn_1"):
            h, _ = tf.nn.dynamic_rnn(WeightDropLSTMCell(N, **kwargs), h,
                                     dtype=tf.float32, scope=scope)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_allclose(sess.run(h), expected, rtol=1e-5,
                                       atol=1e-6)


def test_cell_bias_and_forget_bias_are_public_reads():
    """What the layer's fast path reads of its cell: ``bias`` (the variable,
    None before build) and ``forget_bias`` (a float)."""
    cell = WeightDropLSTMCell(N, forget_bias=True)
    assert cell.bias is None and cell.forget_bias == 1.0
    assert isinstance(cell.forget_bias, float)
    tf.nn.dynamic_rnn(cell, _x(tf.float32), dtype=tf.float32)
    (bias,) = [v for v in tf.global_variables()
               if v.op.name == "rnn/lstm_cell/bias"]
    assert cell.bias is bias
    assert cell.bias.get_shape().as_list() == [4 * N]
    assert WeightDropLSTMCell(N, forget_bias=-np.inf).forget_bias == -np.inf


def test_the_public_module_gathers_the_same_classes():
    """``weight_drop_lstm`` exports the cell's and the layer's modules'
    class objects, and the layer is built on the private layer base."""
    import weight_drop_lstm as public
    from tf1_awd_sparse.layers import _sequence_base
    from tf1_awd_sparse.layers import weight_drop_lstm_cell as cell_module
    from tf1_awd_sparse.layers import weight_drop_lstm as layer_module
    from tf1_awd_sparse.transforms import kernel
    assert public.sparsity_technique is kernel.sparsity_technique
    assert public.SPARSITY_CHOICES is kernel.SPARSITY_CHOICES
    assert public.WeightDropLSTMCell is cell_module.WeightDropLSTMCell
    assert public.WeightDropLSTM is layer_module.WeightDropLSTM
    assert (WeightDropLSTM, WeightDropLSTMCell) == (
        public.WeightDropLSTM, public.WeightDropLSTMCell)
    assert {"WeightDropLSTMCell", "WeightDropLSTM", "SPARSITY_CHOICES",
            "sparsity_technique"} <= set(public.__all__)
    for name in public.__all__:
        assert getattr(public, name) is not None
    assert issubclass(WeightDropLSTM, _sequence_base.SequenceLayerBase)
