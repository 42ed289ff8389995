"""Dropout whose mask is held fixed: in a variable, over time, or per word.

This name gathers two floors' public API (see docs/architecture.md): the
dropout math and :class:`HeldMask` from
:mod:`tf1_awd_sparse.transforms.held_mask`, and the layers from
:mod:`tf1_awd_sparse.layers.dropout`:

- :class:`VariationalDropout` - the mask lives in a non-trainable variable and
  changes only when its update op (also in ``tf.GraphKeys.UPDATE_OPS``) runs.
- :func:`locked_dropout` - stateless; one mask per example, the same at every
  time step (AWD-LSTM's "LockedDropout").
- :func:`embedding_dropout` - drops whole words: one Bernoulli mask over the
  vocabulary per ``session.run``.
- :func:`train_op_with_updates` - ``optimizer.minimize`` that also runs
  ``tf.GraphKeys.UPDATE_OPS``, where held masks are resampled.
- :func:`bernoulli_mask`, :func:`scaled_mask`, :func:`apply_mask`,
  :class:`HeldMask`, :class:`BernoulliInitializer`.
"""
from tf1_awd_sparse.base.checks import (  # noqa: F401
    check_keep_prob, check_training)
from tf1_awd_sparse.base.control_flow import smart_cond  # noqa: F401
from tf1_awd_sparse.base.seeds import derived_seed  # noqa: F401
from tf1_awd_sparse.layers.dropout import (  # noqa: F401
    VariationalDropout, embedding_dropout, locked_dropout)
from tf1_awd_sparse.transforms.held_mask import (  # noqa: F401
    BernoulliInitializer, HeldMask, apply_mask, bernoulli_mask,
    make_mask_variable, scaled_mask, train_op_with_updates)

# The table of this name (docs/api.md). The checks, ``smart_cond``,
# ``derived_seed`` and the deprecated ``make_mask_variable`` still import
# from here, but are not in it (the checks, ``smart_cond`` and
# ``derived_seed`` belong to tf1_awd_sparse.base).
__all__ = [
    "VariationalDropout", "locked_dropout", "embedding_dropout",
    "train_op_with_updates", "bernoulli_mask", "scaled_mask", "apply_mask",
    "HeldMask", "BernoulliInitializer",
]
