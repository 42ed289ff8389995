"""The root of the library's named errors.

``except tf1_awd_sparse.Error`` catches every error this library raises
under a name of its own (`GraphModeError`, `DtypeError`, `CheckpointError`,
...). Each of them is also the built-in error its case has always been (a
ValueError for a bad argument, a TypeError for a bad type, a
RuntimeError for a wrong mode, a FloatingPointError for a diverged loss),
so ``except ValueError`` and the like catch what they caught before.
Imports nothing: modules that must not load TensorFlow use it too.
"""

__all__ = ["Error"]


class Error(Exception):
    """Root of every named error of tf1_awd_sparse (and of the facades
    ``weight_drop_lstm``, ``variational_dropout`` and ``sparse_layers``);
    `tests/base/test_errors.py` checks that every error class the package
    defines derives from it."""
