"""Input checks and helpers of the sparse ops.

The public name of
:mod:`tf1_awd_sparse.ops.sparse.layer_utils`
(the same module object; the table of names is
:mod:`tf1_awd_sparse.base.names`)."""
from tf1_awd_sparse.base import names as _names

_names.public_module(__name__)
