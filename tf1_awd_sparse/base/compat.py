"""What differs between the supported TensorFlow versions: 1.13.1 - 1.15.x
on CPython 3.7, and 2.15 - 2.21 in v1 graph mode (docs/versions.md).

The one place that knows the version, and what else is installed (which
TFLite interpreter runs ``.tflite`` files: :func:`interpreter_class`). The
rest of the library writes

    from tf1_awd_sparse.base.compat import tf

and gets TensorFlow's v1 API: the ``tensorflow`` module itself on 1.x,
``tensorflow.compat.v1`` on 2.x. Nothing here, nor anywhere in the library,
reaches ``tf.contrib`` on import or on a path that 2.x lacks.

Importing this module raises :class:`ImportError` at once, with one line
saying what to install and set, when TensorFlow is too old, or when it is
2.16+ with Keras 3 (whose ``tf.compat.v1.nn.rnn_cell`` has no cells); its
``name`` is this module's (the command lines print the line alone).
``tests/base/test_compat.py`` runs on every supported version.
"""
from __future__ import absolute_import, division, print_function

import inspect
import os
import warnings

import tensorflow as _tf
from tf1_awd_sparse.base.errors import Error

__all__ = ["tf", "TF_VERSION", "IS_TF2", "nest", "get_static_value",
           "PartitionedVariable", "Variable", "TENSOR_TYPES",
           "has_distribution_strategy", "dimension_value",
           "graph_mode_program", "require_graph_mode", "require_v1_control_flow",
           "in_function_graph", "CONTROL_FLOW_GRAPHS",
           "GraphModeError", "do_not_convert",
           "estimator_available", "replica_values", "scale_replica_loss",
           "INTERPRETERS", "interpreter_class", "TF_INTERPRETER_WARNING"]


def _parse_version(text):
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


#: (major, minor) of the TensorFlow that is imported.
TF_VERSION = _parse_version(_tf.__version__)
#: True on TensorFlow 2.x, where the library runs through tf.compat.v1.
IS_TF2 = TF_VERSION >= (2, 0)

if TF_VERSION < (1, 13):
    raise ImportError(
        "tf1_awd_sparse needs TensorFlow 1.13 - 1.15 or 2.15 - 2.21, not %s: "
        "pip install tensorflow==1.13.1 (CPython 3.7) or tensorflow-cpu==2.15.1"
        % _tf.__version__, name=__name__)


def _keras_3_message():
    """The one-line fix when the v1 RNN cells are unavailable (Keras 3)."""
    try:
        import tf_keras  # noqa: F401  pylint: disable=unused-import
        have = True
    except ImportError:
        have = False
    legacy = os.environ.get("TF_USE_LEGACY_KERAS", "")
    if have and legacy not in ("1", "true", "True"):
        fix = ("set TF_USE_LEGACY_KERAS=1 in the environment before "
               "TensorFlow is imported")
    elif have:
        fix = ("TF_USE_LEGACY_KERAS=1 was set after TensorFlow was imported; "
               "set it before the first import of tensorflow")
    else:
        fix = ("pip install tf-keras~=%d.%d and set TF_USE_LEGACY_KERAS=1 "
               "before TensorFlow is imported" % TF_VERSION)
    return ("tf1_awd_sparse needs Keras 2 on TensorFlow %s (its v1 RNN cells "
            "are not available with Keras 3): %s" % (_tf.__version__, fix))


if IS_TF2:
    tf = _tf.compat.v1
    try:
        # Resolving the v1 cell base class is what fails under Keras 3.
        _RNN_CELL = tf.nn.rnn_cell.RNNCell
    except Exception:  # pylint: disable=broad-except
        raise ImportError(_keras_3_message(), name=__name__) from None
else:
    tf = _tf

# Public on every version: ``tf.nest`` / ``tf.get_static_value`` exist from
# 1.14 (and in compat.v1 only from 2.x), so the stable modules behind them.
from tensorflow.python.util import nest  # noqa: E402
from tensorflow.python.framework import tensor_util as _tensor_util  # noqa
from tensorflow.python.ops.variables import PartitionedVariable  # noqa

#: The class every variable of the version is an instance of, ref and
#: resource variables alike. Not ``tf.Variable`` of the v1 API: on 2.x
#: ``tf.compat.v1.Variable`` is ``VariableV1``, the ref variables' class,
#: and a ``ResourceVariable`` (``use_resource=True``, or any variable after
#: ``tf.enable_resource_variables()``) is not an instance of it. The
#: top-level ``tensorflow.Variable`` is the common base on every version
#: (``VariableV1`` itself on 1.x, whose resource variables derive from it).
Variable = _tf.Variable
#: What a graph-mode argument that is "a tensor or a variable" can be, for
#: ``isinstance``.
TENSOR_TYPES = (tf.Tensor, Variable)

