"""``python -m tf1_awd_sparse.awd_lm.score``: the path of the
``awd-lm score`` program before the programs moved to `awd_lm.programs`.
Imported, this name is the module `awd_lm.programs.score` itself (the same
object, so a patch through either name sees one module)."""
import sys

if __name__ == "__main__":  # the command line: quiet TensorFlow first
    import tf1_awd_sparse.base._quiet  # noqa: F401

from tf1_awd_sparse.awd_lm.programs import score as _program  # noqa: E402

if __name__ == "__main__":
    sys.exit(_program.main())
sys.modules[__name__] = _program
