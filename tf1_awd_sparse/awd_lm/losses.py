"""AWD-LSTM's activation regularizers: AR and TAR.

AR penalizes large activations of the last layer's (dropped) output and TAR
penalizes fast changes of its raw output between consecutive time steps
(Merity et al. 2017, section 4.6).  Both are means over the valid
(batch, time, unit) entries, so their scale does not depend on sequence
length, batch size or width.
"""
from tf1_awd_sparse._compat import dimension_value, tf


def _step_mask(lengths, max_time, dtype):
    """[batch, time, 1] mask, 1 where step < length."""
    return tf.expand_dims(tf.sequence_mask(lengths, max_time, dtype=dtype), -1)


def _check_rank3(name, x):
    if x.shape.ndims is not None and x.shape.ndims != 3:
        raise ValueError("%s: expected a [batch, time, units] tensor, got "
                         "shape %s" % (name, x.shape))


def masked_mean_square(x, mask=None):
    """Mean of ``x**2`` over the entries where `mask` (broadcast to `x`) is 1.

    Args:
      x: float tensor.
      mask: None (all entries) or a 0/1 tensor of x's dtype broadcastable to
        x's shape.
    Returns:
      scalar tensor; 0 when no entry is selected.
    """
    if mask is None:
        return tf.reduce_mean(tf.square(x))
    mask = mask * tf.ones_like(x)
    return tf.reduce_sum(tf.square(x) * mask) / tf.maximum(
        tf.reduce_sum(mask), 1.0)


def activation_regularization(outputs, alpha=2.0, lengths=None, name=None):
    """AR: ``alpha * mean(h**2)`` of the last layer's dropped output.

    Args:
      outputs: float tensor [batch, time, units], the output after (locked)
        dropout.
      alpha: float, the weight.
      lengths: optional int tensor [batch]; steps at or past a sequence's
        length are excluded from the mean.
      name: optional op name scope.
    Returns:
      scalar tensor.
    Raises:
      ValueError: `outputs` is not rank 3.
    """
    _check_rank3("outputs", outputs)
    with tf.name_scope(name, "activation_regularization", [outputs]):
        mask = None
        if lengths is not None:
            mask = _step_mask(lengths, tf.shape(outputs)[1], outputs.dtype)
        return alpha * masked_mean_square(outputs, mask)


def temporal_activation_regularization(outputs, beta=1.0, lengths=None,
                                       name=None):
    """TAR: ``beta * mean((h[t+1] - h[t])**2)`` of the last layer's raw output.

    Args:
      outputs: float tensor [batch, time, units], the output before dropout.
      beta: float, the weight.
      lengths: optional int tensor [batch]; a difference counts only when
        both of its steps are inside the sequence (t + 1 < length).
      name: optional op name scope.
    Returns:
      scalar tensor (0 for sequences of one step).
    Raises:
      ValueError: `outputs` is not rank 3.
    """
    _check_rank3("outputs", outputs)
    with tf.name_scope(name, "temporal_activation_regularization", [outputs]):
        diff = outputs[:, 1:] - outputs[:, :-1]
        mask = None
        if lengths is not None:
            mask = _step_mask(lengths - 1, tf.shape(diff)[1], outputs.dtype)
        elif (dimension_value(outputs.shape[1]) or 0) < 2:
            # Unknown or single step: an all-ones mask keeps 0 steps safe.
            mask = tf.ones_like(diff[:, :, :1])
        return beta * masked_mean_square(diff, mask)
