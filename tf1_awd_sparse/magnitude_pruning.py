"""Gradual magnitude pruning (Zhu & Gupta).

The same module as :mod:`tf1_awd_sparse.transforms.magnitude_pruning` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.transforms import magnitude_pruning as _module

sys.modules[__name__] = _module
