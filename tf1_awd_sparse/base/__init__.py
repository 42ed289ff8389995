"""Floor 0: the version (:mod:`.compat`, the only module that looks at the
TensorFlow version; ``compat.tf`` is the v1 API), the argument checks
(:mod:`.checks`: every check and the checks' named errors, which are part
of the public API; :mod:`.scalar_checks` and :mod:`.data_checks` hold the
checks of Python scalars and of data), the graph control flow
(:mod:`.control_flow`: ``smart_cond``, ``once_per_run``, ...), the op seeds
(:mod:`.seeds`), the checkpoint argument (:mod:`.checkpoints`), variable
names relative to a scope (:mod:`.variable_names`), the table of public
names (:mod:`.names`), the old names that still import (:mod:`.legacy`)
and :mod:`.errors` (``Error``, the root of every named error). Imports
TensorFlow only."""

from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.base.compat": [
        "tf", "TF_VERSION", "IS_TF2", "GraphModeError", "require_graph_mode"],
    "tf1_awd_sparse.base.errors": ["Error"],
    "tf1_awd_sparse.base.checks": [
        "TrainingFlagError", "DtypeError", "ParamsError", "check_training",
        "check_keep_prob"],
    "tf1_awd_sparse.base.control_flow": ["smart_cond", "once_per_run"],
    "tf1_awd_sparse.base.seeds": ["derived_seed"],
    "tf1_awd_sparse.base.checkpoints": ["check_checkpoint"],
    "tf1_awd_sparse.base.variable_names": ["relative_variable_names"],
})
