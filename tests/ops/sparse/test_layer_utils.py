"""`ops.sparse.layer_utils.gather`: its one-hot path inside an XLA context
equals tf.gather, and a patched ``in_xla_context`` reaches it."""
import numpy as np
import tensorflow.compat.v1 as tf

from sparse_layers import layer_utils
from support.versions import needs_xla_compile, xla_compile
from tf1_awd_sparse.base import control_flow


def test_a_patched_in_xla_context_reaches_its_callers(sess, monkeypatch):
    """check_ids and gather look in_xla_context up on base.control_flow
    when they run, so one patch there switches both to their XLA path."""
    from tf1_awd_sparse.base import checks
    monkeypatch.setattr(control_flow, "in_xla_context", lambda: True)
    clamped = checks.check_ids(tf.constant([5, -1, 1]), 3)
    one_hot = layer_utils.gather(np.eye(3, dtype=np.float32), [2, 0])
    assert one_hot.op.type == "Reshape"
    np.testing.assert_array_equal(sess.run(clamped), [2, 0, 1])


@needs_xla_compile
def test_gather_one_hot_path_matches_tf_gather(sess):
    # xla_compile (tests/support/versions.py) is the public way into an XLA
    # context on every version: contrib's on 1.13, tf.xla.experimental's
    # from 1.15 on.
    params = np.random.RandomState(10).randn(6, 2, 3).astype(np.float32)
    ids = np.array([[5, 0], [2, 2]], np.int64)
    plain = layer_utils.gather(params, ids)
    built = []

    def computation():
        built.append(control_flow.in_xla_context())
        out = layer_utils.gather(params, ids.astype(np.int32))
        built.append(out)
        return out

    (compiled,) = xla_compile(computation)
    assert not control_flow.in_xla_context()
    in_xla, one_hot = built
    assert in_xla
    assert one_hot.op.type == "Reshape"
    assert one_hot.shape.as_list() == [2, 2, 2, 3]
    plain, compiled = sess.run([plain, compiled])
    np.testing.assert_array_equal(plain, params[ids])
    # A one-hot matmul: one product by 1.0 plus products by 0.0, exact in
    # any order.
    np.testing.assert_array_equal(compiled, params[ids])
