"""The inference floor: a trained model used.

  export          -- a checkpoint's model written as a TFLite file.
  fused_export    -- the same as fused LSTM ops (``lstm="fused"``).
  lm_runner       -- a TFLite file of `export` run window by window and
                     scored (`LMRunner`, `tflite_perplexity`).
  tflite_weights  -- the weights a TFLite file holds, read back.
  model_files     -- a trained model's files: where a path's
                     configuration is, a model directory written as a
                     TFLite file, a written file copied with its sidecar.
  lm_backends     -- the TensorFlow and TFLite backends.
  lm              -- `LanguageModel`, what users load.

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.inference.lm": [
        "LanguageModel", "LMState", "Scores", "OOVError", "export_model"],
    "tf1_awd_sparse.awd_lm.inference.export": [
        "export_lm", "WEIGHT_FORMATS", "STORAGES", "check_formats"],
    "tf1_awd_sparse.awd_lm.inference.lm_runner": [
        "LMRunner", "tflite_perplexity"],
    "tf1_awd_sparse.awd_lm.inference.tflite_weights": [
        "weight_sparsity_of_tflite"],
    "tf1_awd_sparse.awd_lm.inference.model_files": ["copy_model_file"],
})
