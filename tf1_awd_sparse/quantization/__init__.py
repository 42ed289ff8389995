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
:func:`experimental_create_eval_graph`, their error
:class:`GraphRewriteError` and their :class:`RewriteReport` (from
:mod:`tf1_awd_sparse.transforms.graph_quantize`)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.export.tflite": ["export_tflite"],
    "tf1_awd_sparse.export.runner": ["TFLiteRunner"],
    "tf1_awd_sparse.export.eval_graph": ["unroll"],
    "tf1_awd_sparse.ops.quantized_lstm": [
        "LSTMQuantizer", "QUANT_ACTIVATIONS"],
    "tf1_awd_sparse.transforms.graph_quantize.api": [
        "create_training_graph", "create_eval_graph",
        "experimental_create_training_graph", "experimental_create_eval_graph",
        "GraphRewriteError"],
    "tf1_awd_sparse.transforms.graph_quantize.report": ["RewriteReport"],
})
