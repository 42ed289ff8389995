"""Property-based tests of the recurrent layers and the quantization
package (issue 13): ``WeightDropLSTMCell`` and ``WeightDropLSTM`` arguments
(keep rates, bit widths, delays, clips, projections, training flags of every
kind), their inputs (dtypes, zero-size and unknown dimensions, initial
states, sequence lengths), the fake-quant helpers (bit widths and ranges at
and past their limits), ``TFLiteRunner.run`` and the kernel transforms'
configs. Each case ends in the documented result (against numpy: TF's
fake-quant nudging and LSTMCell's step, ``test_fake_quant``) or in an
error naming the argument (``support.properties.expect``)."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from hypothesis import given
from hypothesis import strategies as st

from support.properties import (DTYPES, FLAGS, Tensor, build, close, examples,
                              expect, expect_run_error, flag_ok, flag_value, fresh_session,
                              keep_prob_static_ok, keep_probs, mostly,
                              random_array, shapes)
from support.references import fake_quant as np_fake_quant
from support.references import lstm_float_step, nudge
from support.tolerances import lstm_atol, lstm_magnitude
from tf1_awd_sparse import transforms
from tf1_awd_sparse.quantization import TFLiteRunner, export_tflite
from tf1_awd_sparse.ops import fake_quant as fq
from tf1_awd_sparse.export.graphdef import nudged_quantization
from tf1_awd_sparse.base.variable_names import relative_variable_names
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell

BITS = mostly(st.integers(2, 8), st.sampled_from([0, 1, 9, 16, 8.0, True,
                                                  "8", None]))


def _bits_ok(bits):
    return (isinstance(bits, int) and not isinstance(bits, bool)
            and 2 <= bits <= 8)


def _number_ok(value, low=None, low_open=False):
    if isinstance(value, (bool, str, type(None))) or not np.isfinite(value):
        return False
    return low is None or (value > low if low_open else value >= low)


def _lstm_number_ok(value):
    """A number LSTMCell computes with: a real or bool, not NaN."""
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, (int, float)) and not np.isnan(value)


RANGES = mostly(
    st.tuples(st.floats(-8, 0.5), st.floats(0.01, 8)).filter(
        lambda r: r[0] < r[1]),
    st.sampled_from([(1.0, -1.0), (0.0, 0.0), (float("nan"), 1.0),
                     (-1.0, float("inf")), ("0", 1.0),
                     # distinct as float64, one value as float32
                     (0.49999999, 0.5)]))


@examples(2)
@given(shape=shapes(0, 3, 4), x_dtype=mostly(st.just(tf.float32), DTYPES),
       rng_range=RANGES, bits=BITS, narrow=st.booleans(),
       op=st.sampled_from(["fake_quant", "quantize_weight"]),
       seed=st.integers(0, 2 ** 16))
def test_fake_quant_helpers(shape, x_dtype, rng_range, bits, narrow, op,
                            seed):
    rng = np.random.RandomState(seed)
    x = random_array(rng, shape, x_dtype, -10, 10) if x_dtype.is_floating \
        else np.ones(shape, np.int32)
    lo, hi = rng_range
    bad = set()
    if not _bits_ok(bits):
        bad.add("num_bits")
    if x_dtype != tf.float32:
        bad.add("x" if op == "fake_quant" else "weight")
    if op == "fake_quant" and not (
            _number_ok(lo) and _number_ok(hi)
            and np.float32(lo) < np.float32(hi)):
        bad.add("range_")

    with fresh_session() as session:
        def call():
            if op == "fake_quant":
                return fq.fake_quant(tf.constant(x), lo, hi, bits,
                                     narrow_range=narrow)
            return fq.quantize_weight(tf.constant(x), bits)

        def check(y):
            got = session.run(y)
            assert got.shape == shape
            if op == "fake_quant":
                grid = (lo, hi, bits, narrow)
            elif x.size:
                # The weight's own range, widened to contain 0 and to at
                # least MIN_RANGE_WIDTH (TOCO rejects an empty range).
                lo_w, hi_w = min(x.min(), 0.0), max(x.max(), 0.0)
                grid = (lo_w, max(hi_w, lo_w + fq.MIN_RANGE_WIDTH), bits,
                        True)
            else:
                return
            want = np_fake_quant(x, *grid)
            # TF multiplies by 1 / scale where the reference divides: a
            # value within rounding of a half step may round either way.
            nmin, nmax, scale = nudge(*grid)
            steps = (np.clip(x, nmin, nmax) - nmin) / scale
            tie = np.abs(steps - np.floor(steps) - 0.5) < 1e-3
            tolerance = np.where(tie, scale * 1.001, 1e-5 * max(
                [1.0] + list(np.abs(x).ravel())))
            assert np.all(np.abs(got - want) <= tolerance), (got, want)

        expect("quantization.fake_quant", bad, call, check)


@examples(1)
@given(rng_range=RANGES, bits=BITS,
       kind=mostly(st.sampled_from(["sigmoid", "tanh"]), st.just("relu")))
def test_quantization_grids(rng_range, bits, kind):
    lo, hi = rng_range
    bad = set() if _bits_ok(bits) else {"num_bits"}
    range_bad = set(bad)
    if not (_number_ok(lo) and _number_ok(hi)
            and np.float32(lo) < np.float32(hi)):
        range_bad.add("range_")

    def check_nudged(result):
        scale, zero_point = result
        # TF's nudging, written out in support.references.nudge.
        nmin, _, want_scale = nudge(lo, hi, bits)
        # (the reference computes in float32)
        np.testing.assert_allclose(scale, want_scale, rtol=1e-4)
        assert zero_point == int(np.clip(np.round(-lo / scale), 0,
                                         2 ** bits - 1))

    expect("quantization.grids", range_bad,
           lambda: nudged_quantization(lo, hi, bits), check_nudged)

    def check_fixed(result):
        levels = 2.0 ** bits
        want = ((0.0, (levels - 1) / levels) if kind == "sigmoid"
                else (-1.0, 1.0 - 2.0 / levels))
        np.testing.assert_allclose(result, want)

    expect("quantization.grids", bad | ({"kind"} if kind == "relu"
                                        else set()),
           lambda: fq.fixed_output_range(kind, bits), check_fixed)


def _lstm_reference(x, kernel, bias, forget_bias=1.0, lengths=None,
                    c=None, h=None):
    """LSTMCell under dynamic_rnn in numpy: outputs and final (c, h), with
    dynamic_rnn's sequence_length semantics."""
    batch, steps, _ = x.shape
    units = bias.shape[0] // 4
    c = np.zeros((batch, units)) if c is None else c
    h = np.zeros((batch, units)) if h is None else h
    outputs = np.zeros((batch, steps, units))
    for t in range(steps):
        h_new, c_new = lstm_float_step(x[:, t], c, h, kernel, bias,
                                       forget_bias)
        valid = (np.full(batch, True) if lengths is None
                 else t < np.asarray(lengths))[:, None]
        outputs[:, t] = np.where(valid, h_new, 0.0)
        c, h = np.where(valid, c_new, c), np.where(valid, h_new, h)
    return outputs, c, h


