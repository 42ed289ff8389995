"""Quantization-aware training of ``WeightDropLSTMCell`` and export to float
and fully 8-bit TFLite models.

Its names are :func:`export_tflite` (:mod:`tf1_awd_sparse.export.tflite`),
:class:`TFLiteRunner` (:mod:`tf1_awd_sparse.export.runner`) and
:func:`unroll` (:mod:`tf1_awd_sparse.export.eval_graph`), and
:class:`LSTMQuantizer` and ``QUANT_ACTIVATIONS`` (the fake-quantized LSTM
step the cell uses with ``is_quant=True``, from
:mod:`tf1_awd_sparse.ops.quantized_lstm`). The fake-quant building blocks
are :mod:`tf1_awd_sparse.ops.fake_quant`.
"""
from tf1_awd_sparse.export.eval_graph import unroll  # noqa: F401
from tf1_awd_sparse.export.runner import TFLiteRunner  # noqa: F401
from tf1_awd_sparse.export.tflite import export_tflite  # noqa: F401
from tf1_awd_sparse.ops.quantized_lstm import (  # noqa: F401
    LSTMQuantizer, QUANT_ACTIVATIONS)

__all__ = ["export_tflite", "TFLiteRunner", "unroll", "LSTMQuantizer",
           "QUANT_ACTIVATIONS"]
