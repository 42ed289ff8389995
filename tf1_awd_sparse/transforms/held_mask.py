"""Held masks and the dropout math: a keep-mask drawn once and held in a
variable, resampled only by its update op.

This module is the one place where the library's dropout math is written:
:func:`bernoulli_mask` draws a keep-mask, :func:`scaled_mask` turns it into
the inverted-dropout multiplier and :func:`apply_mask` applies it
(``x * mask / keep_prob``). :class:`HeldMask` holds such a mask in a
non-trainable variable whose update op goes to ``tf.GraphKeys.UPDATE_OPS``,
ordered after every read (eagerly, a callable; inside ``tf.function``, an
assign made where it is asked for); the cells' DropConnect
(:mod:`tf1_awd_sparse.transforms.kernel`) and the dropout layers
(:mod:`tf1_awd_sparse.layers.dropout`) are built on it.
:func:`train_op_with_updates` is ``optimizer.minimize`` that also runs
``tf.GraphKeys.UPDATE_OPS``.

Floor 2 (held state and kernel transforms): imports floors 0-1 only.
"""
from __future__ import absolute_import, division, print_function

import numbers

from tf1_awd_sparse.base.compat import TENSOR_TYPES, tf
from tensorflow.python.ops import gen_random_ops

from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.base.checks import (
    check_float_dtype, check_keep_prob, check_shape, check_tensor)
from tf1_awd_sparse.base.control_flow import once_per_run, run_mode
from tf1_awd_sparse.base.seeds import derived_seed

__all__ = [
    "bernoulli_mask", "scaled_mask", "apply_mask", "check_mask_broadcast",
    "BernoulliInitializer", "HeldMask", "make_mask_variable",
    "train_op_with_updates",
]


# --------------------------------------------------------------------------
# The dropout math (the only copy in the library).
# --------------------------------------------------------------------------
# Keep probabilities: a Python number is checked when the graph is built; a
# tensor (any function of this module that documents "or a scalar float
# tensor") is checked when it runs, by assertions that raise
# InvalidArgumentError naming the argument for a value outside (0, 1] or
# NaN (see tf1_awd_sparse.base.checks.check_keep_prob). Without them 0 and NaN
# gave NaN outputs and 1.5 scaled without dropping.


def _mask_shape(shape):
    """A mask shape: a list of ints >= 0, or a 1-D int tensor."""
    if isinstance(shape, TENSOR_TYPES):
        return check_tensor(shape, "shape", kind="int", rank=1)
    return check_shape(shape).as_list()


def check_mask_broadcast(x, mask_shape, mask_name):
    """Raises ValueError naming both when the static shapes of ``x`` and a
    mask cannot broadcast (unknown dimensions pass)."""
    try:
        tf.broadcast_static_shape(x.get_shape(), tf.TensorShape(mask_shape))
    except ValueError:
        raise ValueError("x of shape %s does not broadcast with %s of shape "
                         "%s" % (x.get_shape(), mask_name, mask_shape))


def bernoulli_mask(shape, keep_prob, dtype=tf.float32, seed=None, name=None):
    """Samples a 0/1 keep-mask, each entry 1 with probability ``keep_prob``.

    Args:
      shape: 1-D int tensor or list of ints >= 0, the mask's shape.
      keep_prob: Python float in ``(0, 1]`` or a scalar float tensor
        (checked when the graph runs).
      dtype: float dtype of the mask.
      seed: optional op seed.
      name: optional name scope.

    Returns:
      A ``dtype`` tensor of ``shape`` holding 0s and 1s.

    Raises:
      ValueError: a bad ``shape`` or ``keep_prob``.
      TypeError: a non-float ``dtype`` or tensor ``keep_prob``.
    """
    keep_prob = check_keep_prob(keep_prob, allow_tensor=True)
    dtype = check_float_dtype(dtype)
    shape = _mask_shape(shape)
    with tf.name_scope(name, "bernoulli_mask", [shape]):
        # The raw op samples [0, 1) directly; tf.random_uniform would add a
        # full-size multiply and add for the range (masks can be large).
        seed1, seed2 = tf.get_seed(seed)
        uniform = gen_random_ops.random_uniform(
            tf.convert_to_tensor(shape, tf.int32 if isinstance(shape, list)
                                 else None), dtype,
            seed=seed1, seed2=seed2)
        # U ~ [0, 1): P(U < keep) = keep, and keep = 1 gives all ones.
        return tf.cast(uniform < tf.cast(keep_prob, dtype), dtype)