# Each cell argument: (values it accepts, values it rejects); a case spoils
# none, one or two of them (every argument valid is then common enough to
# reach the documented result).
CELL_ARGS = {
    "weight_drop_kr": (st.sampled_from([1.0, 0.5, 1e-3]), st.sampled_from(
        [0.0, 1.5, float("nan"), True, Tensor(0.5, tf.float32, ())])),
    "use_vd": (st.booleans(), st.sampled_from([1, "yes"])),
    "is_train": (FLAGS.filter(flag_ok), FLAGS.filter(
        lambda f: not flag_ok(f))),
    "is_quant": (st.booleans(), st.just(1)),
    "weight_bits": (st.integers(2, 8), BITS.filter(
        lambda b: not _bits_ok(b))),
    "activation_bits": (st.integers(2, 8), BITS.filter(
        lambda b: not _bits_ok(b))),
    "quant_delay": (st.sampled_from([0, 3]),
                    st.sampled_from([-1, 2.5, True])),
    "num_proj": (st.sampled_from([None, None, 2]),
                 st.sampled_from([0, -2, 2.5])),
    # Every number LSTMCell computes with (0, a negative clip, True);
    # with is_quant a clip must be > 0 (it bounds a fake-quant range).
    "cell_clip": (st.sampled_from([None, None, 0.5, 3, 0.0, -1.0, True]),
                  st.sampled_from([float("nan"), "1"])),
    "forget_bias": (st.sampled_from([1.0, 0, -0.5, True]),
                    st.sampled_from(["1", float("nan"), None])),
    "sparsity": (st.sampled_from([None, None, "variational_dropout", "l0"]),
                 st.just("vd")),
    "quant_activation": (st.sampled_from(["standard", "hard"]),
                         st.just("relu")),
}


