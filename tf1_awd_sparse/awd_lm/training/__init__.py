"""The training floor: the training loop (train), its records and plots
(records), and the compression pipeline (compress).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (awd_lm's top-level modules); a module
imports only its own floor and those below (docs/architecture.md).
"""
