"""`awd_lm.inference.lm_runner`: a TFLite language model run window by
window, the state carried, gives the log-probabilities the checkpoint's
TensorFlow graph gives for the whole stream at once (the session's tiny
model, tests/conftest.py), its perplexity is theirs, the log-softmax is
numpy's, and a stream or a file it cannot run is refused before any
window."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.lm_api import ProgressRecorder
from support.lm import FLOAT_LOG_PROB_ATOL, FLOAT_PPL_RTOL
from tf1_awd_sparse.awd_lm.inference import lm_runner
from tf1_awd_sparse.export import graphdef


def _stream(model, length, seed=0):
    """int32 [2, length] ids of the model's vocabulary."""
    return np.random.RandomState(seed).randint(
        0, model.vocab_size, [2, length]).astype(np.int32)


def _reference(lm_models, stream):
    """float64 [2, length - 1]: log p of each target from the checkpoint in
    TensorFlow, all tokens in one call from the zero state."""
    log_probs, _ = lm_models["load"]("float_dir").step(stream[:, :-1])
    return np.take_along_axis(log_probs, stream[:, 1:, None], axis=2)[..., 0]


# 11 targets: windows of 4, 4 and a padded 3; 4 targets: one whole window.
@pytest.mark.parametrize("length", [12, 5])
def test_windows_carry_the_state_as_one_pass_of_the_graph(lm_models,
                                                          length):
    runner = lm_runner.LMRunner(lm_models["float_tflite"], num_threads=1)
    assert (runner.batch_size, runner.num_steps) == (2, 4)
    assert runner.vocab_size == len(lm_models["load"]("float_dir").words)
    stream = _stream(runner, length)
    windows = list(runner.windows(stream))
    assert [n for _, n in windows] == [min(4, length - 1 - s)
                                       for s in range(0, length - 1, 4)]
    got = np.concatenate([picked for picked, _ in windows], axis=1)
    np.testing.assert_allclose(got, _reference(lm_models, stream), rtol=0,
                               atol=FLOAT_LOG_PROB_ATOL)


def test_the_perplexity_of_a_stream_and_its_progress(lm_models):
    stream = _stream(lm_runner.LMRunner(lm_models["float_tflite"]), 15, 1)
    ProgressRecorder.made = []
    ppl, xent, count = lm_runner.tflite_perplexity(
        lm_models["float_tflite"], stream, progress=ProgressRecorder,
        interpreter="tf")
    expected = -_reference(lm_models, stream).mean()
    assert count == 2 * 14
    assert xent == pytest.approx(expected, abs=FLOAT_LOG_PROB_ATOL)
    assert ppl == pytest.approx(np.exp(expected), rel=FLOAT_PPL_RTOL)
    bar, = ProgressRecorder.made
    assert (bar.total, bar.n, bar.closed) == (28, 28, True)
    assert bar.desc == "float.tflite"


def test_log_softmax_is_the_log_of_the_normalized_exponential():
    rng = np.random.RandomState(0)
    logits = rng.randn(2, 3, 7).astype(np.float32)
    expected = np.log(np.exp(logits.astype(np.float64)) / np.exp(
        logits.astype(np.float64)).sum(axis=-1, keepdims=True))
    got = lm_runner.log_softmax(logits)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # Shifted far beyond exp's range: the same (the maximum subtracted).
    np.testing.assert_allclose(lm_runner.log_softmax(
        logits.astype(np.float64) + 1000.0),
        expected, rtol=0, atol=1e-9)


def test_a_bad_stream_is_refused_before_any_window(lm_models):
    runner = lm_runner.LMRunner(lm_models["float_tflite"])
    good = _stream(runner, 6)
    for stream, message in ((good[:1], r"stream must be \[2, length >= 2\]"),
                            (good[:, :1], r"stream must be \[2, length"),
                            (good[0], "stream"),
                            (good + runner.vocab_size, "stream")):
        with pytest.raises(ValueError, match=message):
            runner.windows(stream)


def test_a_file_that_is_no_language_model_is_named(tmp_path):
    path = str(tmp_path / "matmul.tflite")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, 4], "x")
        y = tf.identity(tf.matmul(x, tf.ones([4, 3])), "y")
        with tf.Session() as session:
            with open(path, "wb") as handle:
                handle.write(graphdef.convert(session, [x], [y], None))
    with pytest.raises(ValueError) as error:
        lm_runner.LMRunner(path)
    assert str(error.value).startswith(
        "path %r is not a language model: LMRunner expects a file of "
        "export_lm" % path)
    assert str(error.value).endswith(
        "this is a model with inputs x float32 [1, 4] and outputs y "
        "float32 [1, 3]")
