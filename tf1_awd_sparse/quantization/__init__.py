"""Quantization-aware training of ``WeightDropLSTMCell`` and export to float
and fully 8-bit TFLite models.

The two building blocks live one floor down, below the cells, in
:mod:`tf1_awd_sparse.ops` (their old names here are the same modules):

* :mod:`quantization.fake_quant` - fake-quant building blocks: fixed TFLite
  activation ranges, last-value weight quantization, learned (EMA, once per
  run) activation ranges in resource variables.
* :mod:`quantization.lstm` - the fake-quantized LSTM step the cell uses with
  ``is_quant=True``.
The export to TFLite is floor 4's: :func:`export_tflite`
(:mod:`tf1_awd_sparse.export.tflite`), :class:`TFLiteRunner`
(:mod:`tf1_awd_sparse.export.runner`) and :func:`unroll`
(:mod:`tf1_awd_sparse.export.eval_graph`) are importable here.
"""
from tf1_awd_sparse.export.eval_graph import unroll  # noqa: F401
from tf1_awd_sparse.export.runner import TFLiteRunner  # noqa: F401
from tf1_awd_sparse.export.tflite import export_tflite  # noqa: F401
from tf1_awd_sparse.ops.quantized_lstm import (  # noqa: F401
    LSTMQuantizer, QUANT_ACTIVATIONS)
