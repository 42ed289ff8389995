"""The same module as :mod:`tf1_awd_sparse.ops.quantized_lstm` (moved there, below the
cells, so that the cell does not import the exporter's package); this name
stays importable."""
import sys

from tf1_awd_sparse.ops import quantized_lstm as _module

sys.modules[__name__] = _module
