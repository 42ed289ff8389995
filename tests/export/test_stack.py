"""`export.stack`, a trained cell stack as the exporter reads it: the
cells as a flat list bottom first (a MultiRNNCell unwrapped, nested too;
the order checked, not guessed), the values of their variables from a
session or a checkpoint (dropout masks left out), and those values loaded
into fresh cells.

The references: the cells and variables the test built (their order,
their values in the session, a checkpoint written by ``tf.train.Saver``)
and a fresh graph's cells computing what the trained ones computed. The
exporter's own use of the argument: tests/export/tflite/."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.export import stack
from weight_drop_lstm import WeightDropLSTMCell

B, T, D = 2, 3, 4


def _built(sizes=(5, 6), depth=D, **kwargs):
    kwargs.setdefault("is_train", False)
    cells = [WeightDropLSTMCell(n, **kwargs) for n in sizes]
    tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells),
                      tf.zeros([B, T, depth]), dtype=tf.float32)
    return cells


def test_a_cell_a_list_and_nested_multi_rnn_cells_flatten_bottom_first():
    cells = _built((5, 6, 7))
    assert stack.as_cell_list(cells[0]) == [cells[0]]
    assert stack.as_cell_list(tuple(cells)) == cells
    multi = tf.nn.rnn_cell.MultiRNNCell
    nested = [multi([cells[0], multi([cells[1]])]), cells[2]]
    assert stack.as_cell_list(nested) == cells


def test_cells_not_bottom_first_are_named():
    cells = _built((5, 6))
    with pytest.raises(ValueError) as error:
        stack.as_cell_list(cells[::-1])
    message = str(error.value)
    assert message.startswith("cells must be bottom first") and \
        "cells[1] takes inputs of depth 4 but cells[0] outputs 6" in message
    assert message.endswith("reversed, the list fits: pass it bottom first")
    # Cells of two stacks fit in neither order: no hint.
    with tf.variable_scope("other"):
        other = _built((7,), depth=6)
    with pytest.raises(ValueError) as error:
        stack.as_cell_list([cells[0], other[0]])
    assert "takes inputs of depth 6 but cells[0] outputs 5" in \
        str(error.value)
    assert "reversed" not in str(error.value)


def test_what_is_not_a_built_cell_stack_is_refused():
    with pytest.raises(ValueError, match="non-empty list"):
        stack.as_cell_list([])
    with pytest.raises(ValueError, match="must be built"):
        stack.as_cell_list(WeightDropLSTMCell(3))
    lstm = tf.nn.rnn_cell.LSTMCell(3)
    with pytest.raises(ValueError, match="cells must be a built "
                       "WeightDropLSTMCell"):
        stack.as_cell_list([lstm])


def test_values_from_a_session_and_a_checkpoint_are_the_variables(
        sess, tmp_path):
    # Held DropConnect masks (use_vd): variables, never in a checkpoint.
    cells = _built((5, 6), weight_drop_kr=0.5, use_vd=True, is_train=True)
    sess.run([tf.global_variables_initializer(),
              tf.local_variables_initializer()])
    rng = np.random.RandomState(0)
    for cell in cells:
        kernel = [v for v in cell.weights if v.op.name.endswith("kernel")][0]
        kernel.load(rng.randn(*kernel.shape.as_list()), sess)
    path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    from_session = stack.read_cell_values(cells, session=sess)
    for given in (path, str(tmp_path)):
        from_checkpoint = stack.read_cell_values(cells, checkpoint=given)
        for got, want in zip(from_checkpoint, from_session):
            assert sorted(got) == sorted(want)
            for name in want:
                np.testing.assert_array_equal(got[name], want[name])
    for cell, values in zip(cells, from_session):
        scope = cell.weights[0].op.name.rpartition("/")[0] + "/"
        by_name = {v.op.name[len(scope):]: v for v in cell.weights}
        # Every variable but the dropout mask, by name relative to the cell.
        assert sorted(values) == ["bias", "kernel"]
        assert sorted(by_name) == ["bias", "kernel", "weight_drop_mask"]
        for name, value in values.items():
            np.testing.assert_array_equal(value, sess.run(by_name[name]))


def test_exactly_one_of_session_and_checkpoint():
    cells = _built((5,))
    with pytest.raises(ValueError, match="exactly one of session"):
        stack.read_cell_values(cells)
    with pytest.raises(ValueError, match="exactly one of session"):
        stack.read_cell_values(cells, session=object(), checkpoint="c")


def test_loaded_values_make_a_fresh_cell_compute_the_same(sess, tmp_path):
    x = np.random.RandomState(1).randn(B, T, D).astype(np.float32)
    cell = WeightDropLSTMCell(5, is_train=False)
    out = tf.nn.dynamic_rnn(cell, tf.constant(x), dtype=tf.float32)[0]
    sess.run(tf.global_variables_initializer())
    for variable in cell.weights:
        variable.load(np.random.RandomState(2).randn(
            *variable.shape.as_list()), sess)
    want = sess.run(out)
    (values,) = stack.read_cell_values([cell], session=sess)
    with tf.Graph().as_default(), tf.Session() as fresh:
        again = WeightDropLSTMCell(5, is_train=False)
        got = tf.nn.dynamic_rnn(again, tf.constant(x), dtype=tf.float32,
                                scope="elsewhere")[0]
        fresh.run(tf.global_variables_initializer())
        stack.load_values(again, dict(values, extra=np.zeros(1)), fresh)
        np.testing.assert_array_equal(fresh.run(got), want)
        with pytest.raises(ValueError, match="has no variable 'bias'"):
            stack.load_values(again, {"kernel": values["kernel"]}, fresh)
