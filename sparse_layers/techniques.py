"""The technique registry and the sparse pairs of a graph.

The same module as :mod:`tf1_awd_sparse.transforms.techniques` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.transforms import techniques as _module

sys.modules[__name__] = _module
