"""The ``awd-lm`` command's programs: `main` (the dispatcher), `train`
(moved from examples/awd_lm.py), `export` (TFLite) and `info`. The older
programs (score, generate, savedmodel, monitored, estimator) stay where they
are; `main.PROGRAMS` names them all."""