def scaled_mask(mask, keep_prob, dtype):
    """The inverted-dropout multiplier ``mask / keep_prob`` in ``dtype``.

    Args:
      mask: 0/1 tensor.
      keep_prob: Python float in ``(0, 1]`` or scalar float tensor
        (checked when the graph runs), the mask's keep probability.
      dtype: float dtype of the result.

    Returns:
      A ``dtype`` tensor of ``mask``'s shape: 0 or ``1 / keep_prob``.

    Raises:
      ValueError: a bad ``keep_prob``.
      TypeError: a non-float ``dtype`` or tensor ``keep_prob``.
    """
    keep_prob = check_keep_prob(keep_prob, allow_tensor=True)
    dtype = check_float_dtype(dtype)
    if isinstance(keep_prob, numbers.Real):
        scale = 1.0 / float(keep_prob)
    else:
        scale = 1.0 / tf.cast(keep_prob, dtype)
    return tf.cast(mask, dtype) * scale


def apply_mask(x, mask, keep_prob, name=None):
    """Inverted dropout with a given mask: ``x * mask / keep_prob``.

    Args:
      x: float tensor.
      mask: 0/1 tensor broadcastable to ``x``'s shape (cast to its dtype).
      keep_prob: Python float in ``(0, 1]`` or scalar float tensor
        (checked when the graph runs), the mask's keep probability.
      name: optional name scope.

    Returns:
      A tensor of the broadcast shape; its expectation over masks is ``x``.

    Raises:
      TypeError: ``x`` not a float tensor.
      ValueError: a bad ``keep_prob``, or static shapes of ``x`` and
        ``mask`` that do not broadcast.
    """
    with tf.name_scope(name, "apply_mask", [x, mask]):
        x = check_tensor(x, "x", kind="float")
        mask = check_tensor(mask, "mask")
        check_mask_broadcast(x, mask.get_shape(), "mask")
        # Scale the (often smaller, broadcast) mask rather than x.
        return x * scaled_mask(mask, keep_prob, x.dtype)


class BernoulliInitializer(object):
    """Variable initializer drawing a 0/1 mask with P(1) = ``keep_prob``.

    Args:
      keep_prob: Python float in ``(0, 1]``.
      seed: optional op seed.
    """

    def __init__(self, keep_prob, seed=None):
        self.keep_prob = check_keep_prob(keep_prob)
        self.seed = seed

    def __call__(self, shape, dtype=None, partition_info=None):
        del partition_info  # a mask is never partitioned
        return bernoulli_mask(shape, self.keep_prob,
                              dtype=tf.as_dtype(dtype or tf.float32),
                              seed=self.seed)

    def get_config(self):
        """The arguments, so the initializer can be rebuilt."""
        return {"keep_prob": self.keep_prob, "seed": self.seed}


# --------------------------------------------------------------------------
# Mask-variable dropout.
# --------------------------------------------------------------------------
def _ancestors_include(op, targets):
    """True when any op of ``targets`` is ``op`` or one of its ancestors
    (through data and control edges)."""
    targets = set(targets)
    seen, stack = set(), [op]
    while stack:
        current = stack.pop()
        if current in targets:
            return True
        if current in seen:
            continue
        seen.add(current)
        stack.extend(t.op for t in current.inputs)
        stack.extend(current.control_inputs)
    return False


