"""A loss as a perplexity (against numpy's float64 exp, overflow to inf
included) and a damaged checkpoint as one named error (on the files on
disk)."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.graph import checkpoints
from support.tolerances import transcendental_rtol


def test_perplexity_is_exp_and_overflows_where_numpy_does():
    limit = checkpoints.DIVERGED_LOSS
    losses = [0.0, 1e-9, 4.6, 700.0, limit, np.nextafter(limit, np.inf),
              710.0, 1e6, float("inf")]
    with np.errstate(over="ignore"):
        want = np.exp(np.array(losses, np.float64))
    got = np.array([checkpoints.perplexity(loss) for loss in losses])
    # math.exp and numpy's exp may differ in their last bits; both
    # overflow past the same loss.
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite],
                               rtol=transcendental_rtol(np.float64))
    assert [checkpoints.diverged(loss) for loss in losses] == [
        bool(np.isinf(w)) for w in want]
    assert checkpoints.diverged(float("nan"))


def test_a_truncated_checkpoint_is_one_line_naming_it(tmp_path, sess):
    weights = tf.get_variable("w", initializer=tf.ones([64, 64]))
    saver = tf.train.Saver([weights])
    sess.run(tf.global_variables_initializer())
    prefix = saver.save(sess, str(tmp_path / "model.ckpt"),
                        write_meta_graph=False)
    checkpoints.restore(saver, sess, prefix)          # whole: restored
    data = prefix + ".data-00000-of-00001"
    with open(data, "rb") as handle:
        whole = handle.read()
    with open(data, "wb") as handle:
        handle.write(whole[:len(whole) // 2])
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.restore(saver, sess, prefix)
    message = str(error.value)
    assert message.startswith("%s: cannot restore this checkpoint (" % prefix)
    assert message.endswith("nothing was deleted") and "\n" not in message
    assert os.path.getsize(data) == len(whole) // 2


def test_the_cause_is_the_line_after_the_guesses():
    error = ValueError("Restoring from checkpoint failed. This is most "
                       "likely due to a mismatch. Original error:\n\n"
                       "Graph execution error:\n"
                       "Detected at node 'save/Restore' defined at:\n"
                       "  File \"x.py\", line 1\n"
                       "Read less bytes than requested\n"
                       "\t [[node save/Restore]]")
    assert checkpoints.cause_line(error) == "Read less bytes than requested"
    assert checkpoints.cause_line(ValueError("first\nsecond")) == "first"
