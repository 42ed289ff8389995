"""Sparsity reports of a graph or a checkpoint.

The same module as :mod:`tf1_awd_sparse.layers.sparse.report` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.layers.sparse import report as _module

sys.modules[__name__] = _module
