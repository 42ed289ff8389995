"""The graph floor: the language model's TensorFlow graph (model), its
losses, the NT-ASGD averaging, distillation, the continuous cache, and
restoring a checkpoint into a graph (checkpoints).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.graph.model": ["build_lm", "build_train_op"],
    "tf1_awd_sparse.awd_lm.graph.losses": [
        "activation_regularization", "temporal_activation_regularization"],
    "tf1_awd_sparse.awd_lm.graph.ntasgd": ["NTASGDOptimizer"],
    "tf1_awd_sparse.awd_lm.graph.distill": ["build_teacher", "distill_terms"],
    "tf1_awd_sparse.awd_lm.graph.cache": ["CacheConfig", "grid_search"],
    "tf1_awd_sparse.awd_lm.graph.checkpoints": [
        "restore", "CheckpointError", "perplexity"],
})
