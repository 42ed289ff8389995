"""`awd_lm.training.epochs`: the evaluation of a stream window by window,
the state carried, is the mean cross-entropy numpy computes from the
graph's logits of the whole stream at once; an epoch of training visits
every token once, in the windows of its seed, scaling the learning rate
by each window's length; a diverged step is named."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.lm_api import ProgressRecorder, tiny_params
from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.inference.lm_runner import log_softmax
from tf1_awd_sparse.awd_lm.training import epochs, train_graph

VOCAB = 11


def _params(**changes):
    return Params.from_flat(dict(tiny_params(), vocab_size=VOCAB, **changes))


@pytest.fixture(scope="module")
def trained():
    """(Graph, its instance's session initialized, a [3, 21] stream)."""
    g = train_graph.Graph(_params())
    graph = g.instance(0)[0]
    sess = tf.Session(graph=graph)
    sess.run(g.init)
    stream = np.random.RandomState(0).randint(
        0, VOCAB, [3, 21]).astype(np.int32)
    yield g, sess, stream
    sess.close()


def test_a_window_is_its_inputs_and_the_next_tokens():
    stream = np.arange(20).reshape(2, 10)
    inputs, targets = epochs.window(stream, 3, 4)
    np.testing.assert_array_equal(inputs, [[3, 4, 5, 6], [13, 14, 15, 16]])
    np.testing.assert_array_equal(targets, inputs + 1)


@pytest.mark.parametrize("bptt", [3, 7, 20])
def test_evaluation_is_the_whole_streams_cross_entropy(trained, bptt):
    g, sess, stream = trained
    logits = sess.run(g.logits, g.feed(stream[:, :-1], stream[:, 1:],
                                       state=g.zero_state(3)))
    log_probs = log_softmax(logits.reshape(3, 20, VOCAB))
    expected = -np.take_along_axis(log_probs, stream[:, 1:, None],
                                   axis=2).mean()
    got = epochs.evaluate(sess, g, stream, bptt)
    assert isinstance(got, float)
    assert got == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("variable", [False, True])
def test_an_epoch_runs_the_windows_of_its_seed(trained, monkeypatch,
                                               variable):
    g, _, stream = trained
    params = _params(variable_bptt=variable, bptt=6, lr=2.0)
    graph = g.instance(1)[0]
    fed = []
    with tf.Session(graph=graph) as sess:
        sess.run(g.init)
        run = sess.run

        def recording(fetches, feed_dict=None):
            if g.lr in (feed_dict or {}):
                fed.append((feed_dict[g.inputs].shape[1], feed_dict[g.lr]))
            return run(fetches, feed_dict)

        monkeypatch.setattr(sess, "run", recording)
        ProgressRecorder.made = []
        loss, rate, extra = epochs.train_epoch(sess, g, stream, params, 4,
                                               progress=ProgressRecorder)
    windows = data.bptt_windows(20, 6, np.random.RandomState(
        [params.optimization.seed, 4]), variable=variable)
    assert [n for n, _ in fed] == [n for _, n in windows]
    assert [lr for _, lr in fed] == pytest.approx(
        [2.0 * n / 6.0 for _, n in windows])
    assert isinstance(loss, float) and np.isfinite(loss) and rate > 0
    assert extra == {}
    bar, = ProgressRecorder.made
    assert (bar.total, bar.desc, bar.closed) == (63, "epoch 4", True)
    assert bar.updates == [3 * n for _, n in windows]
    assert sorted(bar.postfix) == ["loss", "ppl", "tok_s"]


def test_a_diverged_step_is_named(trained, monkeypatch):
    g, _, stream = trained
    steps = []
    monkeypatch.setattr(epochs, "diverged",
                        lambda loss: steps.append(loss) or len(steps) == 2)
    with tf.Session(graph=g.instance(2)[0]) as sess:
        sess.run(g.init)
        with pytest.raises(epochs.TrainingDiverged) as error:
            epochs.train_epoch(sess, g, stream, _params(bptt=5), 3)
    assert (error.value.epoch, error.value.step, error.value.steps) == (
        3, 2, 4)
    assert error.value.loss == pytest.approx(float(steps[1]))
    assert str(error.value).startswith(
        "training diverged at epoch 3, step 2 of 4: training loss ")
    kept = error.value.keeping("the checkpoints of epochs 1-2 are kept")
    assert str(kept).endswith("or the clip; the checkpoints of epochs 1-2 "
                              "are kept")
    after = epochs.TrainingDiverged("validation loss", float("nan"), 5)
    assert "after the last step of epoch 5: validation loss nan" in str(after)
