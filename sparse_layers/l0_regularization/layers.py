"""Layers.

The public name of
:mod:`tf1_awd_sparse.layers.sparse.l0_regularization.layers`
(the same module object; the table of names is
:mod:`tf1_awd_sparse.base.names`)."""
from tf1_awd_sparse.base import names as _names

_names.public_module(__name__)
