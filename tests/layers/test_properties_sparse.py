"""Property-based tests of ``sparse_layers`` (issue 13): the stateless ops of
both techniques (shapes with zero-size and unknown dimensions, dtypes,
options at and past their limits, ids out of range), the layers and cells
(training flags of every kind, inputs that do not fit), the losses and the
report. Each case ends in the documented result (evaluation outputs and
penalties against numpy, written here from the papers' formulas) or in an
error naming the argument (``support.properties.expect``)."""
import os

import numpy as np
import tensorflow.compat.v1 as tf
from hypothesis import assume, given
from hypothesis import strategies as st

from support.properties import (CASES, DTYPES, FLAGS, FLOATS, Tensor, build,
                              close, examples, expect, expect_run_error,
                              flag_ok, flag_value, fresh_session, mostly,
                              random_array, random_ids, shapes)
from sparse_layers import losses, report, techniques
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.l0_regularization import nn as l0_nn
from sparse_layers.l0_regularization import rnn as l0_rnn
from sparse_layers.variational_dropout import layers as vd_layers
from sparse_layers.variational_dropout import nn as vd_nn
from sparse_layers.variational_dropout import rnn as vd_rnn
from support.references import sigmoid
from support.versions import needs_xla_compile, xla_compile

NN = {"vd": vd_nn, "l0": l0_nn}
PARAMS = {"vd": "variational_params", "l0": "weight_parameters"}
BAD_NUMBERS = [float("nan"), float("inf"), "3", True, None]

# Options at and past their limits: (accepted values, rejected values).
# None is accepted only for clip_alpha.
OPTIONS = {
    "clip_alpha": (st.sampled_from([None, 0, 3, 8.0]),
                   st.sampled_from([-1.0, float("nan"), "3", True])),
    "eps": (st.sampled_from([1e-8, 1e-3]),
            st.sampled_from([0.0, -1e-8] + BAD_NUMBERS)),
    "threshold": (st.sampled_from([3.0, -1.0, 0, 10]),
                  st.sampled_from(BAD_NUMBERS)),
    "beta": (st.sampled_from([2. / 3., 0.1, 5]),
             st.sampled_from([0.0, -0.5] + BAD_NUMBERS)),
    "gamma": (st.sampled_from([-0.1, -1e-3, -2]),
              st.sampled_from([0.0, 0.1, 2.0] + BAD_NUMBERS)),
    "zeta": (st.sampled_from([1.1, 1.001, 3]),
             st.sampled_from([1.0, 0.9, -1.0] + BAD_NUMBERS)),
}
DEFAULTS = {"clip_alpha": None, "eps": 1e-8, "threshold": 3.0,
            "beta": 2. / 3., "gamma": -0.1, "zeta": 1.1}
KINDS = {("vd", "train"): ("clip_alpha", "eps"),
         ("vd", "eval"): ("threshold", "eps"),
         ("l0", "train"): ("beta", "gamma", "zeta", "eps"),
         ("l0", "eval"): ("gamma", "zeta")}


def _option_ok(name, value):
    if value is None:
        return name == "clip_alpha"
    if isinstance(value, (bool, str)) or not np.isfinite(value):
        return False
    return {"clip_alpha": value >= 0, "eps": value > 0, "threshold": True,
            "beta": value > 0, "gamma": value < 0,
            "zeta": value > 1}[name]


@st.composite
def technique_options(draw, technique, mode):
    """(options dict for the op, names of the bad ones): all valid, or one
    or two of them rejected values."""
    names = KINDS[technique, mode]
    options = {name: draw(OPTIONS[name][0]) for name in names}
    spoiled = draw(mostly(st.just(set()), st.sets(
        st.sampled_from(names), min_size=1, max_size=2), 2))
    for name in spoiled:
        options[name] = draw(OPTIONS[name][1])
    return options, {n for n, v in options.items() if not _option_ok(n, v)}