#: ``tf.get_static_value`` of every version: a tensor's value when it is
#: known while building, else None.
get_static_value = _tensor_util.constant_value


def dimension_value(dim):
    """The int (or None) of one dimension of a static shape, whether the
    shape is v1's (``Dimension`` objects) or v2's (ints), i.e. also when
    only eager execution was turned off on TF 2.x."""
    return getattr(dim, "value", dim)


def estimator_available():
    """Whether ``tf.estimator`` exists (TF 1.x and 2.x up to 2.15; it was
    removed in 2.16). The language model's Estimator entry uses it; its
    training loop (``MonitoredTrainingSession``) runs everywhere."""
    return hasattr(tf, "estimator")


def replica_values(value):
    """The per-device components of a ``tf.distribute`` value (a mirrored
    or replica-local variable, or a per-replica tensor), in the strategy's
    device order; ``[value]`` for anything else.

    TF 1.13 keeps them behind ``value.devices`` and ``value.get(device)``;
    1.15 has both that and ``value.values``; 2.x only ``value.values``.

    Args:
      value: a variable, tensor or distributed value.

    Returns:
      list of variables / tensors, one per replica (each with its own
      ``.device``).
    """
    components = getattr(value, "values", None)
    if isinstance(components, (tuple, list)):
        return list(components)
    devices = getattr(value, "devices", None)
    if isinstance(devices, (tuple, list)) and hasattr(value, "get"):
        return [value.get(device=d) for d in devices]
    return [value]


def scale_replica_loss(loss):
    """A replica's loss, scaled so that the gradients a v1 optimizer sums
    over the replicas of a ``tf.distribute`` strategy are those of the mean
    loss over the replicas (the gradient Estimator trains with).

    The v1 optimizers divide the loss by the number of replicas themselves
    when ``tf.distribute.get_loss_reduction()`` is MEAN: always on TF 1.13,
    only inside Estimator from 1.14 on (outside, it is SUM and they sum the
    replicas' gradients). This divides exactly when the optimizer will not.

    Args:
      loss: scalar float tensor, built in a replica's context.

    Returns:
      ``loss`` itself (no strategy, one replica, or an optimizer that
      averages), else ``loss / num_replicas_in_sync``.
    """
    if not tf.distribute.has_strategy():
        return loss
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if (replicas == 1 or tf.distribute.get_loss_reduction()
            == tf.distribute.ReduceOp.MEAN):
        return loss
    return loss * (1.0 / replicas)


#: The interpreters a ``.tflite`` file can be run with (`interpreter_class`).
INTERPRETERS = ("auto", "tf", "litert")

#: The start of the warning ``tf.lite.Interpreter`` gives at every
#: construction from TF 2.20 on (five lines: deprecated, use LiteRT's),
#: which `interpreter_class` silences when it hands out that class.
TF_INTERPRETER_WARNING = r"\s*Warning: tf\.lite\.Interpreter is deprecated"


