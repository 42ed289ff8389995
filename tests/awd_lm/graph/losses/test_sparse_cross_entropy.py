"""`losses.sparse_cross_entropy` (every form it takes) against a float64
numpy reference and TensorFlow's fused kernel (issue 57)."""
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base.compat import IS_TF2
from tf1_awd_sparse.awd_lm.graph import losses

#: `losses.XENT_FORMS` this version runs: the fused kernel everywhere; the
#: few-pass forms where the version has them (2.x: 1.13 has no
#: ``tensor_scatter_nd_sub``).
FORMS = ["fused"] + (["softmax", "xla"] if IS_TF2 else [])
FEW_PASS_FORMS = FORMS[1:]


def np_xent(logits, labels):
    """Rows' cross-entropy and d(sum(upstream * xent))/d(logits), float64."""
    x = logits.astype(np.float64)
    top = x.max(1, keepdims=True)
    exp = np.exp(x - top)
    total = exp.sum(1, keepdims=True)
    value = (top + np.log(total))[:, 0] - x[np.arange(len(x)), labels]
    onehot = np.zeros_like(x)
    onehot[np.arange(len(x)), labels] = 1.0
    return value, exp / total - onehot


@pytest.fixture
def form(request, monkeypatch):
    monkeypatch.setattr(losses, "XENT_FORM", request.param)
    return request.param


def test_the_default_form_is_the_versions():
    """2.x's default is the softmax form (its step's fastest without XLA's
    log lines), 1.x's the fused kernel."""
    assert losses.XENT_FORM == ("softmax" if IS_TF2 else "fused")


@pytest.mark.parametrize("form", FORMS, indirect=True)
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_value_and_gradient_match_numpy_and_the_fused_kernel(
        sess, form, label_dtype):
    rng = np.random.RandomState(0)
    n, vocab = 13, 50
    # Large logits: a form that forgot the max would overflow exp.
    logits = (rng.randn(n, vocab) * 30).astype(np.float32)
    labels = rng.randint(0, vocab, n).astype(label_dtype)
    labels[:2] = [0, vocab - 1]   # the first and the last column
    # A target whose probability underflows float32 (exp(-500)): its
    # cross-entropy is 500 + log(sum), never log(0).
    logits[2, labels[2]] = logits[2].max() - 500.0
    upstream = rng.rand(n).astype(np.float32)
    x = tf.constant(logits)
    xent = losses.sparse_cross_entropy(x, tf.constant(labels))
    grad, = tf.gradients(xent * upstream, [x])
    fused = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant(labels), logits=x)
    fused_grad, = tf.gradients(fused * upstream, [x])
    got, got_grad, want_fused, want_fused_grad = sess.run(
        [xent, grad, fused, fused_grad])
    value, dx = np_xent(logits, labels)
    assert got.shape == (n,) and got.dtype == np.float32
    # float32 rounding of sums over 50 terms of magnitude <= |max| + log V.
    scale = np.abs(logits).max() + np.log(vocab)
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(got, value, rtol=0, atol=8 * eps * scale)
    np.testing.assert_allclose(got, want_fused, rtol=0, atol=8 * eps * scale)
    # softmax entries are in [0, 1]: a few float32 ulps of 1 each.
    np.testing.assert_allclose(got_grad, dx * upstream[:, None], rtol=0,
                               atol=8 * eps)
    np.testing.assert_allclose(got_grad, want_fused_grad, rtol=0,
                               atol=8 * eps)