def np_eval_weights(technique, theta, aux, options):
    """The evaluation weights from the papers: VD zeroes weights whose
    log(alpha) = log(sigma^2) - log(theta^2 + eps) is >= threshold (Molchanov
    et al. 2017); L0 scales by clip(sigmoid(log_alpha) (zeta - gamma) +
    gamma, 0, 1) (Louizos et al. 2018)."""
    opts = dict(DEFAULTS, **options)
    theta = np.asarray(theta, np.float64)
    if technique == "vd":
        log_alpha = aux - np.log(theta ** 2 + opts["eps"])
        return theta * (log_alpha < opts["threshold"])
    gate = np.clip(sigmoid(aux) * (opts["zeta"] - opts["gamma"])
                   + opts["gamma"], 0.0, 1.0)
    return theta * gate


def _pair(rng, shape, dtype, technique):
    theta = random_array(rng, shape, dtype)
    # VD: log(sigma^2) around log(theta^2) so both sides of the threshold
    # occur; L0: log_alpha around 0 so gates are open, closed and between.
    aux = random_array(rng, shape, dtype, -6.0, 4.0)
    return theta, aux


#: Whether TensorFlow runs its oneDNN kernels (2.x on x86, unless
#: TF_ENABLE_ONEDNN_OPTS=0).
ONEDNN = (not tf.__version__.startswith("1.")
          and os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") != "0")


@examples(6)
@given(technique=st.sampled_from(["vd", "l0"]),
       mode=st.sampled_from(["train", "eval"]),
       op=st.sampled_from(["matmul", "broadcast_matmul", "weights"]),
       dims=st.tuples(st.integers(0, 3), st.integers(0, 3),
                      st.integers(0, 3)),
       extra=st.integers(0, 2), unknown_batch=st.booleans(),
       transpose=st.tuples(st.booleans(), st.booleans()),
       params_dtype=st.sampled_from(FLOATS),
       # One thing wrong with x or the parameters, in a quarter of cases.
       spoil=mostly(st.just(None), st.sampled_from(
           ["mismatch", "rank-", "rank+", "x_dtype", "params_dtype",
            "single", "triple", "shapes", "dtypes"]), 3),
       x_dtype_other=DTYPES, data=st.data(), seed=st.integers(0, 2 ** 16))
def test_sparse_matmul_ops(technique, mode, op, dims, extra, unknown_batch,
                           transpose, params_dtype, spoil, x_dtype_other,
                           data, seed):
    mismatch = int(spoil == "mismatch")
    x_rank_change = {"rank-": -1, "rank+": 1}.get(spoil, 0)
    params_ok = spoil if spoil in ("single", "triple", "shapes",
                                   "dtypes") else "pair"
    if spoil == "params_dtype":
        params_dtype = tf.int32
    rng = np.random.RandomState(seed)
    x_dtype = x_dtype_other if spoil == "x_dtype" else params_dtype
    batch, rows, cols = dims
    # TF 2.x's oneDNN kernels (on by default on x86) die of SIGFPE on some
    # zero-size broadcast products (seen on an AVX-512 Xeon with TF 2.15:
    # vd train, x [0, 0, 1]; none with TF_ENABLE_ONEDNN_OPTS=0): no test
    # process may die, so those cases run only without oneDNN.
    assume(not (ONEDNN and op == "broadcast_matmul" and 0 in dims))
    options, bad = data.draw(technique_options(technique, mode))
    params_name = PARAMS[technique]
    transpose_a, transpose_b = transpose if op == "matmul" else (False,
                                                                 False)
    w_shape = (cols, rows) if transpose_b else (rows, cols)
    theta, aux = _pair(rng, w_shape, params_dtype if
                       params_dtype.is_floating else tf.float32, technique)
    if not params_dtype.is_floating or params_ok != "pair":
        bad.add(params_name)
    inner = rows + mismatch
    if op == "matmul":
        x_shape = (inner, batch) if transpose_a else (batch, inner)
        x_shape = {0: x_shape, -1: x_shape[1:], 1: (1,) + x_shape}[
            x_rank_change]
    else:
        x_shape = (batch,) + (2,) * (extra + max(x_rank_change, 0)) + (
            inner,)
        if x_rank_change < 0:
            x_shape = (inner,)
    x = random_array(rng, x_shape, x_dtype) if x_dtype.is_floating else \
        np.ones(x_shape, x_dtype.as_numpy_dtype)
    if op != "weights" and (x_dtype != params_dtype or mismatch or (
            op == "matmul" and x_rank_change) or (
                op == "broadcast_matmul" and len(x_shape) < 2)):
        bad.add("x")
    nn = NN[technique]

    with fresh_session() as session:
        def call():
            if params_ok == "single":
                params = tf.constant(theta)
            elif params_ok == "triple":
                params = (tf.constant(theta),) * 3
            elif params_ok == "shapes":
                params = (tf.constant(theta), tf.zeros(
                    (w_shape[0], w_shape[1] + 1), theta.dtype))
            elif params_ok == "dtypes":
                params = (tf.constant(theta), tf.constant(
                    aux.astype(np.float64 if theta.dtype != np.float64
                               else np.float32)))
            else:
                params = tuple(tf.constant(v.astype(
                    params_dtype.as_numpy_dtype)) for v in (theta, aux))
            kwargs = dict(options)
            if op == "weights":
                return getattr(nn, mode + "_weights")(params, **kwargs)
            # The batch axis unknown (the contracted one must be known
            # to be checked before the graph runs).
            static = list(x_shape)
            if unknown_batch and len(x_shape) >= 2:
                static[1 if transpose_a and op == "matmul" else 0] = None
            x_tensor = build(Tensor(x, x_dtype, tuple(static)))
            if op == "matmul":
                kwargs.update(transpose_a=transpose_a,
                              transpose_b=transpose_b)
            return getattr(nn, "%s_%s" % (op, mode))(x_tensor, params,
                                                     **kwargs)

        def check(y):
            got = session.run(y)
            assert np.all(np.isfinite(got))
            weights = np_eval_weights(technique, theta, aux, options)
            if transpose_b:
                weights = weights.T
            if op == "weights":
                assert got.shape == theta.shape
                if mode == "eval":
                    close(got, weights.T if transpose_b else weights,
                          params_dtype)
                elif technique == "l0":
                    # theta times a gate in [0, 1].
                    ratio = got[theta != 0] / theta[theta != 0]
                    assert np.all((ratio >= -1e-3) & (ratio <= 1 + 1e-3))
                return
            xa = x.T if transpose_a else x
            want = np.tensordot(xa.astype(np.float64), weights, axes=1)
            assert got.shape == want.shape
            if mode == "eval":
                close(got, want, params_dtype)

        expect("sparse.%s.%s_ops" % (technique, mode), bad, call, check)


@examples(1)
@given(technique=st.sampled_from(["vd", "l0"]),
       mode=st.sampled_from(["train", "eval"]),
       data_format=mostly(st.sampled_from(["NHWC", "NCHW"]),
                          st.just("HWCN")),
       padding=mostly(st.sampled_from(["SAME", "VALID"]),
                      st.sampled_from(["same", "full"])),
       strides=mostly(st.sampled_from([(1, 1), (2, 1)]),
                      st.sampled_from([(0, 1), (1,)])),
       channel_mismatch=mostly(st.just(0), st.just(1)),
       x_dtype=DTYPES, batch=st.integers(0, 2), data=st.data(),
       seed=st.integers(0, 2 ** 16))
def test_sparse_conv2d_ops(technique, mode, data_format, padding, strides,
                           channel_mismatch, x_dtype, batch, data, seed):
    rng = np.random.RandomState(seed)
    options, bad = data.draw(technique_options(technique, mode))
    theta, aux = _pair(rng, (2, 2, 3, 2), tf.float32, technique)
    channels = 3 + channel_mismatch
    nhwc = (batch, 4, 4, channels)
    x = random_array(rng, nhwc, x_dtype) if x_dtype.is_floating else \
        np.ones(nhwc, x_dtype.as_numpy_dtype)
    if data_format == "NCHW":
        x = x.transpose(0, 3, 1, 2)
    if data_format not in ("NHWC", "NCHW"):
        bad.add("data_format")
    elif x_dtype != tf.float32 or channel_mismatch:
        bad.add("x")
    if padding not in ("SAME", "VALID"):
        bad.add("padding")
    if len(strides) != 2 or min(strides) < 1:
        bad.add("strides")
    full_strides = ([1, 1] + list(strides) if data_format == "NCHW"
                    else [1] + list(strides) + [1])

    with fresh_session() as session:
        def call():
            return getattr(NN[technique], "conv2d_" + mode)(
                tf.constant(x), (tf.constant(theta), tf.constant(aux)),
                full_strides, padding, data_format=data_format, **options)

        def check(y):
            got = session.run(y)
            assert np.all(np.isfinite(got))
            if mode == "train":
                return
            # The eval op is a plain conv of the evaluation weights.
            weights = np_eval_weights(technique, theta, aux, options)
            ref = tf.nn.conv2d(tf.constant(x if data_format == "NHWC"
                                           else x.transpose(0, 2, 3, 1)),
                               tf.constant(weights.astype(np.float32)),
                               [1] + list(strides) + [1], padding)
            want = session.run(ref)
            if data_format == "NCHW":
                want = want.transpose(0, 3, 1, 2)
            close(got, want, tf.float32)

        expect("sparse.%s.%s_ops" % (technique, mode), bad, call, check)


@examples(2)
@given(technique=st.sampled_from(["vd", "l0"]),
       mode=st.sampled_from(["train", "eval"]),
       vocab=st.integers(1, 5), depth=st.integers(0, 3),
       ids_shape=shapes(0, 3), ids_dtype=mostly(
           st.sampled_from([tf.int32, tf.int64]),
           st.sampled_from([tf.float32, tf.int16])),
       out_of_range=st.sampled_from([False, False, True]),
       data=st.data(), seed=st.integers(0, 2 ** 16))
def test_sparse_embedding_lookups(technique, mode, vocab, depth, ids_shape,
                                  ids_dtype, out_of_range, data, seed):
    rng = np.random.RandomState(seed)
    options, bad = data.draw(technique_options(technique, mode))
    theta, aux = _pair(rng, (vocab, depth), tf.float32, technique)
    ids = random_ids(rng, vocab, ids_shape, out_of_range)
    if ids_dtype not in (tf.int32, tf.int64):
        bad.add("ids")

    with fresh_session() as session:
        def call():
            return getattr(NN[technique], "embedding_lookup_" + mode)(
                (tf.constant(theta), tf.constant(aux)),
                build(Tensor(ids, ids_dtype, (None,) * len(ids_shape))),
                **options)

        def check(y):
            if out_of_range and ids.size:
                expect_run_error("sparse.embedding_lookup", "ids",
                                 lambda: session.run(y))
                return
            got = session.run(y)
            assert got.shape == ids_shape + (depth,)
            assert np.all(np.isfinite(got))
            if mode == "eval":
                close(got, np_eval_weights(technique, theta, aux,
                                           options)[ids], tf.float32)

        expect("sparse.embedding_lookup", bad, call, check)


@needs_xla_compile
def test_embedding_ids_out_of_range_are_clamped_under_xla(sess):
    # The documented exception to the run-time check: XLA drops
    # assertions, so there ids are clamped into [0, vocab) (as XLA's own
    # gather does), never silently turned into rows of zeros. xla_compile:
    # tests/support/versions.py.
    rng = np.random.RandomState(0)
    theta = rng.randn(5, 3).astype(np.float32)
    aux = np.full_like(theta, 50.0)  # L0 gates fully open
    ids = np.array([[0, 7], [-2, 4]])

    def computation():
        return l0_nn.embedding_lookup_eval(
            (tf.constant(theta), tf.constant(aux)),
            tf.constant(ids, tf.int32))

    (compiled,) = xla_compile(computation)
    np.testing.assert_allclose(sess.run(compiled),
                               theta[np.clip(ids, 0, 4)], rtol=1e-6)


@examples(1)
@given(technique=st.sampled_from(["vd", "l0"]),
       layer_kind=st.sampled_from(["dense", "dense", "conv"]),
       inputs_dtype=DTYPES, second_depth=mostly(st.just(0), st.just(1)),
       inputs_rank=st.sampled_from([2, 3]), training=FLAGS,
       units=mostly(st.integers(1, 3), st.sampled_from([0, -1, 2.5])),
       data=st.data(), seed=st.integers(0, 2 ** 16))
def test_sparse_layers(technique, layer_kind, inputs_dtype, second_depth,
                       inputs_rank, training, units, data, seed):
    rng = np.random.RandomState(seed)
    options, _ = data.draw(technique_options(technique, "train"))
    options.update(data.draw(technique_options(technique, "eval"))[0])
    bad = {n for n, v in options.items() if not _option_ok(n, v)}
    module = {"vd": vd_layers, "l0": l0_layers}[technique]
    if not isinstance(units, int) or units < 1:
        bad.add("filters" if layer_kind == "conv" else "units")
    if not flag_ok(training):
        bad.add("training")
    if not inputs_dtype.is_floating:
        bad.add("inputs")
    shape = ((2, 4, 4, 3) if layer_kind == "conv" else
             (2, 3) if inputs_rank == 2 else (2, 2, 3))
    x = random_array(rng, shape, inputs_dtype) if \
        inputs_dtype.is_floating else np.ones(shape, np.int32)
    if second_depth:
        bad.add("inputs")
    bad = {n for n in bad if n in options or n in (
        "units", "filters", "training", "inputs")}

    with fresh_session() as session:
        def call():
            if layer_kind == "conv":
                layer = module.Conv2D(units, 2, **options)
            else:
                layer = module.FullyConnected(units, **options)
            y = layer(tf.constant(x), training=build(training))
            if second_depth:
                wider = np.concatenate([x, x[..., :1]], -1)
                layer(tf.constant(wider), training=build(training))
            return layer, y

        def check(result):
            layer, y = result
            session.run(tf.global_variables_initializer())
            got, theta, aux, bias = session.run(
                [y, layer.kernel, layer.aux, layer.bias])
            assert np.all(np.isfinite(got))
            if flag_value(training) or layer_kind == "conv":
                assert got.shape == shape[:-1] + (units,) or \
                    layer_kind == "conv"
                return
            weights = np_eval_weights(technique, theta, aux, options)
            close(got, np.tensordot(x.astype(np.float64), weights, 1)
                  + bias, inputs_dtype)

        expect("sparse.layers", bad, call, check)


@examples(1)
@given(technique=st.sampled_from(["vd", "l0"]),
       cell_kind=st.sampled_from(["rnn", "lstm"]),
       kernel_ok=mostly(st.just("ok"), st.sampled_from(
           ["cols", "rows", "dtype"])),
       bias_ok=mostly(st.just(True), st.just(False)),
       inputs_dtype=mostly(st.just(tf.float32), st.sampled_from(
           [tf.float64, tf.int32])),
       depth_mismatch=mostly(st.just(0), st.just(1)),
       unknown_batch=mostly(st.just(False), st.just(True)),
       training=FLAGS, steps=st.integers(0, 3),
       units=mostly(st.integers(1, 3), st.sampled_from([0, 2.5])),
       seed=st.integers(0, 2 ** 16))
def test_sparse_cells(technique, cell_kind, kernel_ok, bias_ok,
                      inputs_dtype, depth_mismatch, unknown_batch, training,
                      steps, units, seed):
    rng = np.random.RandomState(seed)
    depth, batch = 2, 3
    valid_units = isinstance(units, int) and units >= 1
    n = units if valid_units else 2
    gates = 4 if cell_kind == "lstm" else 1
    k_shape = {"ok": (depth + n, gates * n), "cols": (depth + n, gates * n
                                                      + 1),
               "rows": (n, gates * n), "dtype": (depth + n, gates * n)}[
                   kernel_ok]
    theta, aux = _pair(rng, k_shape, tf.float32, technique)
    bias = rng.randn(gates * n + (0 if bias_ok else 1)).astype(np.float32)
    bad = set()
    if not valid_units:
        bad.add("num_units")
    if not flag_ok(training):
        bad.add("training")
    if kernel_ok != "ok":
        bad.add("kernel_weights")
    if not bias_ok:
        bad.add("bias_weights")
    if not bad:
        if inputs_dtype != tf.float32 or depth_mismatch:
            bad.add("inputs")
        elif unknown_batch and steps and technique == "vd" and not (
                training is False or (isinstance(training, np.bool_)
                                      and not training)):
            # VD holds per-example noise: the training branch (built for
            # any flag but a Python False) needs a static batch.
            bad.add("inputs")
    x = np.ones((batch, steps, depth + depth_mismatch),
                inputs_dtype.as_numpy_dtype)
    if inputs_dtype.is_floating:
        x = random_array(rng, x.shape, inputs_dtype)
    module = {"vd": vd_rnn, "l0": l0_rnn}[technique]

    with fresh_session() as session:
        def call():
            params = (tf.constant(theta), tf.constant(
                aux.astype(np.float64) if kernel_ok == "dtype" else aux))
            cls = module.LSTMCell if cell_kind == "lstm" else module.RNNCell
            cell = cls(params, tf.constant(bias), units,
                       training=build(training))
            # (dynamic_rnn itself cannot stack zero steps of an unknown
            # batch: TensorArray's UnimplementedError, not the cells')
            inputs = build(Tensor(x, inputs_dtype, (
                None if unknown_batch and steps else batch, steps,
                x.shape[2])))
            return tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)[0]

        def check(outputs):
            got = session.run(outputs)
            assert got.shape == (batch, steps, n)
            assert np.all(np.isfinite(got))
            if cell_kind == "rnn" and not flag_value(training):
                weights = np_eval_weights(technique, theta, aux, {})
                h = np.zeros((batch, n))
                for t in range(steps):
                    h = np.tanh(np.concatenate([x[:, t], h], 1) @ weights
                                + bias)
                    close(got[:, t], h, tf.float32)

        expect("sparse.cells", bad, call, check)


