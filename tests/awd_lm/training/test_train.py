"""The training loop's evaluation: its loss average against numpy."""
import numpy as np

from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.training import train


class _StubGraph(object):
    """What `train.evaluate` uses of a `train.Graph`: fetches and feeds."""
    xent, final_state = "xent", ["c", "h"]

    def zero_state(self, batch):
        return [np.zeros((batch, 1), np.float32)] * 2

    def feed(self, x, y, state):
        return {"n": x.shape[1]}


class _StubSession(object):
    """Returns a float32 loss per window, as a session does."""

    def __init__(self, losses_by_window):
        self.losses = list(losses_by_window)

    def run(self, fetches, feed):
        return [self.losses.pop(0)] + [np.zeros((2, 1), np.float32)] * 2


def test_evaluate_averages_in_python_floats():
    """The mean over windows is a Python float summed in float64 (numpy 2
    would keep float32 + Python float in float32, which json rejects)."""
    stream = np.zeros((2, 48), np.int32)
    windows = data.bptt_windows(stream.shape[1] - 1, 10)
    window_losses = np.random.RandomState(0).uniform(
        3, 6, len(windows)).astype(np.float32)
    got = train.evaluate(_StubSession(window_losses), _StubGraph(), stream,
                         10)
    lengths = np.array([n for _, n in windows], np.float64)
    want = np.sum(window_losses.astype(np.float64) * lengths) / lengths.sum()
    assert type(got) is float
    assert got == want