@pytest.mark.parametrize("form", FORMS, indirect=True)
def test_a_label_outside_the_vocabulary_is_an_error(sess, form):
    xent = losses.sparse_cross_entropy(tf.zeros([2, 5]), tf.constant([1, 5]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(xent)


@pytest.mark.parametrize("form", FORMS, indirect=True)
def test_a_placeholder_of_unknown_rows(sess, form):
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.int32, [None])
    xent = losses.sparse_cross_entropy(x, y)
    logits = np.arange(12, dtype=np.float32).reshape(3, 4) / 3
    got = sess.run(xent, {x: logits, y: [3, 0, 2]})
    np.testing.assert_allclose(got, np_xent(logits, [3, 0, 2])[0],
                               rtol=1e-6)
    assert sess.run(xent, {x: np.zeros([0, 4]), y: []}).shape == (0,)


@pytest.mark.skipif(not IS_TF2, reason="the few-pass form is 2.x's")
def test_xla_compiles_the_gradient_too(monkeypatch):
    """The docstring's claim: in the "xla" form both passes, forward and
    gradient, are marked for XLA; the label's gather is not (XLA would
    clamp it)."""
    monkeypatch.setattr(losses, "XENT_FORM", "xla")
    graph = tf.Graph()
    with graph.as_default():
        x = tf.zeros([3, 4])
        xent = losses.sparse_cross_entropy(x, tf.constant([0, 1, 2]))
        tf.gradients(xent, [x])

    def compiled(op):
        try:
            return op.get_attr("_XlaCompile")
        except ValueError:
            return False
    ops = graph.get_operations()
    forward = [op for op in ops if op.type == "Exp"]
    backward = [op for op in ops if op.type == "TensorScatterSub"]
    gather = [op for op in ops if op.type == "GatherNd"]
    assert forward and backward and gather
    assert all(compiled(op) for op in forward + backward)
    assert not any(compiled(op) for op in gather)


_IMPORT_AND_DIFFERENTIATE = r"""
import sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
import tf1_awd_sparse.awd_lm.graph.losses  # registers the gradient
tf.train.import_meta_graph(sys.argv[1])
graph = tf.get_default_graph()
x, xent = (graph.get_tensor_by_name(n) for n in ("x:0", "xent:0"))
grad, = tf.gradients(xent, [x])
with tf.Session() as session:
    np.save(sys.argv[2], session.run(grad, {x: np.load(sys.argv[3])}))
"""


@pytest.mark.skipif(not IS_TF2, reason="the few-pass forms are 2.x's")
def test_the_softmax_form_computes_no_xla_cluster():
    """The default form on 2.x marks nothing for XLA (whose first compile
    on 2.15 writes log lines into every training program's output)."""
    assert losses.XENT_FORM == "softmax"
    graph = tf.Graph()
    with graph.as_default():
        x = tf.zeros([3, 4])
        xent = losses.sparse_cross_entropy(x, tf.constant([0, 1, 2]))
        tf.gradients(xent, [x])
    marked = [op.name for op in graph.get_operations()
              if "_XlaCompile" in op.node_def.attr]
    assert not marked
    assert [op.type for op in graph.get_operations() if op.type in (
        "Softmax", "Exp")] == ["Softmax"]


def test_an_unknown_form_is_refused_naming_the_setting(monkeypatch):
    monkeypatch.setattr(losses, "XENT_FORM", "fast")
    with pytest.raises(ValueError, match=r"XENT_FORM.*'fast'"):
        losses.sparse_cross_entropy(tf.zeros([2, 5]), tf.constant([1, 4]))


@pytest.mark.skipif(not IS_TF2, reason="1.x has the fused kernel only")
@pytest.mark.parametrize("form", FEW_PASS_FORMS, indirect=True)
def test_the_gradient_after_a_metagraph_round_trip(tmp_path, form):
    """A graph exported to a MetaGraph and imported in a new process is
    differentiated to the same gradient (the few-pass forms' gradient,
    XLA's attr with it, is registered by name, not held in a Python
    closure that a new process would not have)."""
    rng = np.random.RandomState(1)
    logits = rng.randn(4, 6).astype(np.float32)
    labels = np.array([5, 0, 2, 2], np.int32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        tf.identity(losses.sparse_cross_entropy(x, tf.constant(labels)),
                    name="xent")
        tf.train.export_meta_graph(str(tmp_path / "xent.meta"))
    np.save(str(tmp_path / "logits.npy"), logits)
    subprocess.run([sys.executable, "-c", _IMPORT_AND_DIFFERENTIATE,
                    str(tmp_path / "xent.meta"), str(tmp_path / "grad.npy"),
                    str(tmp_path / "logits.npy")], check=True)
    got = np.load(str(tmp_path / "grad.npy"))
    np.testing.assert_allclose(got, np_xent(logits, labels)[1], rtol=0,
                               atol=8 * np.finfo(np.float32).eps)
