"""Where the library's non-weight variables live: dropout masks (per process)
and quantization ranges (model state).

A dropout mask held in a variable (``WeightDropLSTMCell(use_vd=True)``,
``VariationalDropout``) is per-process sampling state, not model state: each
worker or replica must draw and hold its own mask, a parameter server must
never hold one (``tf.train.replica_device_setter`` would put it there, and
every worker's update op would then overwrite the mask the others are using),
and a checkpoint must not need it.

The cells create their mask variables inside :func:`mask_variable_scope`,
which applies these rules:

- Always: the mask is created on the device that ordinary ops get at that
  point (the worker's device under ``replica_device_setter``, never a ps), is
  ``synchronization=ON_READ`` with ``aggregation=ONLY_FIRST_REPLICA`` (under a
  ``tf.distribute`` strategy each replica keeps and assigns its own copy), and
  is added to the :data:`MASK_VARIABLES` collection.
- Always: the mask is in ``LOCAL_VARIABLES``, never in
  ``GLOBAL_VARIABLES``, so the default ``tf.train.Saver()`` neither writes
  nor requires it (a checkpoint written with masks restores into a graph
  without them and the reverse) and each process initializes its own
  (``Scaffold``'s local init op, ``tf.local_variables_initializer()``). In a
  single-process graph the library also initializes a mask on its first
  read when nothing else did (see ``variational_dropout.HeldMask``), so the
  usual ``tf.global_variables_initializer()`` alone still works for
  training and evaluation; reading a mask variable directly before any
  forward pass (to inspect it) needs ``tf.local_variables_initializer()``.

The library's other non-weight variables, the learned quantization ranges
of ``WeightDropLSTMCell(is_quant=True)``, are model state (saved, restored,
shared on a ps); :func:`quant_variables` lists them, e.g. to restore a float
checkpoint into a quantization-aware graph.
"""
from __future__ import absolute_import, division, print_function

import contextlib

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.compat import tf
from tensorflow.python.ops import gen_resource_variable_ops

from tf1_awd_sparse.base.checks import check_graph

__all__ = ["MASK_VARIABLES", "QUANT_VARIABLES", "mask_variable_scope",
           "mask_variables", "quant_variables",
           "is_replicated_here"]

#: Graph collection holding every dropout-mask variable of the library.
MASK_VARIABLES = "dropout_mask_variables"
#: Graph collection holding every learned quantization-range variable.
QUANT_VARIABLES = "quantization_range_variables"


def _probe_devices():
    """(device of an ordinary op, device of a resource variable) as the
    current device stack would assign them; the probes are never run.
    Eagerly there is no device function to probe: ``("", "")``."""
    if tf.executing_eagerly():
        return "", ""
    with tf.name_scope("mask_placement_probe"):
        plain = tf.no_op(name="op")
        handle = gen_resource_variable_ops.var_handle_op(
            dtype=tf.float32, shape=[], name="variable")
    return plain.device, handle.op.device


def is_replicated_here():
    """True when a graph built here is replicated: a ``tf.distribute``
    strategy is active, or the device functions in scope place variables
    on another device than ordinary ops (``replica_device_setter``).

    Returns:
      Python bool.
    """
    return _replicated(*_probe_devices())


def _replicated(plain_device, variable_device):
    return (plain_device != variable_device
            or _compat.has_distribution_strategy())


@contextlib.contextmanager
def mask_variable_scope():
    """Context in which the library creates a dropout-mask variable.

    Every variable created inside is placed on the device ordinary ops get
    here (so a ``replica_device_setter`` keeps it on the worker), marked
    ``ON_READ`` / ``ONLY_FIRST_REPLICA`` (replica-local under a distribution
    strategy), added to :data:`MASK_VARIABLES` and ``LOCAL_VARIABLES``,
    and kept out of ``GLOBAL_VARIABLES``. Create only non-trainable
    variables inside.

    Yields:
      None.
    """
    plain_device, _ = _probe_devices()

    def creator(next_creator, **kwargs):
        if kwargs.get("trainable"):
            raise ValueError("mask_variable_scope: mask variables must be "
                             "non-trainable, got trainable=True for %r"
                             % (kwargs.get("name"),))
        collections = [c for c in (kwargs.get("collections") or [])
                       if c != tf.GraphKeys.GLOBAL_VARIABLES]
        kwargs["collections"] = collections + [
            tf.GraphKeys.LOCAL_VARIABLES, MASK_VARIABLES]
        kwargs["trainable"] = False
        kwargs["synchronization"] = tf.VariableSynchronization.ON_READ
        kwargs["aggregation"] = tf.VariableAggregation.ONLY_FIRST_REPLICA
        return next_creator(**kwargs)

    with tf.device(plain_device), tf.variable_creator_scope(creator):
        yield


def mask_variables(graph=None):
    """The dropout-mask variables of ``graph`` (default graph if None).

    Returns:
      List of variables (replica-local wrappers under a strategy).

    Raises:
      ValueError: ``graph`` neither None nor a ``tf.Graph`` (also for
        :func:`quant_variables`).
    """
    graph = check_graph(graph)
    return graph.get_collection(MASK_VARIABLES)

def quant_variables(graph=None):
    """The learned quantization-range variables of ``graph`` (the
    ``quant/`` variables of quantized cells): model state, saved with the
    weights. ``[v for v in tf.global_variables() if v not in
    quant_variables()]`` restores a float checkpoint into a
    quantization-aware graph.

    Args:
      graph: a ``tf.Graph``; the default graph if None.

    Returns:
      List of variables.
    """
    graph = check_graph(graph)
    return graph.get_collection(QUANT_VARIABLES)
