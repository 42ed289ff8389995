"""``python -m tf1_awd_sparse.awd_lm.estimator``: the path of the
``awd-lm estimator`` program before the programs moved to `awd_lm.programs`.
Imported, this name is the module `awd_lm.programs.estimator` itself (the same
object, so a patch through either name sees one module)."""
import sys

if __name__ == "__main__":  # as ``awd-lm estimator``: its quiet start-up,
    # its Ctrl-C and closed-pipe endings (`programs.main.run_as_main`)
    from tf1_awd_sparse.awd_lm.programs.main import run_as_main
    run_as_main("estimator")

from tf1_awd_sparse.awd_lm.programs import estimator as _program  # noqa: E402
sys.modules[__name__] = _program
