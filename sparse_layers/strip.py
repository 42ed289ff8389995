"""Conversion of sparse pairs to plain dense weights.

The same module as :mod:`tf1_awd_sparse.export.strip` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.export import strip as _module

sys.modules[__name__] = _module
