"""Dropout whose mask is held fixed: in a variable, over time, or per word.

This module is also the one place where the dropout math of the library is
written: :func:`bernoulli_mask` draws a keep-mask, :func:`scaled_mask` turns
it into the inverted-dropout multiplier and :func:`apply_mask` applies it
(``x * mask / keep_prob``);
``weight_drop_lstm`` uses the same two functions for DropConnect.

Public API (TensorFlow 1.13 graph mode):

- :class:`VariationalDropout` - the mask lives in a non-trainable variable and
  changes only when its update op (also in ``tf.GraphKeys.UPDATE_OPS``) runs.
- :func:`locked_dropout` - stateless; one mask per example, the same at every
  time step (AWD-LSTM's "LockedDropout").
- :func:`embedding_dropout` - drops whole words: one Bernoulli mask over the
  vocabulary per ``session.run``.
- :func:`train_op_with_updates` - ``optimizer.minimize`` that also runs
  ``tf.GraphKeys.UPDATE_OPS``, where held masks are resampled.
"""
from __future__ import absolute_import, division, print_function

import numbers

from tf1_awd_sparse import _compat
from tf1_awd_sparse._compat import PartitionedVariable, TENSOR_TYPES, tf
from tensorflow.python.ops import gen_random_ops

from tf1_awd_sparse import mask_placement
# The library's one copy of the checks; re-exported here (public names).
from tf1_awd_sparse._checks import (  # noqa: F401
    check_choice, check_float_dtype, check_ids, check_int, check_keep_prob,
    check_shape, check_tensor, check_training, derived_seed, once_per_run,
    smart_cond)

__all__ = [
    "VariationalDropout", "locked_dropout", "embedding_dropout",
    "bernoulli_mask", "scaled_mask", "apply_mask", "check_keep_prob",
    "check_training", "smart_cond", "derived_seed", "BernoulliInitializer",
    "HeldMask", "make_mask_variable", "train_op_with_updates",
]


# --------------------------------------------------------------------------
# The dropout math (the only copy in the library).
# --------------------------------------------------------------------------
# Keep probabilities: a Python number is checked when the graph is built; a
# tensor (any function of this module that documents "or a scalar float
# tensor") is checked when it runs, by assertions that raise
# InvalidArgumentError naming the argument for a value outside (0, 1] or
# NaN (see tf1_awd_sparse._checks.check_keep_prob). Without them 0 and NaN
# gave NaN outputs and 1.5 scaled without dropping.


def _mask_shape(shape):
    """A mask shape: a list of ints >= 0, or a 1-D int tensor."""
    if isinstance(shape, TENSOR_TYPES):
        return check_tensor(shape, "shape", kind="int", rank=1)
    return check_shape(shape).as_list()


