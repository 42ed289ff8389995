"""Floor 1: the stateless math under the cells - fake quantization
(:mod:`.fake_quant`), the fake-quantized LSTM step (:mod:`.quantized_lstm`),
the whole-sequence LSTM recurrence and its gradient (:mod:`.lstm_sequence`),
where a graph's per-run ops are placed (:mod:`.mask_placement`) and the
sparse techniques' formulas and op pairs (:mod:`.sparse`, public as
``sparse_layers``). Imports floor 0 only."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.ops.quantized_lstm": [
        "LSTMQuantizer", "QUANT_ACTIVATIONS"],
    "tf1_awd_sparse.ops.fake_quant": [
        "quantize_weight", "quantization_active"],
    "tf1_awd_sparse.ops.mask_placement": [
        "MASK_VARIABLES", "QUANT_VARIABLES", "mask_variable_scope",
        "mask_variables", "quant_variables"],
})
