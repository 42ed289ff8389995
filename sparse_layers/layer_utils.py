"""Input checks and helpers of the sparse ops.

The same module as :mod:`tf1_awd_sparse.ops.sparse.layer_utils` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.ops.sparse import layer_utils as _module

sys.modules[__name__] = _module
