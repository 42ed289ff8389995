"""The op seeds of an object's random ops, derived from its one seed.

One job: every object that draws more than one random stream (a held mask
and its resample, DropConnect's mask) turns the single ``seed`` argument
it was given into one op seed per stream here, so that two of its ops
never draw the same stream and ``seed=None`` keeps TensorFlow's
graph-level seeding. Imports nothing.
"""
from __future__ import absolute_import, division, print_function

__all__ = ["derived_seed"]


def derived_seed(seed, offset):
    """The op seed of the ``offset``-th random op of one object.

    Args:
      seed: the object's seed, an int (Python or numpy), or None.
      offset: an int, the op's index among the object's random ops.

    Returns:
      None for a None ``seed`` (graph-level seeding), else the Python int
      ``seed + offset``.

    Raises:
      TypeError, ValueError: a ``seed`` that ``int()`` refuses (the
        objects check their seed with ``checks.check_int`` first).
    """
    return None if seed is None else int(seed) + offset
