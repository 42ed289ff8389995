"""export_tflite's `cells` argument (issue 10.5): a MultiRNNCell of the
library's cells is unwrapped into its cells (the same models as the list of
them); anything else is rejected with a message that says what to pass."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.quantization import TFLiteRunner, export_tflite
from weight_drop_lstm import WeightDropLSTMCell

B, T, D = 2, 3, 4


def _stack(sess, sizes=(5, 6)):
    """A built 2-layer quantized stack in a MultiRNNCell, initialized."""
    cells = [WeightDropLSTMCell(n, is_quant=True, is_train=False)
             for n in sizes]
    multi = tf.nn.rnn_cell.MultiRNNCell(cells)
    tf.nn.dynamic_rnn(multi, tf.zeros([B, T, D]), dtype=tf.float32)
    sess.run(tf.global_variables_initializer())
    return cells, multi


def test_multi_rnn_cell_exports_the_same_model_as_its_cells(sess, tmp_path):
    cells, multi = _stack(sess)
    inputs = np.random.RandomState(0).randn(B, T, D).astype(np.float32)
    outputs = {}
    # The 8-bit model: it also carries every cell's learned ranges.
    for name, given in (("list", cells), ("multi", multi)):
        path = str(tmp_path / ("%s.tflite" % name))
        sizes = export_tflite(given, B, T, quant_path=path, session=sess)
        assert list(sizes) == ["quant_bytes"]
        outputs[name] = TFLiteRunner(path).run(inputs)
    got, want = outputs["multi"], outputs["list"]
    # Outputs and both layers' final states.
    assert sorted(got) == sorted(want) == [
        "final_0_c", "final_0_h", "final_1_c", "final_1_h", "outputs"]
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])


@pytest.mark.parametrize("make", [
    lambda: tf.nn.rnn_cell.LSTMCell(4),
    lambda: tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.LSTMCell(4)]),
    lambda: ["not a cell"],
], ids=["LSTMCell", "MultiRNNCell-of-LSTMCell", "list-with-a-string"])
def test_other_cells_are_rejected_with_what_to_pass(sess, make):
    given = make()
    if isinstance(given, tf.nn.rnn_cell.RNNCell):
        tf.nn.dynamic_rnn(given, tf.zeros([B, T, D]), dtype=tf.float32)
    with pytest.raises(ValueError, match="cells must be a built "
                       "WeightDropLSTMCell, a list of them .* or a "
                       "tf.nn.rnn_cell.MultiRNNCell of them"):
        export_tflite(given, B, T, float_path="unused", session=sess)


def test_empty_multi_rnn_cell_is_rejected(sess):
    with pytest.raises(ValueError, match="non-empty"):
        export_tflite([], B, T, float_path="unused", session=sess)
