"""Quantization-aware training of ``WeightDropLSTMCell`` and export to float
and fully 8-bit TFLite models.

* :mod:`quantization.fake_quant` - fake-quant building blocks: fixed TFLite
  activation ranges, last-value weight quantization, learned (EMA, once per
  run) activation ranges in resource variables.
* :mod:`quantization.lstm` - the fake-quantized LSTM step the cell uses with
  ``is_quant=True``.
* :mod:`quantization.export` - :func:`export_tflite` and :class:`TFLiteRunner`.
"""
from tf1_awd_sparse.quantization.export import (  # noqa: F401
    TFLiteRunner, export_tflite, unroll)
from tf1_awd_sparse.quantization.lstm import LSTMQuantizer, QUANT_ACTIVATIONS  # noqa: F401