class HeldMask(object):
    """A 0/1 dropout mask held in a variable, and the op that resamples it,
    ordered against the mask's reads.

    ``VariationalDropout`` and ``WeightDropLSTMCell(use_vd=True)`` hold
    their masks here. The variable starts from a sampled
    Bernoulli(``keep_prob``) mask, so the first step already drops; it is a
    per-process variable (``mask_placement``: ``LOCAL_VARIABLES``, never in a
    checkpoint, never on a ps).

    Reads: :meth:`read` reads the mask once per call site and run, outside
    any while loop or cond. Which mask a training step uses is defined in
    every documented pattern:

    - the update op in ``updates_collection`` (default
      ``tf.GraphKeys.UPDATE_OPS``), run through
      ``tf.control_dependencies`` around the optimizer (batch norm's
      convention), runs **after** every read of the mask: the step trains
      on the current mask and leaves a new one for the next step (as batch
      norm's moving averages are updated after the batch statistics);
    - a read built under ``tf.control_dependencies(update_ops())`` (the
      AWD-LSTM port's pattern) runs after the update: the step uses the
      fresh mask;
    - ``session.run(update_ops())`` on its own resamples the mask.

    The op that :meth:`update_ops` returns therefore changes when a read is
    built that is not already ordered after it (a new op with the reads as
    control inputs replaces the old one, in the collection too): fetch it
    after the model is built.

    In a single-process graph a read also initializes the mask when nothing
    did (``tf.global_variables_initializer()`` does not: masks are local
    variables), so the usual initializer pattern keeps working.

    Args:
      create_variable: callable ``(name, shape, dtype, initializer)``
        returning a non-trainable resource variable (resource reads are
        snapshots: a forward pass and its gradient see one mask).
      name: the variable's name.
      shape: fully defined shape, a list of ints.
      keep_prob: Python float in ``(0, 1]``.
      dtype: float dtype, or None for ``create_variable``'s default.
      seed: optional op seed; the initial value and the update derive
        distinct seeds from it.
      updates_collection: collection the update op joins, or None to keep
        it out of every collection (resample on your own schedule).

    Raises:
      ValueError: bad ``keep_prob``.
    """

    def __init__(self, create_variable, name, shape, keep_prob, dtype=None,
                 seed=None, updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS):
        self._keep_prob = check_keep_prob(keep_prob)
        self._name, self._shape, self._seed = name, list(shape), seed
        self._collection = updates_collection
        # control_dependencies(None) also leaves any while-loop / cond
        # context: the variable and its ops can be fetched on their own.
        with tf.control_dependencies(None), \
                mask_placement.mask_variable_scope():
            self.variable = create_variable(
                name, self._shape, dtype,
                BernoulliInitializer(self._keep_prob, derived_seed(seed, 0)))
        # (The op's name, read eagerly too.)
        self._scope = self.variable.name.split(":")[0] + "_"
        # A v1 graph's mask: its lazy initialization, update op and reads
        # (None for a mask made eagerly, e.g. by a build inside tf.function).
        self._graph_ops = None
        if run_mode() == "graph":
            self._graph_ops = self._make_graph_ops()

    @property
    def keep_prob(self):
        """The keep probability (Python float)."""
        return self._keep_prob

    def _make_graph_ops(self):
        """The mask's ``_GraphOps``; the update op joins the collection."""
        # Outside the mask scope, whose device hides a replica device
        # setter: a replicated graph's masks are initialized by its local
        # init op (Scaffold), never lazily.
        lazy_init = not mask_placement.is_replicated_here()
        with once_per_run(type(self).__name__):
            # One op for every read: which initial mask a first run sees
            # cannot depend on which read's assign ran first.
            ops = _GraphOps(self._initialized() if lazy_init else None,
                            self._resample([]))
        if self._collection is not None:
            # The variable's graph: the program's, also when this is made in
            # a control-flow-v2 loop body.
            self.variable.graph.add_to_collection(self._collection,
                                                  ops.update)
        return ops

    def update_ops(self):
        """The op(s) that resample the mask: a new list, one op.

        A mask made in graph mode: the op of its graph (see the class).
        Otherwise, inside a ``tf.function``, a new assign made now (the
        function runs it where it is made: after the reads made before it);
        eagerly, a callable that resamples the mask when called (``for
        update in held.update_ops(): update()``).
        """
        if self._graph_ops is not None:
            return [self._graph_ops.update]
        if run_mode() == "eager":
            return [lambda: self._resample([])]
        with once_per_run(type(self).__name__):
            return [self._resample([])]

    def _resample(self, after):
        """An assign of a new sample, run after the ops ``after``."""
        if tf.executing_eagerly():
            return self.variable.assign(self._sample(), read_value=False)
        # In the run's graph (out of a control-flow-v2 body), after nothing
        # but ``after``.
        with once_per_run(type(self).__name__), \
                tf.control_dependencies(None), \
                tf.device(self.variable.device), \
                tf.name_scope(self._scope + "update/"), \
                tf.control_dependencies(after):
            return self.variable.assign(self._sample(), read_value=False)

    def _sample(self):
        """A new Bernoulli(keep_prob) mask of the variable's shape."""
        return bernoulli_mask(self._shape, self._keep_prob,
                              self.variable.dtype.base_dtype,
                              derived_seed(self._seed, 1))

    def _initialized(self):
        """An op after which the variable holds a mask: assigns the
        initial sample when nothing initialized it yet."""
        variable = self.variable
        initial = BernoulliInitializer(self._keep_prob,
                                       derived_seed(self._seed, 0))
        with tf.name_scope(self._scope + "initialized/"):
            return tf.cond(
                tf.is_variable_initialized(variable), tf.no_op,
                lambda: variable.assign(initial(self._shape,
                                                variable.dtype.base_dtype),
                                        read_value=False))

    def read(self):
        """The mask for this run, read once outside any loop or cond.

        Eagerly and inside ``tf.function`` the variable's value now (the
        program's order orders it against the updates).

        Returns:
          A tensor of the mask's shape and dtype (0s and 1s).
        """
        ops = self._graph_ops
        if ops is None:
            with once_per_run(type(self).__name__):
                return self.variable.read_value()
        with once_per_run(type(self).__name__), \
                tf.name_scope(self._name + "_read"):
            deps = [] if ops.init is None else [ops.init]
            with tf.control_dependencies(deps):
                value = self.variable.read_value()
        if not _ancestors_include(value.op, [ops.raw_update, ops.update]):
            # Not ordered after the update: order the update after it.
            ops.reads.append(value.op)
            update = self._resample(ops.reads)
            if self._collection is not None:
                collection = self.variable.graph.get_collection_ref(
                    self._collection)
                if ops.update in collection:
                    collection[collection.index(ops.update)] = update
                else:
                    collection.append(update)
            ops.update = update
        return value


