"""The training floor: the training loop (train), its records and plots
(records), and the compression pipeline (compress).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.training.train": [
        "run", "Trainer", "TrainingDiverged", "RunDirError", "check_run_dir"],
    "tf1_awd_sparse.awd_lm.training.records": [
        "TableLog", "results_table", "merge_summaries", "plot_curves",
        "plot_sparsity"],
    "tf1_awd_sparse.awd_lm.training.compress": [
        "run_pipeline", "format_table"],
})
