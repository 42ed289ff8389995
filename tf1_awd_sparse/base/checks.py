"""The library's argument checks and their named errors, written once.

Every public class and function of the library validates its arguments
with these helpers, so an error always names the argument, what was
expected and what was given, and the same kind of argument is checked the
same way everywhere. This module holds the checks of tensors, dtypes and
graphs and the checks' named errors; the checks of Python scalars are in
:mod:`tf1_awd_sparse.base.scalar_checks`, those of id arrays and
directories in :mod:`tf1_awd_sparse.base.data_checks`; each module lists
its own checks, and callers import a check from the module that defines
it. (The graph control flow the checks build with is in
:mod:`tf1_awd_sparse.base.control_flow`; opening a checkpoint argument in
:mod:`tf1_awd_sparse.base.checkpoints`.)

The training flag, one rule for the whole library: a Python bool or a
scalar ``tf.bool`` tensor (e.g. ``tf.placeholder_with_default(True, [])``,
so that one graph trains and evaluates); ``None`` means True. Training is
the default everywhere (cells, layers, dropout functions), as in the
AWD-LSTM port the library replaces: pass False, or feed False, to evaluate.
"""
from __future__ import absolute_import, division, print_function

import numbers
import sys

import numpy as np
from tf1_awd_sparse.base.errors import Error

# Not this module's (not in __all__): the callers of a scalar or data check
# that still import it from here, until they import it from its module
# (issue 56).
from tf1_awd_sparse.base.data_checks import (  # noqa: F401
    check_id_array, check_writable_dir)
from tf1_awd_sparse.base.scalar_checks import (  # noqa: F401
    check_bool, check_choice, check_int, check_interval, check_nonnegative_int,
    check_num_bits, check_number, check_positive_int, check_real)

__all__ = ["TrainingFlagError", "DtypeError", "ParamsError",
           "check_training", "check_keep_prob", "check_graph",
           "check_tensor", "check_shape", "check_float_dtype", "check_dim",
           "check_ids"]


def _tf():
    """TensorFlow's v1 API (`compat.tf`), imported by the checks of
    tensors, dtypes and graphs when they run, not with this module: the
    scalar checks (a config's parameters, the corpus') need no TensorFlow,
    so that reading a model directory's config.json (``awd-lm info``)
    does not import it."""
    from tf1_awd_sparse.base import compat
    return compat.tf


def _is_tensor(value):
    """Whether ``value`` is a tensor or a variable (`compat.TENSOR_TYPES`);
    False without importing TensorFlow when nothing has imported it (no
    value can be one then)."""
    if "tensorflow" not in sys.modules:
        return False
    from tf1_awd_sparse.base import compat
    return isinstance(value, compat.TENSOR_TYPES)


class TrainingFlagError(TypeError, ValueError, Error):
    """A training flag that is neither a Python bool nor a scalar bool
    tensor. Both a TypeError (``tf.layers``' convention for call arguments)
    and a ValueError (``tf.nn.rnn_cell``'s for constructor arguments), so
    code written against either convention catches it."""


class DtypeError(TypeError, ValueError, Error):
    """A tensor argument of the wrong dtype (or not a tensor at all). A
    TypeError (TensorFlow's convention for dtypes) and a ValueError (what
    some functions of the library raised for it before), so code written
    against either catches it."""


class ParamsError(ValueError, RuntimeError, Error):
    """A malformed parameter pair ``(theta, aux)`` of the sparse ops, cells
    and layers (not a 2-tuple, shapes or dtypes that differ, a wrong rank).
    A ValueError like every other bad argument of the library, and a
    RuntimeError for code written against the releases that raised one."""


