"""Stateless train / eval ops.

The same module as :mod:`tf1_awd_sparse.ops.sparse.l0_regularization` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.ops.sparse import l0_regularization as _module

sys.modules[__name__] = _module
