"""Restoring a language model's checkpoint and reading its loss as a
perplexity: the one place that training (`training.train`) and inference
(`inference.lm_backends`, the `savedmodel` and `score` programs) share, so
that an unreadable checkpoint is the same one-line `CheckpointError`
whichever of them meets it.
"""
import math
import sys

from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.base.errors import Error

__all__ = ["CheckpointError", "restore", "DIVERGED_LOSS", "perplexity",
           "diverged"]

#: The largest mean cross-entropy (nats per token) whose perplexity is a
#: float: a larger loss (or a NaN or infinite one) is a diverged run.
DIVERGED_LOSS = math.log(sys.float_info.max)


def perplexity(loss):
    """``exp(loss)`` of a mean cross-entropy in nats; inf where it would
    overflow a float (above `DIVERGED_LOSS`), as ``tf.exp`` gives."""
    return math.exp(loss) if loss <= DIVERGED_LOSS else float("inf")


def diverged(loss):
    """Whether a mean cross-entropy means training diverged: NaN, infinite,
    or above `DIVERGED_LOSS` (its perplexity overflows to inf)."""
    return not (math.isfinite(loss) and loss <= DIVERGED_LOSS)


class CheckpointError(ValueError, Error):
    """A run's checkpoint or state file that cannot be read (missing,
    truncated, corrupt); the message is one line naming the file."""


def restore(saver, session, prefix):
    """``saver.restore(session, prefix)``, with an unreadable checkpoint as
    a `CheckpointError` naming it instead of a TensorFlow error from inside
    the restore op.

    Args:
      saver: a ``tf.train.Saver`` of the graph's variables.
      session: the ``tf.Session`` to restore into.
      prefix: str, the checkpoint prefix (``.../model.ckpt``).

    Raises:
      CheckpointError: the checkpoint is missing, truncated, corrupt or does
        not match the graph (one line: the prefix and TensorFlow's reason).
    """
    try:
        saver.restore(session, prefix)
    except (tf.errors.OpError, ValueError) as e:
        detail = (str(getattr(e, "message", "") or e).strip().splitlines()
                  or [""])[0]
        raise CheckpointError("%s: cannot restore this checkpoint (%s: %s); "
                              "nothing was deleted" % (
                                  prefix, type(e).__name__, detail))
