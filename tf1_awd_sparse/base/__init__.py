"""Floor 0: the version (:mod:`.compat`, the only module that looks at the
TensorFlow version; ``compat.tf`` is the v1 API) and the argument checks
(:mod:`.checks`: every check, ``smart_cond``, ``once_per_run`` and the named
error types, which are part of the public API) and :mod:`.errors` (``Error``,
the root of every named error). Imports TensorFlow only."""
