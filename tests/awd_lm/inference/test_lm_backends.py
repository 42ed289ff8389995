"""`awd_lm.inference.lm_backends`: the TFLite backend (a fixed batch of 2
and window of 4, padded to; tokens short of a window pending) reads a
stream in pieces of any length and any number of rows as the TF backend
reads it whole, logits, top-layer outputs and state (the session's tiny
float model); an `LMState`'s rows are its arrays' rows."""
import numpy as np
import pytest

from support.lm import FLOAT_LOG_PROB_ATOL
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.inference import lm_backends, model_files


def _config(path):
    return modeldir.read_config(model_files.resolve(path)[0])


@pytest.fixture(scope="module")
def backends(lm_models):
    tf_backend = lm_backends.TFBackend(_config(lm_models["float_dir"]))
    lite = lm_backends.TFLiteBackend(lm_models["float_tflite"],
                                     _config(lm_models["float_tflite"]))
    yield tf_backend, lite
    tf_backend.close()
    lite.close()


def _zero(backend, rows):
    return lm_backends.LMState(backend.zero_arrays(rows),
                               np.zeros([rows, 0], np.int32))


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("pieces", [[9], [1, 3, 5], [4, 4, 1], [2, 7]])
def test_tflite_in_pieces_reads_what_tf_reads_whole(lm_models, backends, rows,
                                                    pieces):
    tf_backend, lite = backends
    assert (tf_backend.batch_limit, lite.batch_limit, lite.window) == (
        None, 2, 4)
    vocab = len(_config(lm_models["float_dir"])["words"])
    ids = np.random.RandomState(rows).randint(
        0, vocab, [rows, sum(pieces)]).astype(np.int32)
    logits, hidden, state = tf_backend.advance(ids, _zero(tf_backend, rows),
                                               hidden=True)
    assert logits.shape == (rows, sum(pieces), vocab)
    assert hidden.shape == (rows, sum(pieces), 8)
    got_logits, got_hidden, lite_state, start = [], [], _zero(lite, rows), 0
    for n in pieces:
        out = lite.advance(ids[:, start:start + n], lite_state, hidden=True)
        got_logits.append(out[0])
        got_hidden.append(out[1])
        lite_state, start = out[2], start + n
    np.testing.assert_allclose(np.concatenate(got_logits, 1), logits,
                               rtol=0, atol=FLOAT_LOG_PROB_ATOL)
    np.testing.assert_allclose(np.concatenate(got_hidden, 1), hidden,
                               rtol=0, atol=FLOAT_LOG_PROB_ATOL)
    # The tokens since the last whole window are pending, not yet in the
    # arrays; read with the TF backend from there, they give its state.
    pending = sum(pieces) % 4
    np.testing.assert_array_equal(lite_state.pending,
                                  ids[:, sum(pieces) - pending:])
    _, caught_up = tf_backend.advance(
        lite_state.pending, lm_backends.LMState(
            lite_state.arrays, np.zeros([rows, 0], np.int32))) \
        if pending else (None, lite_state)
    for a, b in zip(caught_up.arrays, state.arrays):
        np.testing.assert_allclose(a, b, rtol=0, atol=FLOAT_LOG_PROB_ATOL)


def test_a_states_rows_are_its_arrays_rows():
    arrays = [np.arange(12, dtype=np.float32).reshape(3, 4),
              np.arange(6, dtype=np.float32).reshape(3, 2)]
    state = lm_backends.LMState(arrays, np.arange(6).reshape(3, 2))
    assert state.batch_size == 3
    picked = state.rows(np.asarray([2, 0]))
    assert picked.batch_size == 2
    np.testing.assert_array_equal(picked.arrays[0], arrays[0][[2, 0]])
    np.testing.assert_array_equal(picked.arrays[1], arrays[1][[2, 0]])
    np.testing.assert_array_equal(picked.pending, [[4, 5], [0, 1]])
    np.testing.assert_array_equal(state.rows(slice(1, 2)).arrays[0],
                                  arrays[0][1:2])
