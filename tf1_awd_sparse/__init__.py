"""The library's supporting packages, under one distinctive name.

The design card's modules stay at the top level (``weight_drop_lstm``,
``variational_dropout``, ``sparse_layers``); everything else lives here so
that installing the library adds no generic top-level names. Each package
has one table of public names, its ``__all__`` (docs/api.md):

* :mod:`tf1_awd_sparse.base` - the version check, the argument checks and
  their errors, seeds and graph control flow.
* :mod:`tf1_awd_sparse.ops` - fake quantization and where a graph's per-run
  variables live.
* :mod:`tf1_awd_sparse.transforms` - kernel transforms, held masks,
  magnitude pruning and the sparse technique registry.
* :mod:`tf1_awd_sparse.layers` - the cells and layers.
* :mod:`tf1_awd_sparse.export` - TFLite files: export, run, verify, store
  sparse; dense weights from sparse pairs.
* :mod:`tf1_awd_sparse.quantization` - quantization-aware training of the
  LSTM cell and of whole TF1 graphs, and TFLite export.
* :mod:`tf1_awd_sparse.awd_lm` - the AWD-LSTM language model.

Every error the library raises under a name of its own derives from
:class:`tf1_awd_sparse.Error` (``base/errors.py``), and from the built-in
error of its case as well. Importing this package imports no TensorFlow.
"""
from tf1_awd_sparse.base.errors import Error  # noqa: F401  (no TensorFlow)

__all__ = ["Error", "__version__"]

#: The release (CHANGELOG.md; setup.py reads it from here): 0.4.0, which
#: drops what 0.3.0 deprecated; what is deprecated now, and the release
#: that drops it, is in `base.legacy`.
__version__ = "0.4.0"
