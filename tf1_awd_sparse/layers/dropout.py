"""Dropout layers whose mask is held: in a variable, over time, or per word.

- :class:`VariationalDropout` - the mask lives in a non-trainable variable and
  changes only when its update op (also in ``tf.GraphKeys.UPDATE_OPS``) runs.
- :func:`locked_dropout` - stateless; one mask per example, the same at every
  time step (AWD-LSTM's "LockedDropout").
- :func:`embedding_dropout` - drops whole words: one Bernoulli mask over the
  vocabulary per ``session.run``.

The mask math and :class:`HeldMask` are one floor down, in
:mod:`tf1_awd_sparse.transforms.held_mask`. Floor 3 (cells and layers).
"""
from __future__ import absolute_import, division, print_function

from tf1_awd_sparse.base.compat import PartitionedVariable, tf
from tf1_awd_sparse.base.checks import (
    check_float_dtype, check_ids, check_keep_prob, check_shape, check_tensor,
    check_training)
from tf1_awd_sparse.base.scalar_checks import check_choice, check_int
from tf1_awd_sparse.base.control_flow import smart_cond
from tf1_awd_sparse.transforms.held_mask import (
    HeldMask, apply_mask, bernoulli_mask, check_mask_broadcast)

__all__ = ["VariationalDropout", "locked_dropout", "embedding_dropout"]

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
        check_mask_broadcast(x, self._shape, "the mask (input_shape)")
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
    are clamped into range: see ``tf1_awd_sparse.base.checks.check_ids``).

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

