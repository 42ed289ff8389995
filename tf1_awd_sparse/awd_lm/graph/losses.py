"""The LM's losses: the targets' cross-entropy and AWD-LSTM's activation
regularizers, AR and TAR.

`sparse_cross_entropy` is the per-token cross-entropy of integer targets;
on TensorFlow 2.x it is computed in fewer passes over the ``[tokens,
vocab]`` logits than the fused kernel makes (issue 57: that kernel took
29 % of the LM's training step), with the same value.

AR penalizes large activations of the last layer's (dropped) output and TAR
penalizes fast changes of its raw output between consecutive time steps
(Merity et al. 2017, section 4.6).  Both are means over the valid
(batch, time, unit) entries, so their scale does not depend on sequence
length, batch size or width.  A penalty over no entry at all (zero steps,
a zero-size batch, all lengths 0, or TAR over one step) is 0, never the
NaN of an empty mean: there is no activation to penalize.
"""
import contextlib

from tensorflow.core.framework import attr_value_pb2

from tf1_awd_sparse.base.compat import IS_TF2, dimension_value, tf

from tf1_awd_sparse.base import control_flow
from tf1_awd_sparse.base.checks import check_tensor
from tf1_awd_sparse.base.control_flow import with_assertions

__all__ = ["sparse_cross_entropy", "masked_mean_square",
           "activation_regularization", "temporal_activation_regularization"]


#: How `sparse_cross_entropy` computes (issue 57; docs/versions.md has
#: the LM's training step with each, one thread):
#:
#: - ``"fused"``: TensorFlow's fused kernel; 1.x's default (1.13 has no
#:   ``tensor_scatter_nd_sub``, and 1.x's tables stay as they were).
#: - ``"softmax"``: ``tf.nn.softmax`` forward (oneDNN's one-pass kernel on
#:   2.x's x86 wheels), its output kept for the gradient; 2.x's default.
#: - ``"xla"``: ``exp(logits - max)`` and the gradient's passes compiled by
#:   XLA (``jit_scope``). No faster than "softmax" on 2.21, slower on
#:   2.15, whose first compile also writes log lines no log level hides
#:   (absl's banner, "Compiled cluster using XLA!", an ERROR "SetPriority
#:   unimplemented") into the output of every program that trains.
#:
#: Set it before building a graph to take another form.
XENT_FORM = "softmax" if IS_TF2 else "fused"
#: The forms `XENT_FORM` takes.
XENT_FORMS = ("fused", "softmax", "xla")


def sparse_cross_entropy(logits, labels, name=None):
    """Per-row cross-entropy of integer targets: ``logsumexp(logits[i]) -
    logits[i, labels[i]]``, the value of
    ``tf.nn.sparse_softmax_cross_entropy_with_logits``.

    On TensorFlow 2.x (`XENT_FORM` "softmax" or "xla") the forward pass
    keeps the softmax (or ``exp(logits - max)``) and the gradient reuses
    it: ``(softmax - onehot) * upstream`` in one multiply and one scatter
    of ``-upstream`` into the targets' entries, where the fused kernel and
    the plain autodiff of ``reduce_logsumexp`` each recompute the
    exponentials.

    Args:
      logits: float tensor [n, vocab].
      labels: int tensor [n], each in [0, vocab).
      name: optional op name scope.
    Returns:
      float tensor [n] (nats), differentiable in `logits`.
    Raises:
      ValueError: `XENT_FORM` is none of `XENT_FORMS`.
      InvalidArgumentError (when run): a label outside [0, vocab).
    """
    if XENT_FORM not in XENT_FORMS:
        raise ValueError("losses.XENT_FORM must be one of %s, got %r"
                         % (", ".join(XENT_FORMS), XENT_FORM))
    with tf.name_scope(name, "sparse_cross_entropy", [logits, labels]):
        if XENT_FORM == "fused":
            return tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits)
        return _few_pass_xent(logits, labels, XENT_FORM == "xla")


#: The gradient registered for the ``IdentityN`` that carries the
#: few-pass form's value and saved tensors: by name, so a graph imported
#: from a MetaGraph (in a new process, once this module is imported) is
#: differentiated the same way.
_GRADIENT_OP_TYPE = "TfAwdSparseCrossEntropy"
#: The IdentityN's attr: whether its gradient is compiled by XLA too.
_XLA_ATTR = "_sparse_cross_entropy_xla"
# The IdentityN's inputs (and outputs).
_VALUE, _EXP, _TOTAL, _TARGET, _LOGITS, _INDEX = range(6)


def _xla_scope(on):
    """XLA for the cross-entropy's element-wise passes when ``on``."""
    if on:
        return tf.xla.experimental.jit_scope()
    return contextlib.ExitStack()


def _few_pass_xent(logits, labels, xla):
    """`sparse_cross_entropy`'s few-pass forms (``xla``: the "xla" form,
    else "softmax"): the rows' values, whose gradient is
    `_few_pass_xent_grad`."""
    logits = tf.convert_to_tensor(logits)
    labels = tf.convert_to_tensor(labels)
    rows = tf.range(tf.shape(labels, out_type=labels.dtype)[0])
    index = tf.stack([rows, labels], 1)
    # Outside XLA, which would clamp a label outside the vocabulary to the
    # last column: TensorFlow's kernel raises. The gradient waits for it,
    # so no update is made from a bad label either.
    target = tf.gather_nd(logits, index)
    if xla:
        with _xla_scope(True):
            top = tf.stop_gradient(tf.reduce_max(logits, 1))
            exp = tf.exp(logits - tf.expand_dims(top, 1))
            total = tf.reduce_sum(exp, 1, keepdims=True)
            value = top + tf.squeeze(tf.log(total), 1) - target
    else:
        # softmax = exp(x - max) / total, whose largest entry is exactly
        # 1 / total up to rounding (never below 1 / vocab, so its log is
        # finite where the target's probability may underflow to 0).
        exp = tf.nn.softmax(logits)
        top = tf.stop_gradient(tf.reduce_max(logits, 1))
        total = tf.ones([1, 1], exp.dtype)
        value = (top - target) - tf.log(tf.reduce_max(exp, 1))
    with tf.get_default_graph().gradient_override_map(
            {"IdentityN": _GRADIENT_OP_TYPE}):
        carried = tf.identity_n([value, exp, total, target, logits, index])
    # pylint: disable=protected-access
    carried[0].op._set_attr(_XLA_ATTR, attr_value_pb2.AttrValue(b=xla))
    # pylint: enable=protected-access
    return carried[_VALUE]


@tf.RegisterGradient(_GRADIENT_OP_TYPE)
def _few_pass_xent_grad(op, *grads):
    """Gradient of the IdentityN of `_few_pass_xent`: ``(softmax - onehot)
    * upstream`` for the logits from the saved ``exp`` and ``total``, None
    for the carried tensors (autodiff never enters the forward)."""
    upstream = grads[_VALUE]
    inputs = list(op.inputs)
    exp, total, target, index = (inputs[i] for i in
                                 (_EXP, _TOTAL, _TARGET, _INDEX))
    result = [None] * len(inputs)
    if upstream is None:
        return result
    with tf.control_dependencies([target]), \
            _xla_scope(op.get_attr(_XLA_ATTR)):
        scale = tf.expand_dims(upstream, 1) / total
        result[_LOGITS] = tf.tensor_scatter_nd_sub(exp * scale, index,
                                                   upstream)
    return result


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
