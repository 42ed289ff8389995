"""Where mask and range variables live (per process, never on a ps, never
in a checkpoint).

The same module as :mod:`tf1_awd_sparse.ops.mask_placement` (this name stays
importable; the code lives on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.ops import mask_placement as _module

sys.modules[__name__] = _module
