"""`base.control_flow.smart_cond`: a flag must be resolved before it gets
there (a Python or numpy bool, or a bool tensor), and a bool tensor picks
its branch when the graph runs."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf


def test_smart_cond_needs_a_resolved_flag():
    """None is resolved by the public entry points (check_training), never
    silently taken as True down here."""
    from tf1_awd_sparse.base.control_flow import smart_cond
    with pytest.raises(TypeError, match="pred"):
        smart_cond(None, lambda: 1, lambda: 0)
    with pytest.raises(TypeError, match="pred"):
        smart_cond(tf.constant(1.0), lambda: 1, lambda: 0)
    assert smart_cond(np.bool_(False), lambda: 1, lambda: 0) == 0
    assert smart_cond(True, lambda: 1, lambda: 0) == 1


def test_a_bool_tensor_picks_its_branch_when_run(sess):
    from tf1_awd_sparse.base.control_flow import smart_cond
    flag = tf.placeholder(tf.bool, [])
    out = smart_cond(flag, lambda: tf.constant(1), lambda: tf.constant(0))
    assert [sess.run(out, {flag: value}) for value in (True, False)] == [
        1, 0]
