"""Floor 3: cells and layers - :mod:`.weight_drop_lstm_cell` (the cell),
:mod:`.weight_drop_lstm` (the sequence layer), :mod:`.dropout` (held, locked and embedding dropout) and
:mod:`.sparse` (sparse layers, cells, losses and reports, public as
``sparse_layers``). Imports floors 0-2 only."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.layers.weight_drop_lstm_cell": ["WeightDropLSTMCell"],
    "tf1_awd_sparse.layers.weight_drop_lstm": ["WeightDropLSTM"],
    "tf1_awd_sparse.layers.dropout": [
        "VariationalDropout", "locked_dropout", "embedding_dropout"],
    "tf1_awd_sparse.layers.sparse.losses": ["kl_loss", "l0_loss"],
    "tf1_awd_sparse.layers.sparse.report": [
        "sparsity_report", "checkpoint_sparsity_report", "format_report"],
})