@st.composite
def cell_arguments(draw):
    """The cell's keyword arguments, none, one or two of them invalid."""
    args = {name: draw(valid) for name, (valid, _) in CELL_ARGS.items()}
    spoiled = draw(mostly(st.just(set()), st.sets(
        st.sampled_from(sorted(CELL_ARGS)), min_size=1, max_size=2), 1))
    for name in spoiled:
        args[name] = draw(CELL_ARGS[name][1])
    return args


def _cell_bad(args):
    """The cell's arguments that are invalid (the rules of its docstring)."""
    bad = set()
    if not keep_prob_static_ok(args["weight_drop_kr"], allow_tensor=False):
        bad.add("weight_drop_kr")
    if not isinstance(args["use_vd"], bool):
        bad.add("use_vd")
    if not flag_ok(args["is_train"]):
        bad.add("is_train")
    if not isinstance(args["is_quant"], bool):
        bad.add("is_quant")
    if args["num_proj"] is not None and not (
            isinstance(args["num_proj"], int) and args["num_proj"] > 0):
        bad.add("num_proj")
    if args["cell_clip"] is not None and not _lstm_number_ok(
            args["cell_clip"]) or (
                args["is_quant"] is True and args["cell_clip"] is not None
                and _lstm_number_ok(args["cell_clip"])
                and not _number_ok(float(args["cell_clip"]), 0, True)):
        bad.add("cell_clip")
    if not _lstm_number_ok(args["forget_bias"]):
        bad.add("forget_bias")
    if args["sparsity"] not in (None, "variational_dropout", "l0"):
        bad.add("sparsity")
    if args["is_quant"] is True:
        for name in ("weight_bits", "activation_bits"):
            if not _bits_ok(args[name]):
                bad.add(name)
        delay = args["quant_delay"]
        if isinstance(delay, bool) or not isinstance(delay, int) \
                or delay < 0:
            bad.add("quant_delay")
        if args["quant_activation"] not in ("standard", "hard"):
            bad.add("quant_activation")
    return bad


@examples(1)
@given(args=cell_arguments(),
       batch=st.integers(0, 2), steps=st.integers(0, 3),
       inputs_dtype=mostly(st.just(tf.float32), DTYPES),
       second_depth=mostly(st.just(0), st.just(1)),
       seed=st.integers(0, 2 ** 16))
def test_weight_drop_lstm_cell(args, batch, steps, inputs_dtype,
                               second_depth, seed):
    rng = np.random.RandomState(seed)
    units, depth = 3, 2
    bad = _cell_bad(args)
    if not bad and (not inputs_dtype.is_floating or second_depth or (
            args["is_quant"] and inputs_dtype != tf.float32)):
        bad.add("inputs")
    x = random_array(rng, (batch, steps, depth), inputs_dtype) if \
        inputs_dtype.is_floating else np.ones((batch, steps, depth),
                                              np.int32)

    with fresh_session() as session:
        def call():
            tf.train.get_or_create_global_step()
            kwargs = dict(args, weight_drop_kr=build(args["weight_drop_kr"]),
                          is_train=build(args["is_train"]), seed=seed)
            if not args["is_quant"]:
                for name in ("weight_bits", "activation_bits",
                             "quant_delay", "quant_activation"):
                    kwargs.pop(name)
            cell = WeightDropLSTMCell(units, **kwargs)
            outputs, _ = tf.nn.dynamic_rnn(cell, tf.constant(x),
                                           dtype=inputs_dtype)
            if second_depth:
                wider = np.concatenate([x, x[..., :1]], -1)
                tf.nn.dynamic_rnn(cell, tf.constant(wider),
                                  dtype=inputs_dtype)
            return cell, outputs

        def check(result):
            cell, outputs = result
            session.run([tf.global_variables_initializer(),
                         tf.local_variables_initializer()])
            got = session.run(outputs)
            assert got.shape == (batch, steps, args["num_proj"] or units)
            assert np.all(np.isfinite(got))
            dropping = (flag_value(args["is_train"])
                        and float(args["weight_drop_kr"]) < 1.0)
            if args["is_quant"] or args["sparsity"] or dropping or \
                    args["num_proj"] or args["cell_clip"] is not None:
                return
            # Documented: without dropout the cell computes LSTMCell.
            values = dict(zip(relative_variable_names(cell.weights),
                              session.run(cell.weights)))
            want, _, _ = _lstm_reference(
                x.astype(np.float64), values["kernel"], values["bias"],
                args["forget_bias"])
            close(got, want, inputs_dtype)

        expect("recurrent.WeightDropLSTMCell", bad, call, check)


