"""The quantization rewrite of a whole TF1 graph (``tf.contrib.quantize``'s
four functions, on every supported TensorFlow): :mod:`.patterns` finds the
layers, :mod:`.batch_norm` their batch norms, :mod:`.fold_batch_norm`
folds them, :mod:`.insert` adds the FakeQuant ops and their ranges,
:mod:`.recurrent` quantizes TF's own recurrent cells (in TF1 while
loops too), :mod:`.audit` reads what a graph computes in float,
:mod:`.report` records what a rewrite did, :mod:`.api` is the four
functions. Imports floors 0-1 only."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.transforms.graph_quantize.api": [
        "create_training_graph", "create_eval_graph",
        "experimental_create_training_graph", "experimental_create_eval_graph",
        "GraphRewriteError", "REWRITTEN_COLLECTION"],
    "tf1_awd_sparse.transforms.graph_quantize.report": ["RewriteReport"],
    "tf1_awd_sparse.transforms.graph_quantize.audit": ["graph_float_ops"],
})
