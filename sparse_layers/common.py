"""The sparse techniques' shared math and constants, for TF and numpy.

The same module as :mod:`tf1_awd_sparse.ops.sparse.common` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.ops.sparse import common as _module

sys.modules[__name__] = _module