@examples(1)
@given(shape=mostly(st.tuples(st.integers(0, 2), st.integers(0, 3),
                              st.just(2)),
                    st.sampled_from([(2, 2), (2, 2, 2, 2)])),
       unknown=mostly(st.sampled_from(["", "batch", "time"]),
                      st.just("depth")),
       inputs_dtype=mostly(st.just(tf.float32), DTYPES),
       time_major=mostly(st.booleans(), st.just(1)),
       state=mostly(st.sampled_from(["none", "tuple", "pair"]),
                    st.sampled_from(["wide", "tensor", "dtype"])),
       lengths=mostly(st.sampled_from(["none", "ok"]),
                      st.sampled_from(["float", "matrix", "negative"])),
       seed=st.integers(0, 2 ** 16))
def test_weight_drop_lstm_layer(shape, unknown, inputs_dtype, time_major,
                                state, lengths, seed):
    rng = np.random.RandomState(seed)
    units = 3
    bad = set()
    if not isinstance(time_major, bool):
        bad.add("time_major")
    elif not inputs_dtype.is_floating or len(shape) != 3 or \
            unknown == "depth":
        bad.add("inputs")
    else:
        if state in ("wide", "tensor", "dtype"):
            bad.add("initial_state")
        if lengths in ("float", "matrix"):
            bad.add("sequence_length")
    x = random_array(rng, shape, inputs_dtype) if \
        inputs_dtype.is_floating else np.ones(shape, np.int32)
    batch, steps = (shape[1], shape[0]) if time_major is True and \
        len(shape) == 3 else shape[:2]
    seq = rng.randint(0, steps + 2, size=batch)
    if lengths == "negative" and batch:
        seq[0] = -1
    np_dtype = inputs_dtype.as_numpy_dtype if inputs_dtype.is_floating \
        else np.float32
    c0, h0 = (rng.randn(batch, units).astype(np_dtype) for _ in range(2))

    with fresh_session() as session:
        def call():
            static = list(shape)
            if len(shape) == 3:
                index = {"": None, "batch": 1 if time_major is True else 0,
                         "time": 0 if time_major is True else 1,
                         "depth": 2}[unknown]
                if index is not None:
                    static[index] = None
            inputs = build(Tensor(x, inputs_dtype, tuple(static)))
            initial = {
                "none": None,
                "tuple": tf.nn.rnn_cell.LSTMStateTuple(tf.constant(c0),
                                                       tf.constant(h0)),
                "pair": (tf.constant(c0), tf.constant(h0)),
                "wide": (tf.zeros([batch, units + 1], np_dtype),) * 2,
                "tensor": tf.constant(c0),
                "dtype": (tf.zeros([batch, units], tf.int32),) * 2}[state]
            # Fed, not constant: TF 1.15 evaluates an assertion on a
            # constant while the graph is built.
            length = {"none": None,
                      "ok": build(Tensor(seq, tf.int32, (batch,))),
                      "negative": build(Tensor(seq, tf.int32, (batch,))),
                      "float": tf.constant(seq, tf.float32),
                      "matrix": tf.constant(seq[None], tf.int32)}[lengths]
            layer = WeightDropLSTM(units, time_major=time_major)
            outputs, final = layer(inputs, initial_state=initial,
                                   sequence_length=length)
            return layer, outputs, final

        def check(result):
            layer, outputs, final = result
            session.run(tf.global_variables_initializer())
            if lengths == "negative" and batch:
                expect_run_error("recurrent.WeightDropLSTM",
                                 "sequence_length",
                                 lambda: session.run(outputs))
                return
            got, (c, h) = session.run([outputs, final])
            values = dict(zip(relative_variable_names(layer.weights),
                              session.run(layer.weights)))
            batch_major = x.transpose(1, 0, 2) if time_major else x
            want, want_c, want_h = _lstm_reference(
                batch_major.astype(np.float64), values["kernel"],
                values["bias"], lengths=None if lengths == "none" else seq,
                c=None if state == "none" else c0.astype(np.float64),
                h=None if state == "none" else h0.astype(np.float64))
            if time_major:
                want = want.transpose(1, 0, 2)
            close(got, want, inputs_dtype)
            close(c, want_c, inputs_dtype)
            close(h, want_h, inputs_dtype)

        expect("recurrent.WeightDropLSTM", bad, call, check)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A float TFLite model of a one-layer cell (batch 2, 3 steps, depth 2)
    and the cell's values."""
    path = str(tmp_path_factory.mktemp("props") / "float.tflite")
    with fresh_session() as session:
        cell = WeightDropLSTMCell(3)
        tf.nn.dynamic_rnn(cell, tf.zeros([2, 3, 2]), dtype=tf.float32)
        session.run(tf.global_variables_initializer())
        values = dict(zip(relative_variable_names(cell.weights),
                          session.run(cell.weights)))
        export_tflite(cell, 2, 3, float_path=path, session=session)
    return path, values


