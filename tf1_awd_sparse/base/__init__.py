"""Floor 0: the version (:mod:`.compat`, the only module that looks at the
TensorFlow version; ``compat.tf`` is the v1 API), the argument checks
(:mod:`.checks`: every check and the checks' named errors, which are part
of the public API; :mod:`.scalar_checks` and :mod:`.data_checks` hold the
checks of Python scalars and of data, re-exported by :mod:`.checks`), the graph control flow (:mod:`.control_flow`:
``smart_cond``, ``once_per_run``, ...), the op seeds (:mod:`.seeds`), the
checkpoint argument (:mod:`.checkpoints`), variable names relative to a
scope (:mod:`.variable_names`), the table of public and old names
(:mod:`.names`) and :mod:`.errors` (``Error``, the root of every named
error). Imports TensorFlow only."""
