"""The sparse techniques' shared math and constants, for TF and numpy.

The public name of
:mod:`tf1_awd_sparse.ops.sparse.common`
(the same module object; the table of names is
:mod:`tf1_awd_sparse.base.names`)."""
from tf1_awd_sparse.base import names as _names

_names.public_module(__name__)
