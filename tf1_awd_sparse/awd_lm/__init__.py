"""AWD-LSTM word-level language model built from the library's cells.

Its floors, bottom up (docs/architecture.md), each a package with its own
table of public names (docs/api.md):

  corpus       -- reading and numbering text (``read_ptb``, ``batchify``),
                  the synthetic corpora with an exact perplexity floor.
  config       -- the checked configuration (``Params``, ``as_params``,
                  ``PRESETS``, ``DEFAULTS``) and a model directory's
                  config.json / vocab.txt.
  graph        -- ``build_lm(features, mode, params)``, the train op, AR /
                  TAR, ``NTASGDOptimizer``, distillation, the continuous
                  cache, ``restore``.
  inference    -- ``LanguageModel`` (load a run directory or a .tflite
                  file; score, generate, step) and the TFLite export
                  (``export_lm``).
  training     -- the single-process loop (``run``, ``Trainer``), its
                  records and plots, the compression pipeline
                  (``run_pipeline``).
  distributed  -- the Estimator / MonitoredTrainingSession input pipeline,
                  training step, hooks and clusters.
  programs     -- the ``awd-lm`` command and its subcommands
                  (``python -m tf1_awd_sparse.awd_lm``).

This package's own table is ``LanguageModel`` and ``export_saved_model``
(a model directory as a SavedModel with serving signatures). Importing it
imports no TensorFlow. Every module imports on every supported version,
also without ``tf.estimator``.

The flat module names of 0.3.0 (``tf1_awd_sparse.awd_lm.train``,
``.presets``, ``.data``, ``.lm``, ...) still import, with one
``DeprecationWarning`` naming the floor module, and the programs' old paths
(``python -m tf1_awd_sparse.awd_lm.score``) still run them
(``base/legacy.py``).
"""
from tf1_awd_sparse.base import legacy as _legacy
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its module
# on first use, so importing the package (e.g. for `records`, which needs
# no TensorFlow) stays light.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.inference.lm": ["LanguageModel"],
    "tf1_awd_sparse.awd_lm.savedmodel": ["export_saved_model"],
})

# The flat names of 0.3.0 import, with a warning, until legacy.REMOVED_IN.
_legacy.install()
