"""NT-ASGD's average update is not run before its trigger (issue 57)."""
import numpy as np
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.graph import ntasgd


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