ARRAYS = mostly(st.just("ok"), st.sampled_from(
    ["shape", "nan", "inf", "text"]))


@examples(1)
@given(inputs=ARRAYS, state_key=mostly(
    st.sampled_from([None, "state_0_c", "state_0_h"]),
    st.sampled_from(["state_0", "inputs", "final_0_c"])),
       state_value=ARRAYS, seed=st.integers(0, 2 ** 16))
def test_tflite_runner_run(exported, inputs, state_key, state_value, seed):
    path, values = exported
    rng = np.random.RandomState(seed)

    def array(kind, shape):
        good = rng.randn(*shape).astype(np.float32)
        if kind == "shape":
            return good[:, :-1]
        if kind in ("nan", "inf"):
            good.flat[0] = np.nan if kind == "nan" else np.inf
        return "abc" if kind == "text" else good

    x = array(inputs, (2, 3, 2))
    state = {} if state_key is None else {state_key: array(state_value,
                                                           (2, 3))}
    bad = set()
    if inputs != "ok":
        bad.add("inputs")
    if state_key is not None:
        if state_key not in ("state_0_c", "state_0_h"):
            bad.add("state")
        elif state_value != "ok":
            bad.add(state_key)
    runner = TFLiteRunner(path)

    def check(result):
        c = state.get("state_0_c", np.zeros((2, 3), np.float32))
        h = state.get("state_0_h", np.zeros((2, 3), np.float32))
        want, want_c, want_h = _lstm_reference(
            x.astype(np.float64), values["kernel"], values["bias"],
            c=c.astype(np.float64), h=h.astype(np.float64))
        # The float file's float32 LSTM against the float64 reference:
        # lstm_atol over its steps, sized by its weights and inputs; a fed
        # c (up to ~4) scales the roundings of f * c and what reads it.
        kernel = values["kernel"]
        atol = max(1.0, np.abs(c).max()) * lstm_atol(
            x.shape[1], kernel.shape[0] + 1, lstm_magnitude(
                kernel, values["bias"], max(np.abs(x).max(),
                                            np.abs(h).max())))
        np.testing.assert_allclose(result["outputs"], want, atol=atol)
        np.testing.assert_allclose(result["final_0_c"], want_c, atol=atol)
        np.testing.assert_allclose(result["final_0_h"], want_h, atol=atol)

    expect("quantization.TFLiteRunner", bad,
           lambda: runner.run(x, state), check)


@examples(1)
@given(keep=keep_probs(allow_tensor=False),
       held=mostly(st.booleans(), st.sampled_from([1, None])),
       drop_inputs=mostly(st.booleans(), st.just("no")),
       seed=mostly(st.sampled_from([None, 3]), st.sampled_from(["a", 1.5])),
       config_kind=mostly(st.just("dict"), st.sampled_from(
           ["string", "class", "keyword"])))
def test_kernel_transform_configs(keep, held, drop_inputs, seed,
                                  config_kind):
    bad = set()
    if not keep_prob_static_ok(keep, allow_tensor=False):
        bad.add("keep_prob")
    if not isinstance(held, bool):
        bad.add("held")
    if not isinstance(drop_inputs, bool):
        bad.add("drop_input_weights")
    if seed is not None and not isinstance(seed, int):
        bad.add("seed")

    def make():
        return transforms.DropConnect(keep, held=held,
                                      drop_input_weights=drop_inputs,
                                      seed=seed)

    def round_trip(transform):
        config = transforms.serialize(transform)
        assert transforms.from_config(config).get_config() == \
            transform.get_config()
        bad_config = {"string": "DropConnect",
                      "class": {"class_name": "Dropout", "config": {}},
                      "keyword": {"class_name": "DropConnect",
                                  "config": {"kp": 0.5}},
                      "dict": None}[config_kind]
        if bad_config is not None:
            expect("transforms", {"config", "class_name"},
                   lambda: transforms.from_config(bad_config))

    expect("transforms", bad, make, round_trip)
