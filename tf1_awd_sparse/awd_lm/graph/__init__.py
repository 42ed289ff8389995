"""The graph floor: the language model's TensorFlow graph.

  model            -- `build_lm`: embedding, LSTM stack, decoder, loss and
                      penalties.
  train_op         -- the clipped NT-ASGD / SGD step, and that step with
                      magnitude pruning's mask update.
  compression_ops  -- what pruning, the sparse techniques and quantization
                      add beside the forward pass (schedules, masks,
                      sparsity and range tensors).
  losses           -- AR and TAR.
  ntasgd           -- the NT-ASGD averaging optimizer.
  distill          -- the distillation teacher and its terms.
  cache            -- the continuous cache pointer.
  checkpoints      -- restoring a checkpoint into a graph, `perplexity`
                      (the one perplexity of a loss), `CheckpointError`.

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.graph.model": ["build_lm"],
    "tf1_awd_sparse.awd_lm.graph.train_op": ["build_train_op"],
    "tf1_awd_sparse.awd_lm.graph.losses": [
        "activation_regularization", "temporal_activation_regularization"],
    "tf1_awd_sparse.awd_lm.graph.ntasgd": ["NTASGDOptimizer"],
    "tf1_awd_sparse.awd_lm.graph.distill": ["build_teacher", "distill_terms"],
    "tf1_awd_sparse.awd_lm.graph.cache": [
        "CacheConfig", "check_config", "grid_search"],
    "tf1_awd_sparse.awd_lm.graph.checkpoints": [
        "restore", "CheckpointError", "perplexity"],
})