def _check_broadcast(x, mask_shape, mask_name):
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
    _compat.require_graph_mode(name or "bernoulli_mask")
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
        _check_broadcast(x, mask.get_shape(), "mask")
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
        _compat.require_graph_mode(type(self).__name__)
        self._keep_prob = check_keep_prob(keep_prob)
        self._name, self._shape, self._seed = name, list(shape), seed
        self._collection = updates_collection
        # Outside the mask scope, whose device hides a replica device
        # setter: a replicated graph's masks are initialized by its local
        # init op (Scaffold), never lazily.
        lazy_init = not mask_placement.is_replicated_here()
        # control_dependencies(None) also leaves any while-loop / cond
        # context: the variable and its ops can be fetched on their own.
        with tf.control_dependencies(None), \
                mask_placement.mask_variable_scope():
            self.variable = create_variable(
                name, self._shape, dtype,
                BernoulliInitializer(self._keep_prob, derived_seed(seed, 0)))
            self._scope = self.variable.op.name + "_"
            # One op for every read: which initial mask a first run sees
            # cannot depend on which read's assign ran first.
            self._init = self._initialized() if lazy_init else None
            self._raw_update = self._resample([])
        self._update = self._raw_update
        self._independent_reads = []
        if updates_collection is not None:
            tf.add_to_collection(updates_collection, self._update)

    @property
    def keep_prob(self):
        """The keep probability (Python float)."""
        return self._keep_prob

    def update_ops(self):
        """The op(s) that resample the mask: a new list, one op."""
        return [self._update]

    def _resample(self, after):
        """An assign of a new sample, run after the ops ``after``."""
        with tf.control_dependencies(None), \
                tf.device(self.variable.device), \
                tf.name_scope(self._scope + "update/"), \
                tf.control_dependencies(after):
            sample = bernoulli_mask(self._shape, self._keep_prob,
                                    self.variable.dtype.base_dtype,
                                    derived_seed(self._seed, 1))
            return self.variable.assign(sample, read_value=False)

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

        Returns:
          A tensor of the mask's shape and dtype (0s and 1s).
        """
        with once_per_run(type(self).__name__), \
                tf.name_scope(self._name + "_read"):
            deps = [] if self._init is None else [self._init]
            with tf.control_dependencies(deps):
                value = self.variable.read_value()
        updates = [self._raw_update, self._update]
        if not _ancestors_include(value.op, updates):
            # Not ordered after the update: order the update after it.
            self._independent_reads.append(value.op)
            update = self._resample(self._independent_reads)
            if self._collection is not None:
                ops = tf.get_collection_ref(self._collection)
                if self._update in ops:
                    ops[ops.index(self._update)] = update
                else:
                    ops.append(update)
            self._update = update
        return value


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


class VariationalDropout(object):
    """Dropout whose mask is a non-trainable variable, resampled on demand
    (Gal & Ghahramani's fixed-mask dropout, as AWD-LSTM uses it; unrelated
    to the sparse variational dropout of ``sparse_layers``).

    The mask is created at construction, under its own unique variable scope
    (``name`` or ``variational_dropout``, uniquified), as a
    :class:`HeldMask`: sampled Bernoulli(``keep_prob``) from the start, so
    the very first step already drops, and changed only when the op of
    :meth:`get_update_mask_op` runs. That op is in ``updates_collection``
    (``tf.GraphKeys.UPDATE_OPS``) and ordered after every read of the mask
    built without it (see :class:`HeldMask` for the patterns).

    Args:
      input_shape: fully defined shape of the mask (list, tuple or
        ``tf.TensorShape``); it broadcasts against the inputs, e.g. ``[D]``
        shares one mask over batch and time, ``[B, 1, D]`` one per example.
      keep_prob: Python float in ``(0, 1]``.
      dtype: float dtype of the mask (default float32); inputs of another
        float dtype are handled by casting the mask.
      seed: optional op seed (the initializer and the update op derive
        distinct seeds from it).
      name: optional variable-scope name.
      updates_collection: collection of the update op (default
        ``tf.GraphKeys.UPDATE_OPS``); None keeps it out of every collection.

    Raises:
      ValueError: ``keep_prob`` outside ``(0, 1]`` or a shape that is not
        fully defined.

    Example::

        vd = VariationalDropout(input_shape=[5], keep_prob=0.5)
        y = vd(x)                                 # x: [batch, 5]
        sess.run(vd.get_update_mask_op())         # new mask
    """

    def __init__(self, input_shape, keep_prob, dtype=None, seed=None,
                 name=None, updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS):
        self._keep_prob = check_keep_prob(keep_prob, "keep_prob")
        self._shape = shape = check_shape(input_shape, "input_shape")
        self._dtype = check_float_dtype(dtype or tf.float32)
        self._seed = seed
        with tf.variable_scope(None, default_name=name
                               or "variational_dropout") as scope:
            self._scope_name = scope.name
            self._held = HeldMask(
                lambda var_name, var_shape, var_dtype, init: tf.get_variable(
                    var_name, shape=var_shape, dtype=var_dtype,
                    initializer=init, trainable=False, use_resource=True),
                "mask", shape.as_list(), self._keep_prob, self._dtype, seed,
                updates_collection=updates_collection)

    @property
    def mask(self):
        """The non-trainable mask variable (0/1 entries, ``input_shape``)."""
        return self._held.variable

    @property
    def keep_prob(self):
        """The keep probability (Python float)."""
        return self._keep_prob

    def get_update_mask_op(self):
        """The op that resamples the mask, in a new list.

        Fetch it after the calls that read the mask are built: it is then
        ordered after them (see :class:`HeldMask`).
        """
        return self._held.update_ops()

    def __call__(self, x, training=None):
        """Applies the held mask: ``x * mask / keep_prob`` (broadcasting).

        Args:
          x: float tensor broadcast-compatible with ``input_shape``.
          training: None/True applies dropout, False returns ``x``; a scalar
            bool tensor chooses at run time.

        Returns:
          A tensor like ``x`` (broadcast shape).

        Raises:
          ValueError: bad ``training``, or shapes that cannot broadcast.
          TypeError: ``x`` not a float tensor.
        """
        training = check_training(training)
        x = check_tensor(x, "x", kind="float")
        _check_broadcast(x, self._shape, "the mask (input_shape)")
        with tf.name_scope(None, "variational_dropout", [x]):
            if training is False:
                return tf.identity(x)
            # Read outside the cond: the read is what the update op is
            # ordered against, in training and evaluation alike.
            mask = self._held.read()
            return smart_cond(training,
                              lambda: apply_mask(x, mask, self._keep_prob),
                              lambda: tf.identity(x))


# --------------------------------------------------------------------------
# Stateless sequence / embedding dropout.
# --------------------------------------------------------------------------
def locked_dropout(x, keep_prob, training=True, time_axis=1, seed=None,
                   name=None):
    """Variational ("locked") dropout over whole sequences.

    One Bernoulli mask per example and feature, the same at every time step
    (a mask of ``x``'s shape with 1 on ``time_axis``), drawn anew each
    ``session.run``; kept entries are scaled by ``1 / keep_prob``.

    Args:
      x: float tensor of known rank >= 2, e.g. ``[batch, time, depth]``.
      keep_prob: Python float in ``(0, 1]`` or a scalar float tensor,
        checked when the graph runs (``InvalidArgumentError`` naming
        ``keep_prob`` for a value outside ``(0, 1]`` or NaN).
      training: Python bool or scalar bool tensor; False returns ``x``.
      time_axis: int, the axis the mask is shared along (negative allowed).
      seed: optional op seed.
      name: optional name scope.

    Returns:
      A tensor of ``x``'s shape and dtype.

    Raises:
      ValueError: bad ``keep_prob``/``training``/``time_axis``, unknown
        rank or rank < 2, or ``time_axis`` out of range.
      TypeError: ``x`` or a tensor ``keep_prob`` not of a float dtype.
    """
    training = check_training(training)
    keep_prob = check_keep_prob(keep_prob, allow_tensor=True)
    time_axis = check_int(time_axis, "time_axis")
    with tf.name_scope(name, "locked_dropout", [x]):
        x = check_tensor(x, "x", kind="float", min_rank=2)
        rank = x.get_shape().ndims
        if not -rank <= time_axis < rank:
            raise ValueError("time_axis must be in [%d, %d) for rank %d, "
                             "got %d" % (-rank, rank, rank, time_axis))
        axis = time_axis % rank

        def dropped():
            dims = tf.unstack(tf.shape(x), num=rank)
            dims[axis] = tf.constant(1, dtype=dims[0].dtype)
            mask = bernoulli_mask(tf.stack(dims), keep_prob, x.dtype, seed)
            return apply_mask(x, mask, keep_prob)

        return smart_cond(training, dropped, lambda: tf.identity(x))


def embedding_dropout(params, ids, keep_prob, training=True, seed=None,
                      partition_strategy="mod", name=None):
    """AWD-LSTM embedding dropout: looks up ``ids`` with whole words dropped.

    One Bernoulli(``keep_prob``) mask over the vocabulary is drawn per
    ``session.run``; every occurrence of a dropped word gets an all-zero
    vector, kept words are scaled by ``1 / keep_prob``. Only the mask (one
    number per word) and the looked-up rows are touched: cost is
    O(vocabulary + ids * depth), never vocabulary x depth.

    Ids outside ``[0, vocab)`` (vocab: the rows of all shards) raise
    ``InvalidArgumentError`` naming ``ids`` when the graph runs, in training
    and evaluation alike (inside XLA, which drops run-time assertions, they
    are clamped into range: see ``tf1_awd_sparse._checks.check_ids``).

    Args:
      params: the embedding matrix ``[vocab, depth]`` (float tensor or
        variable), or a list / ``PartitionedVariable`` of shards as for
        ``tf.nn.embedding_lookup``.
      ids: int32/int64 tensor of word ids, any shape.
      keep_prob: Python float in ``(0, 1]`` or a scalar float tensor,
        checked when the graph runs (``InvalidArgumentError`` naming
        ``keep_prob`` for a value outside ``(0, 1]`` or NaN).
      training: Python bool or scalar bool tensor; False is a plain lookup.
      seed: optional op seed.
      partition_strategy: as for ``tf.nn.embedding_lookup`` with shards.
      name: optional name scope.

    Returns:
      A tensor ``ids.shape + [depth]`` of ``params``' dtype.

    Raises:
      ValueError: bad ``keep_prob``/``training``/``partition_strategy``, or
        ``params`` (a shard) of rank < 2.
      TypeError: ids not int32 / int64, ``params`` or a tensor
        ``keep_prob`` not of a float dtype.
    """
    training = check_training(training)
    keep_prob = check_keep_prob(keep_prob, allow_tensor=True)
    check_choice(partition_strategy, ("mod", "div"), "partition_strategy")
    shards = (list(params) if isinstance(params, (list, tuple,
                                                  PartitionedVariable))
              else [params])
    if not shards:
        raise ValueError("params must be a tensor or a non-empty list of "
                         "shards, got %r" % (params,))
    with tf.name_scope(name, "embedding_dropout", [ids]):
        for shard in shards:
            check_tensor(shard, "params", kind="float", min_rank=2)
        vocab = tf.add_n([tf.shape(s)[0] for s in shards])
        ids = check_ids(ids, vocab)
        rows = tf.nn.embedding_lookup(
            shards if len(shards) > 1 else shards[0], ids,
            partition_strategy=partition_strategy)

        def dropped():
            word_mask = bernoulli_mask(tf.reshape(vocab, [1]), keep_prob,
                                       rows.dtype, seed)
            # One mask entry per looked-up id, broadcast over the depth.
            return apply_mask(rows, tf.gather(word_mask, ids)[..., None],
                              keep_prob)

        return smart_cond(training, dropped, lambda: tf.identity(rows))