@examples(1)
@given(weight=mostly(st.floats(0, 10), st.sampled_from(
    [-1.0, float("nan"), float("inf"), "1", None])),
       begin=mostly(st.integers(0, 20), st.sampled_from([1.5, "0"])),
       span=mostly(st.integers(0, 20), st.just(-3)),
       step=st.integers(0, 50),
       step_dtype=mostly(st.sampled_from([tf.int64, tf.int32]),
                         st.just(tf.float32)))
def test_ramp_weight(weight, begin, span, step, step_dtype):
    bad = set()
    if isinstance(weight, (str, type(None))) or not np.isfinite(weight) \
            or weight < 0:
        bad.add("weight")
    if not isinstance(begin, int):
        bad.add("begin_step")
    if not bad and span < 0:
        bad.add("end_step")
    if not step_dtype.is_integer:
        bad.add("global_step")
    end = (begin + span) if isinstance(begin, int) else span

    with fresh_session() as session:
        def call():
            return losses.ramp_weight(weight, begin, end,
                                      tf.constant(step, step_dtype))

        def check(value):
            if end == begin:
                want = weight * (step >= begin)
            else:
                want = weight * np.clip((step - begin) / (end - begin), 0, 1)
            close(session.run(value), want, tf.float32)

        expect("sparse.losses", bad, call, check)


