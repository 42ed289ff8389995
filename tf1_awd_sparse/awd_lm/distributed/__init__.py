"""The distributed floor: clusters (cluster), the input pipeline
(input_fn), the Estimator model_fn, and the command line that the estimator
and monitored programs share (cli).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (awd_lm's top-level modules); a module
imports only its own floor and those below (docs/architecture.md).
"""
