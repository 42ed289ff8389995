"""The corpus floor: reading and numbering text (data), the synthetic
corpora, and the one place a program's corpus comes from (runtime).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (awd_lm's top-level modules); a module
imports only its own floor and those below (docs/architecture.md).
"""