class _GraphOps(object):
    """A held mask's ops in one graph: ``init`` (None when replicated),
    ``raw_update`` (ordered after nothing), ``update`` (the op of now) and
    ``reads`` (the reads ``update`` is ordered after)."""

    def __init__(self, init, raw_update):
        self.init, self.raw_update, self.update = init, raw_update, raw_update
        self.reads = []


def train_op_with_updates(optimizer, loss, global_step=None, var_list=None,
                          updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS,
                          name=None, **minimize_kwargs):
    """``optimizer.minimize(loss, ...)`` that also runs the update ops: the
    held masks' resampling (``HeldMask``: ``use_vd=True`` cells and layers,
    ``VariationalDropout``), batch norm's moving averages, anything else in
    ``updates_collection``.

    A plain ``optimizer.minimize`` never runs them: a held mask then stays
    the first one for the whole training, with no sign. With this helper
    each step trains on the current masks and leaves new ones (the update
    ops are ordered after the masks' reads, see ``HeldMask``).

    Build it after the model: reads built later replace a held mask's
    update op in the collection, and the train op would run the old one.

    Args:
      optimizer: a ``tf.train.Optimizer`` (anything with ``minimize``).
      loss: the float loss tensor.
      global_step, var_list, name, **minimize_kwargs: as for
        ``optimizer.minimize``.
      updates_collection: the collection of update ops (default
        ``tf.GraphKeys.UPDATE_OPS``, where the masks' update ops are by
        default); None: no update ops (a plain ``minimize``).

    Returns:
      The train op; running it runs the collection's ops (as they are when
      this is called) too.

    Raises:
      TypeError: ``optimizer`` without a ``minimize`` method; ``loss`` not
        a float tensor.
    """
    if not callable(getattr(optimizer, "minimize", None)):
        raise TypeError("optimizer must be a tf.train.Optimizer (with a "
                        "minimize method), got %r" % (optimizer,))
    loss = check_tensor(loss, "loss", kind="float")
    updates = ([] if updates_collection is None
               else tf.get_collection(updates_collection))
    with tf.control_dependencies(updates):
        return optimizer.minimize(loss, global_step=global_step,
                                  var_list=var_list, name=name,
                                  **minimize_kwargs)


def make_mask_variable(create_variable, name, shape, keep_prob, dtype=None,
                       seed=None):
    """Deprecated: use :class:`HeldMask`. Creates a held mask and returns
    ``(variable, update_op)`` (the update op as it is now; it is replaced by
    an ordered one when a read is built without it, see HeldMask)."""
    held = HeldMask(create_variable, name, shape, keep_prob, dtype, seed)
    return held.variable, held.update_ops()[0]


