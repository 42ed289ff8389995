"""The inference floor: the exported TFLite model (export), the two
backends and the LanguageModel class users load (lm_backends, lm).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (awd_lm's top-level modules); a module
imports only its own floor and those below (docs/architecture.md).
"""
