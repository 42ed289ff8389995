"""The config floor: the checked configuration of a model (presets) and the
model directory that records it (modeldir).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (awd_lm's top-level modules); a module
imports only its own floor and those below (docs/architecture.md).
"""
