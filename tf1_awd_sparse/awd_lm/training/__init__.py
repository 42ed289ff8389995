"""The training floor: the training loop, a command's run of it, and the
compression pipeline.

The loop (`train.run`, `train.Trainer`) and its parts:

  train        -- `run` and `Trainer`: a model trained epoch by epoch,
                  its best checkpoint scored; `check_run_dir`.
  train_graph  -- the training graph and its copies reseeded per epoch.
  epochs       -- an epoch of truncated BPTT, a split's evaluation,
                  `TrainingDiverged`.
  runstate     -- the loop's state (state.json), the stopping rule, what
                  a resumed run reads back.
  selection    -- which epoch is the best.
  controller   -- the sparsity controller of a VD / L0 ramp.
  records      -- the loop's records, the training and results tables,
                  the plots.

A command's run, and the compression:

  plan         -- `plan_run` decides a command's run (models, parameters,
                  resume, corpus), `run_plan` runs it (float,
                  quantization-aware, compression), `results` and
                  `write_results` make --out's table and files.
  compression  -- the package of the compression pipeline
                  (`compression.pipeline.run_pipeline`): its stages, cuts,
                  rows, TFLite files, the file to ship, the curves.

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.training.train": [
        "run", "Trainer", "RunDirError", "check_run_dir"],
    "tf1_awd_sparse.awd_lm.training.epochs": ["TrainingDiverged"],
    "tf1_awd_sparse.awd_lm.training.records": [
        "TableLog", "results_table", "merge_summaries", "plot_curves",
        "plot_sparsity"],
    "tf1_awd_sparse.awd_lm.training.plan": [
        "plan_run", "run_plan", "results", "write_results", "check_out",
        "flag_name"],
    "tf1_awd_sparse.awd_lm.training.compression.pipeline": ["run_pipeline"],
    "tf1_awd_sparse.awd_lm.training.compression.rows": ["format_table"],
    "tf1_awd_sparse.awd_lm.training.compression.ship": [
        "recommend", "recommended_line", "pipeline_dirs",
        "read_recommendation"],
})
