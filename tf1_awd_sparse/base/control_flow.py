"""Where in the graph an op is built: train/eval branching, run-time
assertions, the XLA context, and the once-per-``session.run`` context.

One job: the graph control-flow helpers every floor builds with, written
once (TF 1.x has no public accessor for some of what they read; the
private calls stay here). `once_per_run` is the cell's core primitive: the
tensors a cell computes once per ``session.run`` (its dropped kernel, its
held masks) are built under it, outside the ``tf.while_loop`` that steps
the cell. The argument checks are in :mod:`tf1_awd_sparse.base.checks`.
"""
from __future__ import absolute_import, division, print_function

import numpy as np
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.compat import TENSOR_TYPES, tf
from tensorflow.python.framework import smart_cond as _smart_cond
from tensorflow.python.ops import control_flow_util

__all__ = ["smart_cond", "with_assertions", "in_xla_context",
           "outer_control_inputs", "once_per_run"]


def smart_cond(pred, true_fn, false_fn, name=None):
    """``true_fn()`` or ``false_fn()``: chosen in Python when ``pred`` is a
    bool or a constant tensor (only that branch is built), else a
    ``tf.cond`` (one graph serves both).

    Args:
      pred: Python bool or scalar bool tensor.
      true_fn, false_fn: callables returning matching structures.
      name: optional name scope of the cond.

    Returns:
      The selected callable's result.

    Raises:
      TypeError: ``pred`` is neither a bool nor a bool tensor (None
        included: public entry points resolve a None flag with
        `tf1_awd_sparse.base.checks.check_training` before they get here).
    """
    if not isinstance(pred, (bool, np.bool_) + TENSOR_TYPES) or (
            not isinstance(pred, (bool, np.bool_))
            and pred.dtype.base_dtype != tf.bool):
        raise TypeError("smart_cond: pred must be a bool or a bool tensor, "
                        "got %r" % (pred,))
    if isinstance(pred, np.bool_):
        pred = bool(pred)
    elif not isinstance(pred, bool):
        # A variable's value (2.x's smart_cond refuses a ResourceVariable).
        pred = tf.convert_to_tensor(pred)
    return _smart_cond.smart_cond(pred, true_fn, false_fn, name=name)


def with_assertions(tensor, assertions, name=None):
    """``tensor``, through an identity that runs ``assertions`` first.

    Args:
      tensor: a tensor (any shape and dtype).
      assertions: ops (``tf.debugging.assert_*``) to run whenever the
        returned tensor is computed.
      name: optional name of the identity.

    Returns:
      A tensor equal to ``tensor`` (same shape and dtype). Computing it
      raises the assertions' ``InvalidArgumentError`` when one fails.
    """
    with tf.control_dependencies(assertions):
        return tf.identity(tensor, name=name)


def in_xla_context():
    """Whether ops are being built inside an XLA compilation context
    (``xla.compile``), where TensorFlow drops run-time assertions.

    Returns:
      A Python bool.
    """
    # TF 1.13 has no public accessor for the current control-flow context.
    graph = tf.get_default_graph()
    context = graph._get_control_flow_context()  # pylint: disable=W0212
    return control_flow_util.GetContainingXLAContext(context) is not None


def outer_control_inputs():
    """Control inputs active here that live outside every control-flow
    context: the ones an op built outside a loop or cond may keep.

    Returns:
      A list of ``tf.Operation`` (empty when there are none).
    """
    graph = tf.get_default_graph()
    # pylint: disable=protected-access
    # TF 1.x has no public accessor for the active control dependencies.
    return [op for op in graph._current_control_dependencies()
            if op._get_control_flow_context() is None]


class once_per_run(object):  # pylint: disable=invalid-name
    """Context for tensors computed once per ``session.run``: outside any
    ``tf.while_loop`` / ``tf.cond`` (``control_dependencies(None)`` also
    clears the control-flow context), keeping the call site's control
    inputs that live outside loops (e.g. an update op the caller put
    around ``dynamic_rnn``).

    Args:
      what: the public name building (for the error below).

    Raises:
      GraphModeError: entered inside a TF 2.x control-flow-v2 loop body,
        which no context can leave (``_compat.require_v1_control_flow``).
    """

    def __init__(self, what="this layer"):
        self._what = what

    def __enter__(self):
        _compat.require_v1_control_flow(self._what)
        outer = outer_control_inputs()
        self._clear = tf.control_dependencies(None)
        self._clear.__enter__()
        self._keep = tf.control_dependencies(outer)
        self._keep.__enter__()
        return self

    def __exit__(self, *exc):
        self._keep.__exit__(*exc)
        return self._clear.__exit__(*exc)