@examples(1)
@given(technique=st.sampled_from(["vd", "l0"]),
       shape=shapes(1, 2), data=st.data(), seed=st.integers(0, 2 ** 16))
def test_penalties_and_report(technique, shape, data, seed):
    rng = np.random.RandomState(seed)
    options, bad = data.draw(technique_options(technique, "train"))
    options.pop("eps" if technique == "l0" else "_", None)
    bad = {n for n in bad if n in options}
    eval_options, eval_bad = data.draw(technique_options("vd", "eval"))
    theta, aux = _pair(rng, shape, tf.float32, technique)
    options_ok = not bad

    with fresh_session() as session:
        pair = (tf.Variable(theta), tf.Variable(aux))
        techniques.register_pair(
            "variational_dropout" if technique == "vd" else "l0", pair)
        session.run(tf.global_variables_initializer())
        loss = losses.kl_loss if technique == "vd" else losses.l0_loss

        def penalty():
            return loss(summaries=False, **options)

        def check_penalty(value):
            opts = dict(DEFAULTS, **options)
            if technique == "vd":
                # Molchanov et al. 2017, eq. 14: -KL ~ k1 sigmoid(k2 + k3
                # log_alpha) - 0.5 log(1 + 1 / alpha) - k1.
                log_alpha = aux - np.log(theta.astype(np.float64) ** 2
                                         + opts["eps"])
                if opts["clip_alpha"] is not None:
                    log_alpha = np.clip(log_alpha, -opts["clip_alpha"],
                                        opts["clip_alpha"])
                neg_kl = (0.63576 * sigmoid(1.8732 + 1.48695 * log_alpha)
                          - 0.5 * np.log1p(np.exp(-log_alpha)) - 0.63576)
                want = -neg_kl.sum()
            else:
                # Louizos et al. 2018, eq. 12.
                want = sigmoid(aux - opts["beta"] * np.log(
                    -opts["gamma"] / opts["zeta"])).sum()
            np.testing.assert_allclose(session.run(value), want, rtol=1e-4,
                                       atol=1e-4)

        expect("sparse.losses", bad if not options_ok else set(), penalty,
               check_penalty)

        report_options = dict(eval_options)
        if technique == "l0":
            report_options = {k: v for k, v in options.items()
                              if k in ("gamma", "zeta")}
            eval_bad = {k for k in bad if k in report_options}

        def fraction():
            return report.sparsity_report(summaries=False, **report_options)

        def check_fraction(result):
            weights = np_eval_weights(technique, theta, aux, report_options)
            if technique == "vd":
                zero = ~(aux - np.log(theta.astype(np.float64) ** 2 + dict(
                    DEFAULTS, **report_options)["eps"]) < dict(
                        DEFAULTS, **report_options)["threshold"])
            else:
                zero = weights == 0
            # Over no weights the fraction is 0 (it was NaN).
            np.testing.assert_allclose(session.run(result["global"]),
                                       zero.mean() if zero.size else 0.0,
                                       atol=1e-6)

        expect("sparse.report", eval_bad, fraction, check_fraction)


