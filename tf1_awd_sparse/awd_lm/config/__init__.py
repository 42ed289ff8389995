"""The config floor: the checked configuration of a model (params, presets),
the model directory that records it (modeldir), every path of a run's
tree (rundir: `RunDir`, and the atomic JSON writes), the typed records of
a run's files and how a run's directory was made (runrecord).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.config.params": [
        "Params", "as_params", "USER_KEYS", "STAGE_KEYS"],
    "tf1_awd_sparse.awd_lm.config.registry": ["PARAMETERS"],
    "tf1_awd_sparse.awd_lm.config.presets": [
        "DEFAULTS", "PRESETS", "params_for", "check_params", "CHECKS",
        "text_type", "parse_value"],
    "tf1_awd_sparse.awd_lm.config.modeldir": [
        "ConfigError", "CONFIG_FILE", "VOCAB_FILE", "read_config",
        "write_config", "read_vocab", "write_vocab", "sidecar_path",
        "model_dirs_in"],
    "tf1_awd_sparse.awd_lm.config.rundir": ["RunDir"],
    "tf1_awd_sparse.awd_lm.config.runrecord": ["RunSummary"],
})
