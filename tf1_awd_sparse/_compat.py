"""What differs between the supported TensorFlow versions (1.13.1 - 1.15.x).

The one place for version-dependent code: the rest of the library uses the
API that 1.13 and 1.15 share. ``tests/test_compat.py`` runs on both.
"""
from __future__ import absolute_import, division, print_function

import inspect

import tensorflow as tf

__all__ = ["do_not_convert", "model_pruning_collections"]

# Public from 1.14 on; 1.13 has no tf.autograph.experimental.do_not_convert
# (and its Keras layers never convert `call`, so there is nothing to stop).
_AG_DO_NOT_CONVERT = getattr(tf.autograph.experimental, "do_not_convert",
                             None)


def do_not_convert(func):
    """Decorator: AutoGraph leaves ``func`` as written.

    From TF 1.14 on, ``tf.layers`` / Keras ``Layer.__call__`` runs a
    subclass's ``call`` through AutoGraph, also in graph mode. The library's
    ``call`` methods are graph-mode code with explicit ``tf.cond``; AutoGraph
    would only re-stage them and re-raise their exceptions as AutoGraph's own
    ``StagingError`` (e.g. a bad ``training`` flag would no longer be a
    ``TypeError``). On 1.13 this returns ``func`` unchanged.

    Args:
      func: a function or a method (e.g. a layer's ``call``).

    Returns:
      ``func``, or a wrapper with its name, docstring and signature.
    """
    if _AG_DO_NOT_CONVERT is None:
        return func
    wrapper = _AG_DO_NOT_CONVERT(func)
    # TF's wrapper is ``(*args, **kwargs)``. Keras reads ``call``'s argument
    # names with inspect.getfullargspec (which ignores __wrapped__ but
    # honours __signature__) to decide whether to pass ``training`` at all.
    wrapper.__signature__ = inspect.signature(func)
    return wrapper


def model_pruning_collections():
    """The graph-collection names ``tf.contrib.model_pruning`` keeps its
    masked weights in: ``(mask, threshold, masked weight, weight)``.

    Its ``Pruning`` class reads these four lists in step; their names are
    public only as constants of a module under ``python/layers`` (the same
    path in 1.13 and 1.15).
    """
    from tensorflow.contrib.model_pruning.python.layers import core_layers
    return (core_layers.MASK_COLLECTION, core_layers.THRESHOLD_COLLECTION,
            core_layers.MASKED_WEIGHT_COLLECTION,
            core_layers.WEIGHT_COLLECTION)
