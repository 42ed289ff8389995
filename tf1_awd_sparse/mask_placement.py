"""Where the library's dropout-mask variables live when a graph is replicated.

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
- Replicated graphs (a distribution strategy is active, or a device function
  would place variables on another device than ordinary ops, as
  ``replica_device_setter`` does): the mask goes to ``LOCAL_VARIABLES`` only,
  so each process initializes its own (``Scaffold``'s local init op) and no
  ``Saver`` writes or requires it.
- Single-process graphs: the mask stays in ``GLOBAL_VARIABLES`` as well, so
  ``tf.global_variables_initializer()`` initializes it as users expect; use
  :func:`restorable_variables` as a ``Saver`` ``var_list`` to restore a
  checkpoint written without masks into such a graph.
"""
from __future__ import absolute_import, division, print_function

import contextlib

import tensorflow as tf
from tensorflow.python.distribute import distribution_strategy_context
from tensorflow.python.ops import gen_resource_variable_ops

__all__ = ["MASK_VARIABLES", "mask_variable_scope", "mask_variables",
           "restorable_variables", "is_replicated_here"]

#: Graph collection holding every dropout-mask variable of the library.
MASK_VARIABLES = "dropout_mask_variables"


def _probe_devices():
    """(device of an ordinary op, device of a resource variable) as the
    current device stack would assign them; the probes are never run."""
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
            or distribution_strategy_context.has_distribution_strategy())


@contextlib.contextmanager
def mask_variable_scope():
    """Context in which the library creates a dropout-mask variable.

    Every variable created inside is placed on the device ordinary ops get
    here (so a ``replica_device_setter`` keeps it on the worker), marked
    ``ON_READ`` / ``ONLY_FIRST_REPLICA`` (replica-local under a distribution
    strategy), added to :data:`MASK_VARIABLES`, and, when the graph is
    replicated (:func:`is_replicated_here`), kept out of
    ``GLOBAL_VARIABLES`` (``LOCAL_VARIABLES`` instead). Create only
    non-trainable variables inside.

    Yields:
      None.
    """
    plain_device, variable_device = _probe_devices()
    replicated = _replicated(plain_device, variable_device)

    def creator(next_creator, **kwargs):
        if kwargs.get("trainable"):
            raise ValueError("mask_variable_scope: mask variables must be "
                             "non-trainable, got trainable=True for %r"
                             % (kwargs.get("name"),))
        collections = list(kwargs.get("collections")
                           or [tf.GraphKeys.GLOBAL_VARIABLES])
        if replicated:
            collections = [tf.GraphKeys.LOCAL_VARIABLES]
        kwargs["collections"] = collections + [MASK_VARIABLES]
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
    """
    graph = graph or tf.get_default_graph()
    return graph.get_collection(MASK_VARIABLES)


def restorable_variables(graph=None):
    """``GLOBAL_VARIABLES`` without the dropout masks: a ``Saver``
    ``var_list`` that restores checkpoints written with or without masks.

    Args:
      graph: a ``tf.Graph``; the default graph if None.

    Returns:
      List of variables.
    """
    graph = graph or tf.get_default_graph()
    masks = set(id(v) for v in mask_variables(graph))
    return [v for v in graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
            if id(v) not in masks]
