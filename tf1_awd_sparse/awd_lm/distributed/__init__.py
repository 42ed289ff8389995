"""The distributed floor: clusters (cluster), the input pipeline
(input_fn), the Estimator model_fn, and the command line that the estimator
and monitored programs share (cli).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.distributed.input_fn": [
        "make_input_fn", "bptt_batches"],
    "tf1_awd_sparse.awd_lm.distributed.model_fn": [
        "train_step", "eval_xent", "MaskUpdateHook"],
    "tf1_awd_sparse.awd_lm.distributed.cluster": [
        "ClusterBarrierHook", "mirrored_strategy"],
})