def check_training(training, arg_name="training"):
    """Validates a train/eval flag (see the module docstring for the rule).

    Args:
      training: None, a Python (or numpy) bool, or a scalar ``tf.bool``
        tensor / variable.
      arg_name: the argument's name, for the error message.

    Returns:
      A Python bool, the bool tensor unchanged, or a variable's value as a
      tensor (TensorFlow 2.x's ``smart_cond`` and ``tf.cond`` take no
      resource variable as the predicate). A tensor of unknown static rank
      comes back through an assertion that it is a scalar when the graph
      runs (``tf.cond`` would fail with "The second input must be a
      scalar", naming no argument).

    Raises:
      TrainingFlagError: any other type, a non-bool tensor, or a tensor
        whose static rank is not 0.
    """
    if training is None:
        return True
    if isinstance(training, (bool, np.bool_)):
        return bool(training)
    if _is_tensor(training):
        tf = _tf()
        if training.dtype.base_dtype != tf.bool:
            raise TrainingFlagError(
                "%s must be a Python bool or a scalar tf.bool tensor, got a "
                "%s tensor" % (arg_name, training.dtype.base_dtype.name))
        if training.shape.ndims not in (None, 0):
            raise TrainingFlagError("%s must be a scalar, got shape %s"
                                    % (arg_name, training.shape))
        training = tf.convert_to_tensor(training)
        if training.shape.ndims is None:
            training = _scalar_at_run_time(training, arg_name)
        return training
    raise TrainingFlagError("%s must be a Python bool or a scalar tf.bool "
                            "tensor, got %r" % (arg_name, training))


def _scalar_at_run_time(flag, arg_name):
    """``flag`` (a bool tensor of unknown rank) through an assertion that it
    is a scalar when the graph runs."""
    tf = _tf()
    with tf.name_scope("%s_is_scalar" % arg_name):
        check = tf.debugging.assert_rank(
            flag, 0, message="%s must be a scalar bool (shape []), fed a "
            "tensor of another rank" % arg_name)
        # A reshape, not an identity: grappler's constant folding forwards
        # an identity's input to tf.cond's Switch, whose own check ("The
        # second input must be a scalar") then fails first.
        with tf.control_dependencies([check]):
            return tf.reshape(flag, [])


def check_keep_prob(keep_prob, arg_name="keep_prob", allow_tensor=False):
    """Validates a keep probability.

    A Python number is checked here. A tensor (only with ``allow_tensor``)
    must be a float scalar; its value is checked when the graph runs: the
    tensor returned carries ``tf.debugging`` assertions (two scalar
    comparisons per run) that raise ``InvalidArgumentError`` naming
    ``arg_name`` for a value outside ``(0, 1]``, NaN included, or (for a
    tensor of unknown rank) a value that is not a scalar. (TensorFlow 1.15
    evaluates the assertions of a constant while the graph is built and
    raises the same error then. Inside an XLA computation TensorFlow drops
    run-time assertions: check the value before ``xla.compile``.)

    Args:
      keep_prob: a Python / numpy real in ``(0, 1]``, or with
        ``allow_tensor`` a scalar float tensor / variable.
      arg_name: the argument's name, for the error message.
      allow_tensor: accept a tensor.

    Returns:
      ``keep_prob`` as a Python float, or the checked tensor (a tensor
      this function returned is passed through unchanged).

    Raises:
      ValueError: a number outside ``(0, 1]`` (NaN included), anything
        else that is not a number (a tensor without ``allow_tensor``), or
        a tensor of known rank other than 0.
      TypeError: a tensor that is not of a float dtype.
    """
    if allow_tensor and _is_tensor(keep_prob):
        from tf1_awd_sparse.base import control_flow
        tf = _tf()
        if getattr(keep_prob, _CHECKED_KEEP_PROB, False):
            return keep_prob
        keep_prob = check_tensor(keep_prob, arg_name, kind="float", rank=0)
        message = "%s must be in (0, 1]" % arg_name
        assertions = [
            tf.debugging.assert_greater(
                keep_prob, tf.zeros([], keep_prob.dtype), message=message),
            tf.debugging.assert_less_equal(
                keep_prob, tf.ones([], keep_prob.dtype), message=message)]
        if keep_prob.shape.ndims is None:
            # An unknown rank: a scalar is checked when the graph runs.
            assertions.append(tf.debugging.assert_rank(
                keep_prob, 0, message="%s must be a scalar" % arg_name))
        checked = control_flow.with_assertions(keep_prob, assertions,
                                               arg_name)
        setattr(checked, _CHECKED_KEEP_PROB, True)
        return checked
    if (isinstance(keep_prob, (bool, np.bool_))
            or not isinstance(keep_prob, numbers.Real)
            or not 0.0 < float(keep_prob) <= 1.0):
        raise ValueError("%s must be a number in (0, 1]%s, got %r"
                         % (arg_name, " or a scalar float tensor"
                            if allow_tensor else "", keep_prob))
    return float(keep_prob)