def _litert_interpreter():
    """LiteRT's ``Interpreter`` class, or None where ``ai-edge-litert`` is
    not installed (it has no wheels for TF 1.x's CPython 3.7)."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        return None
    return Interpreter


def interpreter_class(interpreter=None):
    """The class that runs ``.tflite`` files: ``tf.lite.Interpreter`` or
    LiteRT's ``ai_edge_litert.interpreter.Interpreter`` (the same API;
    TF 2.21 warns that its own is deprecated in favour of LiteRT).

    Args:
      interpreter: ``"tf"``, ``"litert"`` (``pip install ai-edge-litert``,
        TF 2.x's Pythons), ``"auto"`` or None (LiteRT's where it is
        installed: the runtime deployments use, bit-identical on the
        library's uint8 files, and the one TF 2.x deprecates its own for;
        else ``tf.lite.Interpreter``), or a class with that API (returned
        as it is).

    Returns:
      the class (not an instance: call it with ``model_path=``). When it
      is ``tf.lite.Interpreter``, its deprecation warning (TF 2.20+, at
      every construction: `TF_INTERPRETER_WARNING`) is silenced for the
      rest of the process (that warning only, by a ``warnings`` filter):
      the choice is made here, and the docs say to install LiteRT.

    Raises:
      ValueError: another value; ``"tf"`` on a TensorFlow without
        ``tf.lite.Interpreter``; or LiteRT asked for and not installed (the
        messages say what to use or install).
    """
    if interpreter is None:
        interpreter = "auto"
    if isinstance(interpreter, type):
        return interpreter
    if interpreter not in INTERPRETERS:
        raise ValueError("interpreter must be one of %s or an interpreter "
                         "class, got %r" % (", ".join(INTERPRETERS),
                                            interpreter))
    # Only "auto" and "litert" import LiteRT ("tf" never loads it).
    litert = _litert_interpreter() if interpreter != "tf" else None
    if interpreter == "auto":
        interpreter = "tf" if litert is None else "litert"
    if interpreter == "litert":
        if litert is None:
            raise ValueError("interpreter='litert' needs LiteRT: pip install "
                             "ai-edge-litert (TF 2.x's Pythons)")
        return litert
    tf_class = getattr(tf.lite, "Interpreter", None)
    if tf_class is None:
        raise ValueError("interpreter='tf': this TensorFlow has no "
                         "tf.lite.Interpreter; use interpreter='litert'")
    warnings.filterwarnings("ignore", message=TF_INTERPRETER_WARNING,
                            category=UserWarning)
    return tf_class


def has_distribution_strategy():
    """Whether a ``tf.distribute`` strategy scope is active (public API on
    every version; 1.13's private module of the same name is gone in 2.x)."""
    return tf.distribute.has_strategy()


class GraphModeError(RuntimeError, Error):
    """The library builds TF1 graphs; it was called while eager execution
    is on (TensorFlow 2.x without ``tf.compat.v1.disable_v2_behavior()``)."""


def graph_mode_program():
    """What a TF1-style program does first on TensorFlow 2.x: v1 graph mode
    (``tf.compat.v1.disable_v2_behavior()``; the same call on 1.x, where
    it changes nothing the library relies on). The command lines call it;
    the library's functions never do."""
    # tf.compat.v1 on 1.x too: 1.15 warns about the top-level name.
    tf.compat.v1.disable_v2_behavior()


def require_graph_mode(what):
    """Raises :class:`GraphModeError` naming ``what`` and the fix when
    eager execution is on, so that no deep TensorFlow error follows.

    Args:
      what: the public name being built (e.g. ``"WeightDropLSTMCell"``).

    Raises:
      GraphModeError: ``tf.executing_eagerly()`` is True.
    """
    if tf.executing_eagerly():
        raise GraphModeError(
            "%s builds a TF1 graph, but eager execution is on: call "
            "tf.compat.v1.disable_v2_behavior() (or "
            "tf.compat.v1.disable_eager_execution()) before building, or build "
            "inside `with tf.Graph().as_default():`" % what)


def in_function_graph(graph=None):
    """Whether ops are being built into a function graph: the body of a
    TF 2.x control-flow-v2 ``while_loop`` / ``cond`` (what
    ``tf.nn.dynamic_rnn`` builds when v2 behaviour is on), or a
    ``tf.function``.

    Args:
      graph: the graph to ask about (default: the default graph).
    """
    graph = tf.get_default_graph() if graph is None else graph
    # pylint: disable=protected-access
    return bool(getattr(graph, "_building_function", False))


def require_v1_control_flow(what):
    """Raises :class:`GraphModeError` naming ``what`` and the fix when
    called inside a function graph (see :func:`in_function_graph`).

    What the library builds once per run is built outside control-flow-v2
    loops and inside ``tf.function`` (``base.control_flow.once_per_run``);
    this refuses what still needs a v1 graph: quantization-aware training
    (``is_quant=True``), whose per-step range statistics are ordered with
    v1 control dependencies that a v2 loop body cannot hold.

    Raises:
      GraphModeError: building inside a function graph.
    """
    if in_function_graph():
        raise GraphModeError(
            "%s needs a TF1 graph with v1 control flow; it was called inside "
            "a function graph (a TF 2.x control flow v2 loop or cond body, or "
            "a tf.function): call tf.compat.v1.disable_v2_behavior() (or "
            "tf.compat.v1.disable_control_flow_v2()) before building, outside "
            "tf.function" % what)


def _control_flow_graphs():
    """The classes of TF 2.x control-flow-v2 body graphs (while body and
    cond, cond branches), or () where they do not exist (TF 1.13)."""
    try:
        from tensorflow.python.ops import control_flow_v2_func_graphs as cf
    except ImportError:
        return ()
    return tuple(getattr(cf, name) for name in (
        "WhileBodyFuncGraph", "WhileCondFuncGraph", "CondBranchFuncGraph")
                 if hasattr(cf, name))


#: Graph classes of control-flow-v2 loop and cond bodies: a value built
#: once per run is built in the graph around them (base.control_flow).
CONTROL_FLOW_GRAPHS = _control_flow_graphs()


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
