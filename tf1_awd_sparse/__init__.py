"""The library's supporting packages, under one distinctive name.

The design card's modules stay at the top level (``weight_drop_lstm``,
``variational_dropout``, ``sparse_layers``); everything else lives here so
that installing the library adds no generic top-level names:

* :mod:`tf1_awd_sparse.quantization` - quantization-aware training of the
  LSTM cell and TFLite export.
* :mod:`tf1_awd_sparse.ops.mask_placement` - where dropout-mask variables live
  (per process, never on a ps, never in a checkpoint).
* :mod:`tf1_awd_sparse.awd_lm` - the AWD-LSTM language model.
"""
