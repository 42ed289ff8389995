"""Drop-in means every value ``tf.nn.rnn_cell.LSTMCell`` takes (issue
19.4): for each ``LSTMCell`` argument value it computes with on every
supported TensorFlow version,
``WeightDropLSTMCell`` (under ``dynamic_rnn``) and ``WeightDropLSTM``
compute the same outputs and final states as ``LSTMCell`` on the same
weights (copied by assignment); values ``LSTMCell`` fails on are named
errors at construction."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base import compat as _compat
from support.references import lstm_tolerance
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell

B, T, D, N = 3, 4, 5, 6
INF = float("inf")

# (id, LSTMCell keyword arguments); num_proj-only arguments bring num_proj.
VALUES = [
    ("cell_clip_0", dict(cell_clip=0.0)),
    ("cell_clip_true", dict(cell_clip=True)),
    ("cell_clip_false", dict(cell_clip=False)),
    ("cell_clip_negative", dict(cell_clip=-0.5)),
    ("cell_clip_small", dict(cell_clip=0.05)),
    ("cell_clip_int", dict(cell_clip=1)),
    ("cell_clip_numpy", dict(cell_clip=np.float32(0.1))),
    ("cell_clip_inf", dict(cell_clip=INF)),
    ("forget_bias_0", dict(forget_bias=0.0)),
    ("forget_bias_true", dict(forget_bias=True)),
    ("forget_bias_int", dict(forget_bias=2)),
    ("forget_bias_numpy", dict(forget_bias=np.float64(-0.5))),
    ("forget_bias_inf", dict(forget_bias=INF)),
    ("forget_bias_minus_inf", dict(forget_bias=-INF)),
    ("num_proj", dict(num_proj=3)),
    ("num_proj_numpy", dict(num_proj=np.int64(4))),
    ("proj_clip_0", dict(num_proj=3, proj_clip=0.0)),
    ("proj_clip_true", dict(num_proj=3, proj_clip=True)),
    ("proj_clip_negative", dict(num_proj=3, proj_clip=-0.5)),
    ("proj_clip_small", dict(num_proj=3, proj_clip=0.02)),
    ("proj_clip_without_num_proj", dict(proj_clip=0.02)),
    ("peepholes", dict(use_peepholes=True)),
    ("peepholes_int", dict(use_peepholes=1)),
    ("peepholes_clip_proj", dict(use_peepholes=True, cell_clip=0.1,
                                 num_proj=3, proj_clip=0.05)),
    ("initializer_string", dict(initializer="ones")),
    ("initializer_object", dict(initializer=tf.glorot_normal_initializer())),
    ("unit_shards", dict(num_unit_shards=2)),
    ("unit_shards_many", dict(num_unit_shards=100)),
    ("proj_shards", dict(num_proj=3, num_proj_shards=2)),
    ("activation_string", dict(activation="relu")),
    ("activation_tanh_string", dict(activation="tanh")),
    ("activation_empty", dict(activation="")),
    ("activation_function", dict(activation=tf.nn.softsign)),
    ("dtype_float64", dict(dtype=tf.float64)),
    ("dtype_string", dict(dtype="float64")),
    ("dtype_numpy", dict(dtype=np.float64)),
    ("name", dict(name="my_cell")),
    ("reuse_false", dict(reuse=False)),
    ("concatenated_state", dict(state_is_tuple=False)),
    ("concatenated_state_int", dict(state_is_tuple=0, num_proj=3)),
    ("num_units_numpy", dict(num_units=np.int32(5))),
]


def _relative(variable):
    """A variable's name below its scope and cell: kernel, bias,
    projection/kernel, kernel/part_0..."""
    return "/".join(variable.op.name.split("/")[2:])


def _run(cell_or_layer, x, scope, dtype):
    if isinstance(cell_or_layer, WeightDropLSTM):
        return cell_or_layer(x, scope=scope, dtype=dtype)
    return tf.nn.dynamic_rnn(cell_or_layer, x, dtype=dtype, scope=scope)


@pytest.mark.parametrize("kind", ["cell", "layer"])
@pytest.mark.parametrize("name,kwargs", VALUES, ids=[v[0] for v in VALUES])
def test_same_results_as_lstmcell(sess, name, kwargs, kind):
    kwargs = dict(kwargs)
    units = kwargs.pop("num_units", N)
    dtype = tf.as_dtype(kwargs.get("dtype") or tf.float32)
    x = tf.constant(np.random.RandomState(0).randn(B, T, D) * 2, dtype)
    ref = tf.nn.rnn_cell.LSTMCell(units, **kwargs)
    want = _run(ref, x, "ref", dtype)
    ours_kwargs = dict(kwargs, weight_drop_kr=0.5, is_train=False)
    ours = (WeightDropLSTMCell(units, **ours_kwargs) if kind == "cell"
            else WeightDropLSTM(units, **ours_kwargs))
    before = set(tf.global_variables())
    got = _run(ours, x, "ours", dtype)
    mine = [v for v in tf.global_variables() if v not in before]
    theirs = {_relative(v): v for v in tf.global_variables()
              if v.op.name.startswith("ref/")}
    assert sorted(_relative(v) for v in mine) == sorted(theirs)
    sess.run(tf.global_variables_initializer())
    # Random weights of the reference's initializer would make a test of
    # equal results weak where they are ones; draw fresh ones.
    rng = np.random.RandomState(1)
    for variable in mine:
        value = rng.randn(*variable.shape.as_list()) * 0.7
        theirs_var = theirs[_relative(variable)]
        sess.run([variable.assign(value), theirs_var.assign(value)])
    got, want = sess.run([got, want])
    tol = lstm_tolerance(dtype, evaluations=2)  # two graphs of one function
    flat_got, flat_want = (_compat.nest.flatten(got),
                           _compat.nest.flatten(want))
    assert len(flat_got) == len(flat_want)
    for a, b in zip(flat_got, flat_want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


REFUSED = [
    (dict(num_units=0), "num_units"),
    (dict(num_units=2.5), "num_units"),
    (dict(num_proj=0), "num_proj"),
    (dict(num_proj=False), "num_proj"),
    # A bool count: LSTMCell fails on it on TF 2.21 (computes on 1.x, 2.15).
    (dict(num_units=True), "num_units"),
    (dict(num_proj=True), "num_proj"),
    (dict(num_unit_shards=True), "num_unit_shards"),
    (dict(num_unit_shards=0), "num_unit_shards"),
    (dict(num_proj=3, num_proj_shards=-1), "num_proj_shards"),
    (dict(cell_clip="1"), "cell_clip"),
    (dict(cell_clip=float("nan")), "cell_clip"),
    (dict(cell_clip=np.ones([N])), "cell_clip"),
    (dict(proj_clip=float("nan"), num_proj=3), "proj_clip"),
    (dict(forget_bias=float("nan")), "forget_bias"),
    (dict(forget_bias=None), "forget_bias"),
    (dict(cell_clip=10 ** 400), "cell_clip"),
    # Fake-quant ranges need finite, positive clips and a finite bias.
    (dict(is_quant=True, cell_clip=0.0), "cell_clip with is_quant"),
    (dict(is_quant=True, num_proj=3, proj_clip=-1.0),
     "proj_clip with is_quant"),
    (dict(is_quant=True, forget_bias=INF), "forget_bias with is_quant"),
    (dict(is_quant=True, dtype=np.float64), "float32"),
]


@pytest.mark.parametrize("kind", ["cell", "layer"])
@pytest.mark.parametrize("kwargs,named", REFUSED,
                         ids=["%s-%s" % (n, i) for i, (_, n)
                              in enumerate(REFUSED)])
def test_values_lstmcell_fails_on_are_named_errors(kwargs, named, kind):
    kwargs = dict(kwargs)
    units = kwargs.pop("num_units", N)
    make = WeightDropLSTMCell if kind == "cell" else WeightDropLSTM
    with pytest.raises(ValueError, match=named):
        make(units, **kwargs)


@pytest.mark.parametrize("kwargs", [dict(activation=""),
                                    dict(dtype=np.float32),
                                    dict(cell_clip=True)])
def test_quantized_cell_takes_lstmcell_spellings(kwargs):
    cell = WeightDropLSTMCell(N, is_quant=True, **kwargs)
    tf.nn.dynamic_rnn(cell, tf.zeros([B, T, D]), dtype=tf.float32)
    assert cell.built
