"""Layers.

The same module as :mod:`tf1_awd_sparse.layers.sparse.l0_regularization.layers` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.layers.sparse.l0_regularization import layers as _module

sys.modules[__name__] = _module
