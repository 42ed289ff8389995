"""The language model's training step against numpy: one SGD step on
gradients clipped to a global norm, the global step counted; the pruning
step refused without a global step."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.graph import train_op
from support.tolerances import float32_sum_rtol


def _params(**overrides):
    return dict(presets.params_for("demo", "plain"), optimizer="sgd",
                **overrides)


@pytest.mark.parametrize("clip", [0.0, 0.25, 100.0])
def test_one_step_is_sgd_on_gradients_clipped_to_a_global_norm(sess, clip):
    rng = np.random.RandomState(0)
    a0, b0 = rng.randn(3, 4), rng.randn(5)
    a = tf.Variable(a0.astype(np.float32))
    b = tf.Variable(b0.astype(np.float32))
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_sum(a ** 2) + 3.0 * tf.reduce_sum(b)
    op, _ = train_op.build_train_step(loss, 0.1, _params(clip=clip), step)
    sess.run(tf.global_variables_initializer())
    sess.run(op)
    # d/da = 2a, d/db = 3; clipped as a whole when their norm passes clip.
    grads = [2 * a0, np.full(5, 3.0)]
    norm = np.sqrt(sum(np.sum(g ** 2) for g in grads))
    if 0 < clip < norm:
        grads = [g * clip / norm for g in grads]
    got_a, got_b, got_step = sess.run([a, b, step])
    # float32 throughout: the norm is a sum of every square, and each new
    # value is relative to the magnitudes it is made of.
    rtol = float32_sum_rtol(a0.size + b0.size + 3)
    for got, start, grad in ((got_a, a0, grads[0]), (got_b, b0, grads[1])):
        bound = rtol * (np.abs(start) + 0.1 * np.abs(grad))
        assert np.all(np.abs(got - (start - 0.1 * grad)) <= bound)
    assert got_step == 1


def test_magnitude_pruning_needs_the_global_step():
    loss = tf.reduce_sum(tf.Variable(tf.ones([2])) ** 2)
    with pytest.raises(ValueError, match="^global_step: "):
        train_op.build_train_step(loss, 0.1, _params(pruning="magnitude"))
