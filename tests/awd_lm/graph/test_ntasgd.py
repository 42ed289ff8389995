"""The NT-ASGD optimizer: its non-monotone trigger, its averaging against
a numpy loop, its swap, its slot names; its average update runs only after the trigger."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.graph import ntasgd


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


def _ran(sess, op):
    """Op types of the nodes that ran in one run of ``op`` (a step's
    trace labels read ``name = Type(inputs)``; a cond's branch not taken
    runs only its Switch nodes)."""
    meta = tf.RunMetadata()
    sess.run(op, options=tf.RunOptions(
        trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    return {node.timeline_label.split(" = ")[1].split("(")[0]
            for dev in meta.step_stats.dev_stats
            for node in dev.node_stats if " = " in node.timeline_label}


def test_ntasgd_average_update_runs_only_after_the_trigger(sess):
    """Before the trigger no op of the average update runs (it used to
    run every step times 0); a non-finite weight then leaves the averages
    untouched (0 * inf was NaN); after the trigger the update runs."""
    w = tf.Variable([1.0, 2.0])
    opt = ntasgd.NTASGDOptimizer(0.5)
    train = opt.minimize(tf.reduce_sum(w * w))
    avg = opt.get_slot(w, "average")
    sess.run(tf.global_variables_initializer())
    before = _ran(sess, train)
    assert "ApplyGradientDescent" in before and "AssignAdd" not in before
    sess.run(tf.assign(w, [np.inf, 1.0]))
    sess.run(train)
    np.testing.assert_array_equal(sess.run(avg), [0.0, 0.0])
    assert sess.run(opt.num_averaged) == 0
    sess.run(opt.trigger_op())
    sess.run(tf.assign(w, [1.0, 2.0]))
    after = _ran(sess, train)
    assert "AssignAdd" in after
    # The first averaged step's average is the weights after that step.
    np.testing.assert_array_equal(sess.run(avg), sess.run(w))
    assert sess.run(opt.num_averaged) == 1
