"""The quantization rewrite of a whole TF1 graph (``tf.contrib.quantize``'s
four functions, on every supported TensorFlow): :mod:`.patterns` finds the
layers, :mod:`.batch_norm` their batch norms, :mod:`.fold_batch_norm`
folds them, :mod:`.insert` adds the FakeQuant ops and their ranges,
:mod:`.api` is the four functions. Imports floors 0-1 only."""
from tf1_awd_sparse.transforms.graph_quantize.api import (  # noqa: F401
    REWRITTEN_COLLECTION, GraphRewriteError, create_eval_graph,
    create_training_graph, experimental_create_eval_graph,
    experimental_create_training_graph)

__all__ = ["GraphRewriteError", "REWRITTEN_COLLECTION",
           "create_training_graph", "create_eval_graph",
           "experimental_create_training_graph",
           "experimental_create_eval_graph"]
