"""AR/TAR losses, the NT-ASGD optimizer and the training loop's loss
average against numpy references."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.tolerances import gamma
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.graph import losses, ntasgd
from tf1_awd_sparse.awd_lm.training import train


def np_ar(h, alpha, lengths=None):
    if lengths is None:
        return alpha * np.mean(h ** 2)
    vals = np.concatenate([h[b, :n].ravel() for b, n in enumerate(lengths)])
    return alpha * np.mean(vals ** 2)


def np_tar(h, beta, lengths=None):
    if lengths is None:
        return beta * np.mean((h[:, 1:] - h[:, :-1]) ** 2)
    vals = np.concatenate([(h[b, 1:n] - h[b, :n - 1]).ravel()
                           for b, n in enumerate(lengths)])
    return beta * np.mean(vals ** 2)


def test_ar_tar_match_numpy(sess):
    rng = np.random.RandomState(0)
    h = rng.randn(3, 7, 4)
    lengths = np.array([7, 3, 5])
    x = tf.constant(h)
    got = sess.run([
        losses.activation_regularization(x),
        losses.activation_regularization(x, alpha=0.5, lengths=lengths),
        losses.temporal_activation_regularization(x),
        losses.temporal_activation_regularization(x, beta=3.0,
                                                  lengths=lengths)])
    want = [np_ar(h, 2.0), np_ar(h, 0.5, lengths), np_tar(h, 1.0),
            np_tar(h, 3.0, lengths)]
    # float64 means of squares (differences) of h.size = 84 values: sums
    # of non-negative terms in any order, each term 2 roundings.
    np.testing.assert_allclose(got, want, rtol=gamma(3 * h.size, np.float64))


def test_ar_tar_unknown_time_and_bad_rank(sess):
    x = tf.placeholder(tf.float32, [None, None, 2])
    tar = losses.temporal_activation_regularization(x)
    h = np.random.RandomState(1).randn(2, 5, 2).astype(np.float32)
    # float32 graph against the numpy float32 mean of 16 squares.
    assert sess.run(tar, {x: h}) == pytest.approx(np_tar(h, 1.0),
                                                  rel=2 * gamma(3 * 16))
    assert sess.run(tar, {x: h[:, :1]}) == 0.0
    with pytest.raises(ValueError, match="outputs: expected a"):
        losses.activation_regularization(tf.zeros([2, 3]))


def test_ar_tar_lengths_of_another_batch(sess):
    """Static: a ValueError naming lengths (was 'Dimensions must be equal,
    but are 3 and 2 for activation_regularization/mul'); unknown: asserted
    when the graph runs."""
    for penalty in (losses.activation_regularization,
                    losses.temporal_activation_regularization):
        with pytest.raises(ValueError, match=r"^lengths must have shape \[2\]"
                           r" \(the batch of outputs"):
            penalty(tf.zeros([2, 3, 4]), lengths=tf.constant([1, 2, 3]))
        x = tf.placeholder(tf.float32, [None, None, 4])
        lengths = tf.placeholder(tf.int32, [None])
        value = penalty(x, lengths=lengths)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="lengths must have one entry per row of "
                           "outputs"):
            sess.run(value, {x: np.zeros((2, 3, 4)), lengths: [1, 2, 3]})


def test_ar_tar_over_no_entry_are_zero(sess):
    """Zero steps or rows: no activation, no penalty (0, not the NaN of an
    empty mean); a non-empty input still gives numpy's mean."""
    x = tf.placeholder(tf.float32, [None, None, 2])
    ar = losses.activation_regularization(x)
    tar = losses.temporal_activation_regularization(x)
    for shape in ((2, 0, 2), (0, 4, 2)):
        assert sess.run([ar, tar], {x: np.ones(shape)}) == [0.0, 0.0]
    assert sess.run(losses.activation_regularization(
        tf.zeros([2, 0, 3]))) == 0.0
    h = np.random.RandomState(2).randn(2, 4, 2).astype(np.float32)
    assert sess.run(ar, {x: h}) == pytest.approx(np_ar(h, 2.0), rel=1e-5)


@pytest.mark.parametrize("history,loss,fire", [
    ([5, 4, 3, 2, 1], 9.0, False),          # only n checks: never
    ([5, 4, 3, 2, 1, 0.5], 4.9, False),     # better than 5
    ([5, 4, 3, 2, 1, 0.5], 5.1, True),      # worse than min(all but last 5)
    ([5, 4, 3, 2, 1, 0.5, 0.4], 4.5, True),  # min(5, 4) = 4 < 4.5
])
def test_trigger_rule(history, loss, fire):
    assert ntasgd.nonmonotone_trigger(history, loss, 5) == fire


def test_ntasgd_against_numpy_loop(sess):
    """SGD, switch on the trigger, running average, exact swap in/out."""
    rng = np.random.RandomState(0)
    w0 = rng.randn(3, 2)
    targets = rng.randn(12, 3, 2)
    val = [3.0, 2.0, 2.5, 1.5, 1.8, 1.9, 1.7, 2.2]  # nonmono=2
    w = tf.Variable(w0)
    b = tf.Variable(np.zeros(2))
    target = tf.placeholder(tf.float64, [3, 2])
    loss = 0.5 * tf.reduce_sum((w - target) ** 2) + tf.reduce_sum(b ** 2)
    opt = ntasgd.NTASGDOptimizer(0.25, nonmono=2)
    train = opt.minimize(loss)
    sess.run(tf.global_variables_initializer())

    lr, ref_w, ref_avg, k, history, on, fired = 0.25, w0.copy(), None, 0, [], \
        False, []
    for step, tgt in enumerate(targets):
        sess.run(train, {target: tgt})
        ref_w = ref_w - lr * (ref_w - tgt)
        if on:
            k += 1
            ref_avg = ref_w.copy() if k == 1 else ref_avg + (ref_w - ref_avg) / k
        if step < len(val):
            # numpy reference of the trigger: worse than all but last 2.
            fire = (not on and len(history) > 2
                    and val[step] > min(history[:-2]))
            history.append(val[step])
            on = on or fire
            fired.append(opt.observe(sess, val[step]))
            assert fired[-1] == fire
    assert any(fired) and k > 1
    # float64, the same few roundings per step on both sides but in
    # another order: far below 1e-12 relative over these dozen steps.
    np.testing.assert_allclose(sess.run(w), ref_w, rtol=1e-12)
    assert sess.run(opt.num_averaged) == k
    raw = sess.run([w, b])
    with opt.averaged_weights(sess):
        np.testing.assert_allclose(sess.run(w), ref_avg, rtol=1e-12)
    after = sess.run([w, b])
    np.testing.assert_array_equal(raw[0], after[0])  # bit-exact swap out
    np.testing.assert_array_equal(raw[1], after[1])


def test_swap_before_trigger_is_identity(sess):
    w = tf.Variable([1.0, 2.0])
    opt = ntasgd.NTASGDOptimizer(0.1)
    train = opt.minimize(tf.reduce_sum(w ** 2))
    sess.run(tf.global_variables_initializer())
    sess.run(train)
    before = sess.run(w)
    with opt.averaged_weights(sess):
        np.testing.assert_array_equal(sess.run(w), before)
    assert not sess.run(opt.averaging)
    with pytest.raises(ValueError, match="nonmono"):
        ntasgd.NTASGDOptimizer(0.1, nonmono=0)
    with pytest.raises(ValueError, match="already applied"):
        opt.minimize(tf.reduce_sum(w))


def test_slot_names_are_the_optimizers_variables_only():
    """`is_slot_name` is true of exactly the variables the optimizer adds
    (slots and its switch), never of a model variable, however named."""
    with tf.Graph().as_default():
        with tf.variable_scope("lm"):
            w = tf.get_variable("kernel", [2])
            b = tf.get_variable("NTASGD_bias", [2])  # a model's odd name
        opt = ntasgd.NTASGDOptimizer(0.1)
        opt.minimize(tf.reduce_sum(w ** 2) + tf.reduce_sum(b))
        names = {v.op.name for v in tf.global_variables()}
    model = {"lm/kernel", "lm/NTASGD_bias"}
    assert model <= names
    for name in names:
        assert ntasgd.is_slot_name(name) == (name not in model), name


class _StubGraph(object):
    """What `train.evaluate` uses of a `train.Graph`: fetches and feeds."""
    xent, final_state = "xent", ["c", "h"]

    def zero_state(self, batch):
        return [np.zeros((batch, 1), np.float32)] * 2

    def feed(self, x, y, state):
        return {"n": x.shape[1]}


class _StubSession(object):
    """Returns a float32 loss per window, as a session does."""

    def __init__(self, losses_by_window):
        self.losses = list(losses_by_window)

    def run(self, fetches, feed):
        return [self.losses.pop(0)] + [np.zeros((2, 1), np.float32)] * 2


def test_evaluate_averages_in_python_floats():
    """The mean over windows is a Python float summed in float64 (numpy 2
    would keep float32 + Python float in float32, which json rejects)."""
    stream = np.zeros((2, 48), np.int32)
    windows = data.bptt_windows(stream.shape[1] - 1, 10)
    window_losses = np.random.RandomState(0).uniform(
        3, 6, len(windows)).astype(np.float32)
    got = train.evaluate(_StubSession(window_losses), _StubGraph(), stream,
                         10)
    lengths = np.array([n for _, n in windows], np.float64)
    want = np.sum(window_losses.astype(np.float64) * lengths) / lengths.sum()
    assert type(got) is float
    assert got == want
