"""Floor 4: export - :mod:`.tflite` (``export_tflite``: float and 8-bit
TFLite models of cell stacks), made of :mod:`.stack` (a cell stack and its
trained values), :mod:`.eval_graph` (the unrolled evaluation graph) and
:mod:`.graphdef` (GraphDef rewrites and the conversion); :mod:`.runner`
(``TFLiteRunner``, which runs the files, and ``open_interpreter``, which
opens them), :mod:`.tflite_schema` (TFLite's schema as the library knows
it: tables, operator codes, tensor types, the LSTM op's inputs, symmetric
int8; every writer and reader here takes them from it),
:mod:`.tflite_file` (a file's flatbuffer read with the standard library,
and ``verify``, which checks it before any interpreter reads it),
:mod:`.sparse_storage` (pruned weights stored in TFLite's
sparse format, int8 weights; its format and encodings are
:mod:`.sparse_format`'s, its rewrite :mod:`.sparse_rewrite`'s) and
:mod:`.strip` (sparse pairs to plain dense weights) and :mod:`.fused_lstm`
(a language model written with one builtin TFLite LSTM op per layer) and
:mod:`.quantized_graph` (``export_quantized_graph``: a graph rewritten by
``create_eval_graph`` to a uint8 file in one call), whose files
:mod:`.tflite_audit` reads (float ops, grids, requantizations).
Imports floors 0-3 only."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.export.tflite": ["export_tflite"],
    "tf1_awd_sparse.export.eval_graph": ["unroll"],
    "tf1_awd_sparse.export.runner": ["TFLiteRunner", "open_interpreter"],
    "tf1_awd_sparse.export.quantized_graph": [
        "export_quantized_graph", "QuantizedGraphError"],
    "tf1_awd_sparse.export.tflite_audit": ["float_ops"],
    "tf1_awd_sparse.export.tflite_file": ["verify", "TFLiteFileError"],
    "tf1_awd_sparse.export.sparse_storage": [
        "store_sparse", "stores_sparse", "sparse_tensors"],
    "tf1_awd_sparse.export.sparse_format": ["SparseStorageError", "LAYOUTS"],
    "tf1_awd_sparse.export.fused_lstm": ["fused_lm", "LSTMLayer"],
    "tf1_awd_sparse.export.strip": [
        "strip_checkpoint", "strip_values", "strip_values_of_checkpoint"],
})
