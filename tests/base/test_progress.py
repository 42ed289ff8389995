"""The shared progress display (`base._progress`): a tqdm bar only on a
terminal, plain periodic lines otherwise or without tqdm."""
import builtins
import io

from tf1_awd_sparse.base import _progress


class _Clock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_lines_at_most_every_period_and_once_at_the_end():
    out, clock = io.StringIO(), _Clock()
    lines = _progress.Lines(100, "score", "line", out, every=30, clock=clock)
    for step in range(100):
        clock.now = step          # one second per unit
        lines.update(1)
    lines.close()
    lines.close()                 # once
    text = out.getvalue()
    assert "\r" not in text       # no redraws in a file
    # Lines at t = 30, 60, 90 and the end (99 s): 4, expected by hand.
    assert text.splitlines() == [
        "score: 31/100 line (31%), 30 s elapsed",
        "score: 61/100 line (61%), 60 s elapsed",
        "score: 91/100 line (91%), 90 s elapsed",
        "score: 100/100 line (100%), 99 s elapsed"]


def test_lines_show_the_training_loops_postfix():
    # The training loop calls set_postfix on every bar it is given (a
    # tqdm method): the plain lines take it and show it.
    out, clock = io.StringIO(), _Clock()
    lines = _progress.Lines(10, "epoch 1", "tok", out, every=30, clock=clock)
    lines.update(4)
    lines.set_postfix(tok_s="900", loss="4.125")
    clock.now = 31.0
    lines.update(6)
    assert out.getvalue().splitlines() == [
        "epoch 1: 10/10 tok (100%), 31 s elapsed, loss=4.125, tok_s=900"]


def test_no_bar_when_the_stream_is_not_a_terminal():
    assert isinstance(_progress.bar(total=3, file=io.StringIO()),
                      _progress.Lines)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_without_tqdm_gets_lines(monkeypatch):
    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError("No module named 'tqdm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    assert isinstance(_progress.bar(total=3, file=_Terminal()),
                      _progress.Lines)
