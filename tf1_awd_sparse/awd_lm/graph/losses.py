"""AWD-LSTM's activation regularizers: AR and TAR.

AR penalizes large activations of the last layer's (dropped) output and TAR
penalizes fast changes of its raw output between consecutive time steps
(Merity et al. 2017, section 4.6).  Both are means over the valid
(batch, time, unit) entries, so their scale does not depend on sequence
length, batch size or width.  A penalty over no entry at all (zero steps,
a zero-size batch, all lengths 0, or TAR over one step) is 0, never the
NaN of an empty mean: there is no activation to penalize.
"""
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.base import control_flow
from tf1_awd_sparse.base.checks import check_tensor
from tf1_awd_sparse.base.control_flow import with_assertions

__all__ = ["masked_mean_square", "activation_regularization",
           "temporal_activation_regularization"]


def _step_mask(lengths, max_time, dtype):
    """[batch, time, 1] mask, 1 where step < length."""
    return tf.expand_dims(tf.sequence_mask(lengths, max_time, dtype=dtype), -1)


def _check_rank3(name, x):
    if x.shape.ndims is not None and x.shape.ndims != 3:
        raise ValueError("%s: expected a [batch, time, units] tensor, got "
                         "shape %s" % (name, x.shape))


def _check_lengths(lengths, outputs):
    """``lengths`` as an int tensor of shape [batch of outputs]: a static
    mismatch raises here, an unknown one is asserted when the graph runs
    (InvalidArgumentError naming both; dropped inside XLA)."""
    lengths = check_tensor(lengths, "lengths", kind="int", rank=1)
    rows = lengths.shape.as_list()[:1]
    batch = dimension_value(outputs.shape[0])
    if rows and rows[0] is not None and batch is not None and rows[0] != batch:
        raise ValueError("lengths must have shape [%d] (the batch of outputs, "
                         "shape %s), got shape %s"
                         % (batch, outputs.shape, lengths.shape))
    if (rows and rows[0] is not None and batch is not None) or \
            control_flow.in_xla_context():
        return lengths
    return with_assertions(lengths, [tf.debugging.assert_equal(
        tf.shape(lengths)[:1], tf.shape(outputs)[:1],
        message="lengths must have one entry per row of outputs (its "
                "batch); shapes of lengths and outputs")], "lengths")


def masked_mean_square(x, mask=None):
    """Mean of ``x**2`` over the entries where `mask` (broadcast to `x`) is 1.

    Args:
      x: float tensor.
      mask: None (all entries) or a 0/1 tensor of x's dtype broadcastable to
        x's shape.
    Returns:
      scalar tensor; 0 when no entry is selected (or ``x`` is empty).
    """
    if mask is None:
        mean = tf.reduce_mean(tf.square(x))
        size = x.shape.num_elements()
        if size is not None and size > 0:
            return mean
        # reduce_mean of an empty tensor is NaN: 0 over 0 entries is 0
        # (the same mean otherwise, to the bit).
        return tf.where(tf.size(x) > 0, mean, tf.zeros([], x.dtype))
    mask = mask * tf.ones_like(x)
    return tf.reduce_sum(tf.square(x) * mask) / tf.maximum(
        tf.reduce_sum(mask), 1.0)


def activation_regularization(outputs, alpha=2.0, lengths=None, name=None,
                              nonempty=False):
    """AR: ``alpha * mean(h**2)`` of the last layer's dropped output.

    Args:
      outputs: float tensor [batch, time, units], the output after (locked)
        dropout.
      alpha: float, the weight.
      lengths: optional int tensor [batch]; steps at or past a sequence's
        length are excluded from the mean; one entry per row of outputs.
      name: optional op name scope.
      nonempty: True for a caller that has asserted at least one entry (as
        `model.build_lm` does): without ``lengths``, the plain mean of an
        unknown shape, without the guard for 0 entries (the guard, a
        select, changes the last bits of the gradients).
    Returns:
      scalar tensor; 0 when there is no entry (zero steps or rows).
    Raises:
      ValueError: `outputs` is not rank 3, or `lengths` has another batch
        than `outputs` (an unknown batch is asserted when the graph runs:
        InvalidArgumentError naming lengths).
    """
    _check_rank3("outputs", outputs)
    with tf.name_scope(name, "activation_regularization", [outputs]):
        mask = None
        if lengths is not None:
            lengths = _check_lengths(lengths, outputs)
            mask = _step_mask(lengths, tf.shape(outputs)[1], outputs.dtype)
        elif nonempty:
            return alpha * tf.reduce_mean(tf.square(outputs))
        return alpha * masked_mean_square(outputs, mask)


def temporal_activation_regularization(outputs, beta=1.0, lengths=None,
                                       name=None):
    """TAR: ``beta * mean((h[t+1] - h[t])**2)`` of the last layer's raw output.

    Args:
      outputs: float tensor [batch, time, units], the output before dropout.
      beta: float, the weight.
      lengths: optional int tensor [batch]; a difference counts only when
        both of its steps are inside the sequence (t + 1 < length); one
        entry per row of outputs.
      name: optional op name scope.
    Returns:
      scalar tensor (0 for sequences of one step, zero steps or rows).
    Raises:
      ValueError: `outputs` is not rank 3, or `lengths` has another batch
        than `outputs` (an unknown batch is asserted when the graph runs).
    """
    _check_rank3("outputs", outputs)
    with tf.name_scope(name, "temporal_activation_regularization", [outputs]):
        diff = outputs[:, 1:] - outputs[:, :-1]
        mask = None
        if lengths is not None:
            lengths = _check_lengths(lengths, outputs)
            mask = _step_mask(lengths - 1, tf.shape(diff)[1], outputs.dtype)
        elif (dimension_value(outputs.shape[1]) or 0) < 2:
            # Unknown or single step: an all-ones mask keeps 0 steps safe.
            mask = tf.ones_like(diff[:, :, :1])
        return beta * masked_mean_square(diff, mask)
