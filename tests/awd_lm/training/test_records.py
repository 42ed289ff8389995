"""What the records count and name (`training.records`): the zeros a
per-matrix cut makes against the target's, whether a row reached it, and
the labels that tell the pipeline's quantization-aware run from
``--quant``'s (the rows' ``model``, which records merge by)."""
import numpy as np

from tf1_awd_sparse.transforms import pruning_cut
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.training import records, train


def test_reached_counts_the_zeros_the_per_matrix_cut_makes():
    """Three 12-weight matrices at 0.95: the per-matrix cut zeroes
    3 x round(11.4) = 33, one short of round(0.95 * 36) = 34, and has
    reached its target; a global cut must make 34."""
    masks = {n: pruning_cut.exact_keep_masks(
        np.arange(12.) + i, 0.95) for i, n in enumerate("abc")}
    zeros = sum(int((m == 0).sum()) for m in masks.values())
    row = {"total_weights": 36, "nonzero_weights": 36 - zeros,
           "matrix_sizes": [12, 12, 12]}
    assert zeros == 33
    assert records.target_zeros(row, 0.95) == 33
    assert records.reached(row, 0.95)
    assert records.target_zeros(row, 0.95, "global") == 34
    assert not records.reached(row, 0.95, "global")


def test_labels_tell_the_pipelines_qat_from_quant():
    assert train.label(as_params({"model": "plain", "quant": True})) == \
        "plain+q"
    assert train.label(as_params({"model": "plain", "quant": True,
                                  "pruning": "fixed"})) == "plain+pruned+q"
