"""AWD-LSTM word-level language model built from the library's cells.

Modules:
  data       -- PTB-layout reader (``read_ptb``), ``Corpus``, ``batchify``.
  synthetic  -- seeded hidden Markov source and its exact perplexity floor.
  losses     -- activation (AR) and temporal activation (TAR) regularization.
  ntasgd     -- ``NTASGDOptimizer``: SGD with a non-monotone switch to averaging.
  presets    -- the ``demo`` and ``awd-ptb`` hyper-parameter sets and the one
                table of parameter checks (``CHECKS``).
  model      -- ``build_lm(features, mode, params)``: the reusable graph
                builder (embed -> stack -> decode -> penalties).
  runtime    -- corpus loading and session configuration, shared by both
                training paths.
  train      -- the single-process loop: ``Trainer`` (epoch, validation and
                checkpoint steps that return records), ``run``.
  distill    -- knowledge distillation from the float model: the teacher
                (``build_teacher``) and the loss term (``distill_terms``).
  records    -- the loop's records as text (``TableLog``), the results table
                and the validation plot.
  input_fn   -- the distributed input pipeline (fixed-length BPTT windows).
  model_fn   -- the distributed training step and evaluation
                (``train_step``, ``eval_xent``), the Estimator ``model_fn``
                built from them, and ``MaskUpdateHook``.
  cluster    -- ``ClusterBarrierHook`` and ``mirrored_strategy``.
  estimator  -- the Estimator command line
                (``python -m tf1_awd_sparse.awd_lm.estimator``; needs
                ``tf.estimator``: TF 1.x and 2.15).
  monitored  -- the same command line through MonitoredTrainingSession
                (``python -m tf1_awd_sparse.awd_lm.monitored``; every
                version, the one on TF 2.16+).
  modeldir   -- config.json / vocab.txt / .tflite.json of a model.
  lm         -- ``LanguageModel`` (exported here): load a run directory or
                a .tflite file; score, generate, step.
  cache      -- the continuous cache pointer mixed into its scores
                (``CacheConfig``, the validation grid search).
  score, generate -- their command lines
                (``python -m tf1_awd_sparse.awd_lm.score`` / ``.generate``).
  savedmodel -- ``export_saved_model``: a model directory as a SavedModel
                with serving signatures (and its command line).

Every module imports on every supported version, also without
``tf.estimator``.
"""

__all__ = ["LanguageModel"]


def __getattr__(name):
    # ``LanguageModel`` on first use (PEP 562), so importing the package
    # (e.g. for `records`, which needs no TensorFlow) stays light.
    if name == "LanguageModel":
        from tf1_awd_sparse.awd_lm.inference.lm import LanguageModel
        return LanguageModel
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
