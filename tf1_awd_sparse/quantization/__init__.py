"""Quantization-aware training of ``WeightDropLSTMCell`` and export to float
and fully 8-bit TFLite models.

Its names are :func:`export_tflite`, :class:`TFLiteRunner` and :func:`unroll`
(from :mod:`tf1_awd_sparse.export`), and :class:`LSTMQuantizer` and
``QUANT_ACTIVATIONS`` (the fake-quantized LSTM step the cell uses with
``is_quant=True``, from :mod:`tf1_awd_sparse.ops.quantized_lstm`). The
fake-quant building blocks are :mod:`tf1_awd_sparse.ops.fake_quant`.
"""
from tf1_awd_sparse.export.tflite import TFLiteRunner, export_tflite, unroll  # noqa: F401
from tf1_awd_sparse.ops.quantized_lstm import (  # noqa: F401
    LSTMQuantizer, QUANT_ACTIVATIONS)

__all__ = ["export_tflite", "TFLiteRunner", "unroll", "LSTMQuantizer",
           "QUANT_ACTIVATIONS"]