# Attribute set on the tensors check_keep_prob returns, so that a keep
# probability passed on (e.g. locked_dropout -> bernoulli_mask ->
# apply_mask) is asserted once per graph, not once per function.
_CHECKED_KEEP_PROB = "_tf1_awd_checked_keep_prob"


_KINDS = {"float": ("a float", lambda d: d.is_floating),
          "int": ("an int32 or int64",
                  lambda d: d in (_tf().int32, _tf().int64))}


def check_tensor(value, arg_name, kind=None, dtype=None, dtype_of=None,
                 rank=None, min_rank=None):
    """Converts an argument to a tensor and checks its dtype and rank at
    graph-construction time, so a bad tensor is named here rather than by
    the op it would reach.

    Args:
      value: a tensor, variable, array or Python value.
      arg_name: the argument's name, for the error message.
      kind: None, ``'float'`` (any float dtype) or ``'int'`` (int32 or
        int64: the index dtypes of TensorFlow's gathers).
      dtype: the exact (base) dtype required, or None.
      dtype_of: what ``dtype`` is, for the message (e.g. ``"the dtype of
        variational_params"``).
      rank: the static rank required (an unknown rank passes), or None.
      min_rank: the smallest static rank allowed; the rank must then be
        known.

    Returns:
      The tensor (a variable is read with ``tf.convert_to_tensor``).

    Raises:
      DtypeError (a TypeError and a ValueError): not convertible to a
        tensor, or a dtype of the wrong kind or other than ``dtype``.
      ValueError: a wrong (or, with ``min_rank``, unknown) rank.
    """
    tf = _tf()
    try:
        tensor = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as error:
        raise DtypeError("%s must be a tensor (or convertible to one), got "
                         "%r (%s)" % (arg_name, value, error))
    base = tensor.dtype.base_dtype
    if kind is not None and not _KINDS[kind][1](base):
        raise DtypeError("%s must be %s tensor, got %s" % (
            arg_name, _KINDS[kind][0], base.name))
    if dtype is not None and base != tf.as_dtype(dtype).base_dtype:
        raise DtypeError("%s must be %s%s, got %s" % (
            arg_name, tf.as_dtype(dtype).base_dtype.name,
            " (%s)" % dtype_of if dtype_of else "", base.name))
    ndims = tensor.shape.ndims
    if rank is not None and ndims not in (None, rank):
        raise ValueError("%s must have rank %d, got shape %s"
                         % (arg_name, rank, tensor.shape))
    if min_rank is not None and (ndims is None or ndims < min_rank):
        raise ValueError("%s must have a known rank >= %d, got shape %s"
                         % (arg_name, min_rank, tensor.shape))
    return tensor


def check_shape(shape, arg_name="shape"):
    """Validates a static shape argument: fully defined, a list / tuple of
    ints >= 0 or a ``tf.TensorShape``.

    Returns:
      The ``tf.TensorShape``.

    Raises:
      ValueError: anything else (a string, -1, 2.5, None entries...).
    """
    try:
        dims = _tf().TensorShape(shape)
    except (TypeError, ValueError) as error:
        raise ValueError("%s must be a fully defined shape (a list of ints "
                         ">= 0), got %r (%s)" % (arg_name, shape, error))
    if not dims.is_fully_defined():
        raise ValueError("%s must be fully defined, got %s"
                         % (arg_name, dims))
    return dims


