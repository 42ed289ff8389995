"""The training loop's steps: one epoch of stateful truncated BPTT
(`train_epoch`), the evaluation of a split (`evaluate`), and the error of
training that diverged (`TrainingDiverged`).

They run in a session of a `train_graph.Graph` instance; `train.Trainer`
drives them epoch by epoch.
"""
import time

import numpy as np

from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.graph.checkpoints import diverged, perplexity
from tf1_awd_sparse.base.errors import Error

__all__ = ["TrainingDiverged", "window", "evaluate", "train_epoch"]


class TrainingDiverged(FloatingPointError, Error):
    """Training that diverged (see `diverged`): the loss of a training step
    or the validation loss after an epoch. Nothing of that epoch is saved:
    the checkpoints of the previous epochs and state.json are kept.

    Attributes:
      epoch: the epoch (1-based); step, steps: the step of the epoch
        (1-based) and the epoch's steps, None for a validation loss
        (after the epoch's last step).
      what: 'training loss' or 'validation loss'; loss: its value.
    """

    def __init__(self, what, loss, epoch, step=None, steps=None, kept=""):
        self.what, self.loss, self.epoch = what, float(loss), epoch
        self.step, self.steps, self.kept = step, steps, kept
        where = ("at epoch %d, step %d of %d" % (epoch, step, steps)
                 if step is not None else "after the last step of epoch %d"
                 % epoch)
        super(TrainingDiverged, self).__init__(
            "training diverged %s: %s %r nats per token (perplexity inf); "
            "lower the learning rate (lr) or the clip%s" % (
                where, what, self.loss, "; " + kept if kept else ""))

    def keeping(self, kept):
        """The same error, saying what was kept (e.g. the checkpoints)."""
        return TrainingDiverged(self.what, self.loss, self.epoch, self.step,
                                self.steps, kept)


def window(stream, start, n):
    """(inputs, targets) of the BPTT window [start, start + n) of a stream."""
    return stream[:, start:start + n], stream[:, start + 1:start + n + 1]


def evaluate(sess, g, stream, bptt):
    """Mean cross-entropy (nats/token) of a batchified stream, state carried.

    Args:
      sess: session of `g`.
      g: Graph.
      stream: int32 [batch, length] from `data.batchify`.
      bptt: window length.
    Returns:
      float (a Python float: summed in float64 whatever numpy's promotion
      rules; NEP 50 would keep ``0.0 + np.float32`` in float32).
    """
    state = g.zero_state(stream.shape[0])
    total, count = 0.0, 0
    fetches = [g.xent] + g.final_state
    for start, n in data.bptt_windows(stream.shape[1] - 1, bptt):
        res = sess.run(fetches, g.feed(*window(stream, start, n),
                                       state=state))
        # A Python float: numpy 2 keeps float32 * int a float32 (which
        # json cannot write, and which would sum in float32).
        total += float(res[0]) * n
        count += n
        state = res[1:]
    return total / count


def train_epoch(sess, g, stream, params, epoch, progress=None):
    """One pass of stateful truncated BPTT over the training stream.

    The window lengths come from a generator seeded by (seed, epoch), and
    the learning rate of a window is ``lr * length / bptt``.

    With a teacher (`train_graph.Graph`), its state is carried across the
    windows like the student's and reset with it at the epoch's start.

    Args:
      sess: session of an instance of ``g``.
      g: `train_graph.Graph`.
      stream: int32 [batch, length] from `data.batchify`.
      params: the run's parameters (a `Params`): seed, bptt,
        variable_bptt and lr are read.
      epoch: the epoch (1-based), which seeds the window lengths.
      progress: None or a tqdm-like class for a progress bar.

    Returns:
      (mean training cross-entropy, tokens per second, extra): Python
      floats, the loss summed in float64 (see `evaluate`); ``extra`` is {}
      or, with a teacher, ``{"distill_kl": mean KL(teacher || student) at
      the temperature, nats per token}``.

    Raises:
      TrainingDiverged: a step's loss is NaN, infinite or above
        `graph.checkpoints.DIVERGED_LOSS` (the step is named).
    """
    optimization = params.optimization
    rng = np.random.RandomState([optimization.seed, epoch])
    windows = data.bptt_windows(stream.shape[1] - 1, optimization.bptt, rng,
                                variable=optimization.variable_bptt)
    state = g.zero_state(stream.shape[0])
    teacher = g.zero_state(stream.shape[0], teacher=True)
    fetches = [g.train_op, g.xent] + g.final_state + g.teacher_final_state
    if g.distill_kl is not None:
        fetches.append(g.distill_kl)
    split = 2 + len(state)
    total, count, start_time, kl = 0.0, 0, time.time(), 0.0
    bar = progress(total=stream.size, desc="epoch %d" % epoch) \
        if progress else None
    for step, (start, n) in enumerate(windows, 1):
        lr = optimization.lr * n / float(optimization.bptt)
        extra = {g.lr: lr, g.training: True}
        extra.update(zip(g.teacher_state, teacher))
        res = sess.run(fetches, g.feed(*window(stream, start, n),
                                       state=state, extra=extra))
        if diverged(res[1]):
            raise TrainingDiverged("training loss", res[1], epoch, step,
                                   len(windows))
        total += float(res[1]) * n  # a Python float, as in evaluate
        count += n
        state = res[2:split]
        teacher = res[split:split + len(teacher)]
        if g.distill_kl is not None:
            kl += float(res[-1]) * n
        if bar is not None:
            rate = count * stream.shape[0] / max(time.time() - start_time,
                                                 1e-9)
            bar.update(n * stream.shape[0])
            bar.set_postfix(tok_s="%.0f" % rate, loss="%.3f" % res[1],
                            ppl="%.1f" % perplexity(res[1]))
    if bar is not None:
        bar.close()
    elapsed = max(time.time() - start_time, 1e-9)
    extra = {} if g.distill_kl is None else {"distill_kl": kl / count}
    return total / count, count * stream.shape[0] / elapsed, extra