@examples(1)
@given(technique=st.sampled_from(["vd", "l0"]),
       op=st.sampled_from(["matmul", "broadcast_matmul", "weights",
                           "embedding_lookup"]),
       dtype=st.sampled_from(FLOATS), zero_theta=st.booleans(),
       zero_x=st.booleans(), aux=st.sampled_from([-30.0, -10.0, 0.0, 8.0,
                                                  30.0]),
       seed=st.integers(0, 2 ** 16))
def test_sparse_train_gradients_are_finite(technique, op, dtype, zero_theta,
                                           zero_x, aux, seed):
    # Zero weights and zero inputs in every float dtype: the numerical
    # floors must not round to 0 (in float16 eps = 1e-8 did, and a zero
    # input row gave NaN gradients through sqrt(0)).
    if dtype == tf.float16 and technique == "vd":
        # exp(log_sigma2) must be a float16 (< 65504): log_sigma2 <= 11.
        aux = min(aux, 8.0)
    rng = np.random.RandomState(seed)
    theta_value = np.zeros((3, 2)) if zero_theta else rng.randn(3, 2)
    x_value = np.zeros((2, 3)) if zero_x else rng.randn(2, 3)
    with fresh_session() as session:
        theta = tf.constant(theta_value, dtype)
        aux_t = tf.fill([3, 2], tf.constant(aux, dtype))
        x = tf.constant(x_value, dtype)
        nn = NN[technique]
        if op == "weights":
            y = nn.train_weights((theta, aux_t))
        elif op == "embedding_lookup":
            y = nn.embedding_lookup_train((theta, aux_t), tf.constant([0, 2]))
        else:
            y = getattr(nn, op + "_train")(x, (theta, aux_t))
        penalty = (nn.negative_dkl((theta, aux_t)) if technique == "vd"
                   else nn.l0_norm(aux_t))
        loss = tf.reduce_sum(y) + penalty
        grads = session.run([tf.convert_to_tensor(g) for g in tf.gradients(
            loss, [theta, aux_t, x]) if g is not None])
        for grad in grads:
            assert np.all(np.isfinite(grad)), grads
        CASES["sparse.%s.train_ops" % technique, "documented result"] += 1
