"""Floor 2: held state and kernel transforms.

- :mod:`.held_mask` - the dropout math and :class:`HeldMask`;
- :mod:`.kernel` - the ordered kernel transforms a cell composes (sparse
  weights -> pruning mask -> DropConnect -> weight fake-quant);
- :mod:`.magnitude_pruning` - gradual magnitude pruning of the masks;
  its schedule is :mod:`.pruning_schedule`, its exact numpy cuts
  :mod:`.pruning_cut`;
- :mod:`.techniques` - the sparse technique registry and a graph's pairs;
- :mod:`.checkpoint_pairs` - a checkpoint's sparse pairs (the report's and
  strip's).
- :mod:`.graph_quantize` - the quantization rewrite of a whole graph
  (public as :mod:`tf1_awd_sparse.quantization`).

Imports floors 0-1 only."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.transforms.kernel": [
        "KernelTransform", "SparseWeights", "PruningMask", "DropConnect",
        "WeightFakeQuant", "SPARSITY_CHOICES", "PRUNING_MASKS",
        "sparsity_technique", "from_config", "serialize", "pruned_weight_name",
        "pruning_variable_names"],
    "tf1_awd_sparse.transforms.held_mask": [
        "HeldMask", "train_op_with_updates"],
    "tf1_awd_sparse.transforms.magnitude_pruning": [
        "MagnitudePruning", "block_group_lasso"],
    "tf1_awd_sparse.transforms.pruning_schedule": ["gradual_sparsity"],
    "tf1_awd_sparse.transforms.techniques": [
        "register_pair", "registered_pairs"],
})
