"""Floor 2: held state and kernel transforms.

- :mod:`.held_mask` - the dropout math and :class:`HeldMask`;
- :mod:`.kernel` - the ordered kernel transforms a cell composes (sparse
  weights -> pruning mask -> DropConnect -> weight fake-quant); their names
  are importable from this package too;
- :mod:`.magnitude_pruning` - gradual magnitude pruning of the masks;
  its schedule is :mod:`.pruning_schedule`, its exact numpy cuts
  :mod:`.pruning_cut`;
- :mod:`.techniques` - the sparse technique registry and a graph's pairs;
- :mod:`.checkpoint_pairs` - a checkpoint's sparse pairs (the report's and
  strip's).

Imports floors 0-1 only.
"""
from tf1_awd_sparse.transforms.kernel import (  # noqa: F401
    SPARSITY_CHOICES, PRUNING_MASKS, DropConnect, KernelTransform,
    PruningMask, SparseWeights, WeightFakeQuant, from_config,
    pruned_weight_name, pruning_variable_names, serialize,
    sparsity_technique)

__all__ = ["SPARSITY_CHOICES", "PRUNING_MASKS", "DropConnect", "KernelTransform",
           "PruningMask", "SparseWeights", "WeightFakeQuant", "from_config",
           "pruned_weight_name", "pruning_variable_names", "serialize",
           "sparsity_technique"]
