"""AWD-LSTM word-level language model built from the library's cells.

Modules:
  data       -- PTB-layout reader (``read_ptb``), ``Corpus``, ``batchify``.
  synthetic  -- seeded hidden Markov source and its exact perplexity floor.
  losses     -- activation (AR) and temporal activation (TAR) regularization.
  ntasgd     -- ``NTASGDOptimizer``: SGD with a non-monotone switch to averaging.
  model      -- ``build_lm(features, mode, params)``: the reusable graph builder.
  train      -- the training loop (checkpoints, resume, summaries, JSON, plot).
  presets    -- the ``demo`` and ``awd-ptb`` hyper-parameter sets.
"""
