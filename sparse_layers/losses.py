"""The sparse techniques' training penalties.

The same module as :mod:`tf1_awd_sparse.layers.sparse.losses` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.layers.sparse import losses as _module

sys.modules[__name__] = _module
