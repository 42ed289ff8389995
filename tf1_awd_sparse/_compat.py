"""Deprecated name of the version compatibility module.

The same module as :mod:`tf1_awd_sparse.base.compat` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.base import compat as _module

sys.modules[__name__] = _module
