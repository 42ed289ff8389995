"""The ``awd-lm`` command's programs: `main` (the dispatcher), `train`,
`compress`, `export` (TFLite), `info`, `score`, `generate`, `monitored`
and `estimator`; `main.PROGRAMS` names them all. `score`, `generate`,
`monitored` and `estimator` also run as ``python -m
tf1_awd_sparse.awd_lm.NAME`` (their paths before they moved here). The
SavedModel program stays in `awd_lm.savedmodel` with the function it runs,
`export_saved_model`."""
