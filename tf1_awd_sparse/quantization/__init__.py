"""Quantization-aware training of ``WeightDropLSTMCell`` and export to float
and fully 8-bit TFLite models.

Its names are :func:`export_tflite` (:mod:`tf1_awd_sparse.export.tflite`),
:class:`TFLiteRunner` (:mod:`tf1_awd_sparse.export.runner`) and
:func:`unroll` (:mod:`tf1_awd_sparse.export.eval_graph`), and
:class:`LSTMQuantizer` and ``QUANT_ACTIVATIONS`` (the fake-quantized LSTM
step the cell uses with ``is_quant=True``, from
:mod:`tf1_awd_sparse.ops.quantized_lstm`). The fake-quant building blocks
are :mod:`tf1_awd_sparse.ops.fake_quant`.

The rewrite of a whole TF1 graph, ``tf.contrib.quantize``'s four functions
on every supported TensorFlow (``from tf1_awd_sparse import quantization as
quantize`` replaces ``tf.contrib.quantize``): :func:`create_training_graph`,
:func:`create_eval_graph`, :func:`experimental_create_training_graph`,
:func:`experimental_create_eval_graph`, and their error
:class:`GraphRewriteError` (from
:mod:`tf1_awd_sparse.transforms.graph_quantize`).
"""
from tf1_awd_sparse.export.eval_graph import unroll  # noqa: F401
from tf1_awd_sparse.export.runner import TFLiteRunner  # noqa: F401
from tf1_awd_sparse.export.tflite import export_tflite  # noqa: F401
from tf1_awd_sparse.ops.quantized_lstm import (  # noqa: F401
    LSTMQuantizer, QUANT_ACTIVATIONS)

from tf1_awd_sparse.transforms.graph_quantize import (  # noqa: F401
    GraphRewriteError, create_eval_graph, create_training_graph,
    experimental_create_eval_graph, experimental_create_training_graph)

__all__ = ["export_tflite", "TFLiteRunner", "unroll", "LSTMQuantizer",
           "QUANT_ACTIVATIONS", "create_training_graph", "create_eval_graph",
           "experimental_create_training_graph",
           "experimental_create_eval_graph", "GraphRewriteError"]
