"""Where in the graph an op is built: train/eval branching, run-time
assertions, the XLA context, and the once-per-run context.

One job: the graph control-flow helpers every floor builds with, written
once (TF 1.x has no public accessor for some of what they read; the
private calls stay here). `once_per_run` is the cell's core primitive: the
tensors a cell computes once per run (its dropped kernel, its held masks)
are built under it, outside the ``tf.while_loop`` that steps the cell.
What a run is depends on the mode (`run_key`; docs/cells.md): one
``session.run`` in graph mode, one call of the function inside
``tf.function``, eagerly one call of an RNN function (`one_run` makes a
block one run); `PerRun` keeps a value for the rest of its run. The
argument checks are in :mod:`tf1_awd_sparse.base.checks`.
"""
from __future__ import absolute_import, division, print_function

import inspect
import sys
import threading

import numpy as np
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.compat import TENSOR_TYPES, tf
from tensorflow.python.framework import smart_cond as _smart_cond
from tensorflow.python.ops import control_flow_util

__all__ = ["smart_cond", "with_assertions", "in_xla_context",
           "outer_control_inputs", "once_per_run", "run_graph", "run_mode",
           "run_key",
           "one_run", "PerRun"]


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


# ----------------------------------------------------------------------
# Runs: what "once per run" means in each mode (docs/cells.md).
# ----------------------------------------------------------------------
_LOCAL = threading.local()
# TF's v1 RNN drivers: eagerly, one call of one of them is one run.
_DRIVER_NAMES = ("dynamic_rnn", "static_rnn", "static_state_saving_rnn",
                 "bidirectional_dynamic_rnn", "static_bidirectional_rnn",
                 "raw_rnn")
_DRIVERS = []


def _driver_codes():
    """The code objects of TF's v1 RNN functions (``tf.nn.dynamic_rnn``...),
    found once, under their decorators."""
    if not _DRIVERS:
        _DRIVERS.append(frozenset(
            inspect.unwrap(getattr(tf.nn, name)).__code__
            for name in _DRIVER_NAMES if hasattr(tf.nn, name)))
    return _DRIVERS[0]


def run_graph():
    """The graph a once-per-run value is built in: the default graph, or,
    inside TF 2.x control-flow-v2 loop / cond bodies, the first graph around
    them that is not one (a ``tf.function``'s graph, or the program's
    graph); None when executing eagerly.

    Returns:
      A ``tf.Graph`` (a function graph included) or None.
    """
    if tf.executing_eagerly():
        return None
    graph = tf.get_default_graph()
    while isinstance(graph, _compat.CONTROL_FLOW_GRAPHS):
        graph = graph.outer_graph
    return graph


def run_mode():
    """How the current run is built: ``"eager"``, ``"function"`` (inside a
    ``tf.function``: :func:`run_graph` is a function graph, whose stateful
    ops run in program order) or ``"graph"`` (a v1 graph: ``session.run``).

    Returns:
      One of those three strings.
    """
    graph = run_graph()
    if graph is None:
        return "eager"
    return "function" if _compat.in_function_graph(graph) else "graph"


def _eager_run():
    """The token of the eager run in progress: the outermost
    :class:`one_run` block, else the frame of the innermost TF RNN function
    being called (``tf.nn.dynamic_rnn``...), else a new token (a call on
    its own is a run)."""
    scopes = getattr(_LOCAL, "runs", None)
    if scopes:
        return scopes[0]
    codes = _driver_codes()
    frame = sys._getframe(1)  # pylint: disable=protected-access
    while frame is not None:
        if frame.f_code in codes:
            # The frame object itself, held by the caller's cache until the
            # next run: while held, no later call can have its identity.
            return frame
        frame = frame.f_back
    return object()


def run_key():
    """What identifies the current run: two values built under the same key
    are built once, for the same run.

    - Graph mode: the graph (:func:`run_graph`): one value per graph, computed
      once per ``session.run``.
    - Inside ``tf.function``: the function's graph: computed once per call of
      the function, outside its loops.
    - Eagerly: one token per run (:func:`_eager_run`): per
      :class:`one_run` block, else per call of a TF RNN function, else per
      call.

    Returns:
      An object compared by identity.
    """
    graph = run_graph()
    return _eager_run() if graph is None else graph


class one_run(object):  # pylint: disable=invalid-name
    """Eagerly, a block that is one run: every once-per-run value (a cell's
    dropped kernel, ...) is computed once inside it, however many RNN calls
    it holds (``WeightDropLSTM.__call__`` is one). Nested blocks belong to
    the outermost. In graph mode and inside ``tf.function`` it changes
    nothing (the graph is the run)."""

    def __enter__(self):
        runs = getattr(_LOCAL, "runs", None)
        if runs is None:
            runs = _LOCAL.runs = []
        runs.append(object())
        return self

    def __exit__(self, *exc):
        _LOCAL.runs.pop()
        return False


class once_per_run(object):  # pylint: disable=invalid-name
    """Context for tensors computed once per run (:func:`run_key`): outside
    any ``tf.while_loop`` / ``tf.cond``. A v1 loop or cond is left with
    ``control_dependencies(None)`` (which also clears the control-flow
    context), keeping the call site's control inputs that live outside loops
    (e.g. an update op the caller put around ``dynamic_rnn``); a
    control-flow-v2 body is left by building in :func:`run_graph` (the body
    captures the result). Eagerly it does nothing: ops run at once.

    Args:
      what: the public name building (kept for messages).
    """

    def __init__(self, what="this layer"):
        self._what = what
        self._contexts = []

    def __enter__(self):
        graph = run_graph()
        if graph is None:
            return self
        # Each context made after the one before is entered: a
        # control_dependencies context reads the graph's when it is made.
        if graph is tf.get_default_graph():
            outer = outer_control_inputs()
            makers = [lambda: tf.control_dependencies(None),
                      lambda: tf.control_dependencies(outer)]
        else:
            makers = [graph.as_default, lambda: tf.control_dependencies(None)]
        for make in makers:
            context = make()
            context.__enter__()
            self._contexts.append(context)
        return self

    def __exit__(self, *exc):
        while self._contexts:
            self._contexts.pop().__exit__(*exc)
        return False


class PerRun(object):
    """A value computed once per run (:func:`run_key`), under
    :class:`once_per_run`, and kept for the rest of the run.

    Args:
      what: the public name building (for :class:`once_per_run`).
    """

    def __init__(self, what):
        self._what = what
        self._key = None
        self.value = None

    def get(self, compute):
        """``compute()``'s value for this run, computed on the run's first
        call.

        Args:
          compute: callable of no arguments building the value.

        Returns:
          What ``compute`` returned for the current run.
        """
        key = run_key()
        if self._key is not key:
            with once_per_run(self._what):
                self.value = compute()
            self._key = key
        return self.value
