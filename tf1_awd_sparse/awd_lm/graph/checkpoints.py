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

__all__ = ["CheckpointError", "restore", "cause_line", "DIVERGED_LOSS",
           "perplexity", "diverged"]

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
        raise CheckpointError("%s: cannot restore this checkpoint (%s: %s); "
                              "nothing was deleted" % (
                                  prefix, type(e).__name__, cause_line(e)))


#: What TensorFlow's ``Saver.restore`` puts before the real cause of a
#: failed restore ("Restoring from checkpoint failed. This is most likely
#: due to ... Original error:", then the cause on the next lines).
_ORIGINAL_ERROR = "Original error:"
#: The lines of an op error's message that say where, not what: TF 2.x's
#: "Graph execution error:", "Detected at node ... defined at", the
#: stack's ``File`` lines and "Node: ..."; both versions' ``[[node ...]]``.
_WHERE_LINES = ("Graph execution error:", "Detected at node", "File \"",
                "Node: ", "[[")


def cause_line(error):
    """The first line of an error's message that says what went wrong (e.g.
    ``Read less bytes than requested``, or the missing data file's name):
    TensorFlow's restore errors open with a paragraph of guesses ending in
    ``Original error:``, and TF 2.x's with where the op was defined; both
    are skipped. The message's first line when no other is left."""
    message = str(getattr(error, "message", "") or error).strip()
    cause = message.split(_ORIGINAL_ERROR, 1)[-1]
    for line in cause.splitlines():
        line = line.strip()
        if line and not line.startswith(_WHERE_LINES):
            return line
    return (message.splitlines() or [""])[0]