def check_float_dtype(dtype, arg_name="dtype"):
    """Validates a dtype argument that must be a float dtype.

    Returns:
      ``dtype`` as a ``tf.DType``.

    Raises:
      DtypeError (a TypeError and a ValueError): not a dtype, or not a
        float one.
    """
    try:
        dtype = _tf().as_dtype(dtype)
    except TypeError:
        raise DtypeError("%s must be a float dtype, got %r" % (arg_name,
                                                                dtype))
    if not dtype.is_floating:
        raise DtypeError("%s must be a float dtype, got %s" % (arg_name,
                                                                dtype.name))
    return dtype


def check_dim(tensor, axis, expected, arg_name, expected_what):
    """Checks one static dimension of a tensor (unknown sizes pass).

    Args:
      tensor: a tensor of known rank.
      axis: the axis (negative counts from the end).
      expected: the size it must have (int or None: anything passes).
      arg_name: the tensor's argument name, for the message.
      expected_what: where ``expected`` comes from, for the message (e.g.
        ``"the rows of variational_params' theta"``).

    Raises:
      ValueError: a known size other than ``expected``, naming both.
    """
    shape = tensor.shape
    size = shape.as_list()[axis]
    if expected is not None and size is not None and size != expected:
        raise ValueError("%s.shape[%d] must be %d (%s), got shape %s"
                         % (arg_name, axis, expected, expected_what, shape))


def check_ids(ids, vocab_size, arg_name="ids"):
    """Validates the ids of an embedding lookup: an int32 / int64 tensor
    checked at graph-construction time, and its values in
    ``[0, vocab_size)`` checked when the graph runs.

    The library's one rule for ids out of range: an ``InvalidArgumentError``
    at run time whose message names ``arg_name`` and the vocabulary size
    (two ``tf.debugging`` assertions over the ids; TensorFlow 1.15
    evaluates them on constant ids while the graph is built and raises the
    same error then). Inside an XLA computation (``xla.compile``)
    TensorFlow drops run-time assertions, so there the ids are clamped into
    ``[0, vocab_size)`` instead, as XLA's own gather does, never silently
    turned into rows of zeros: check ids before ``xla.compile`` when they
    may be bad.

    Args:
      ids: int32 / int64 tensor of any shape (Python lists and arrays are
        converted).
      vocab_size: int or scalar int tensor, the number of rows.
      arg_name: the argument's name, for the error message.

    Returns:
      The ids tensor, with the check attached.

    Raises:
      TypeError: ids that are not int32 / int64.
    """
    ids = check_tensor(ids, arg_name, kind="int")
    from tf1_awd_sparse.base import control_flow
    tf = _tf()
    vocab = tf.cast(vocab_size, ids.dtype)
    if control_flow.in_xla_context():
        return tf.clip_by_value(ids, tf.zeros([], ids.dtype), vocab - 1)
    message = "%s must be in [0, vocab_size)" % arg_name
    return control_flow.with_assertions(ids, [
        tf.debugging.assert_non_negative(ids, message=message),
        tf.debugging.assert_less(ids, vocab, message=message)], arg_name)


def check_graph(graph, arg_name="graph"):
    """A graph argument: None means the default graph.

    Returns:
      The ``tf.Graph``.

    Raises:
      ValueError: anything but None or a ``tf.Graph``.
    """
    tf = _tf()
    if graph is None:
        return tf.get_default_graph()
    if not isinstance(graph, tf.Graph):
        raise ValueError("%s must be a tf.Graph or None, got %r"
                         % (arg_name, graph))
    return graph
