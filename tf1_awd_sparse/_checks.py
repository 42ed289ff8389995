"""Deprecated name of the public argument checks and their errors.

The same module as :mod:`tf1_awd_sparse.base.checks` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.base import checks as _module

sys.modules[__name__] = _module
