"""The graph floor: the language model's TensorFlow graph (model), its
losses, the NT-ASGD averaging, distillation, the continuous cache, and
restoring a checkpoint into a graph (checkpoints).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (awd_lm's top-level modules); a module
imports only its own floor and those below (docs/architecture.md).
"""
