"""The library's supporting packages, under one distinctive name.

The design card's modules stay at the top level (``weight_drop_lstm``,
``variational_dropout``, ``sparse_layers``); everything else lives here so
that installing the library adds no generic top-level names:

* :mod:`tf1_awd_sparse.quantization` - quantization-aware training of the
  LSTM cell and TFLite export.
* :mod:`tf1_awd_sparse.ops.mask_placement` - where dropout-mask variables live
  (per process, never on a ps, never in a checkpoint).
* :mod:`tf1_awd_sparse.awd_lm` - the AWD-LSTM language model.

Every error the library raises under a name of its own derives from
:class:`tf1_awd_sparse.Error` (``base/errors.py``), and from the built-in
error of its case as well.
"""
from tf1_awd_sparse.base import names as _names  # (no TensorFlow)
from tf1_awd_sparse.base.errors import Error  # noqa: F401  (no TensorFlow)

# The old module names import, with a warning (base/names.py has the table).
_names.install_old_module_names()

__all__ = ["Error", "__version__"]

#: The release (CHANGELOG.md; setup.py reads it from here).
__version__ = "0.3.0"
