"""Floor 1, sparse math: each technique's formulas once, for TF and numpy
(:mod:`.common`), and its stateless train / eval op pairs
(:mod:`.variational_dropout`, :mod:`.l0_regularization`)."""
