"""The stages' parameters (`stages`): the ramp and the survivors share
the fine-tuning budget by ``ramp_fraction``, the reference takes all of
it, and a fraction outside (0, 1) is refused."""
import json

import pytest

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.training.compression import stages
from tf1_awd_sparse.awd_lm.config.params import as_params


def test_phases_share_the_budget():
    params = as_params(presets.params_for("demo", "awd", {"finetune_epochs": 12}))
    assert stages.ramp_epochs(params) == 5
    first = stages.finetune_params(params, "l0", 100)
    second = stages.survivors_params(params)
    assert first.stopping.max_epochs + second.stopping.max_epochs == 12
    assert first.sparse.sparsity_ramp_steps == 500
    assert second.prune.pruning == "fixed"
    assert stages.reference_params(params).stopping.max_epochs == 12
    one = params.replace(finetune_epochs=1)
    assert stages.ramp_epochs(one) == 1
    assert stages.survivors_params(one).stopping.max_epochs == 1
    # The reference trains as long as a technique's two phases.
    assert stages.reference_params(one).stopping.max_epochs == 2
    json.dumps(first.to_flat())   # no numpy scalar among the values


@pytest.mark.parametrize("fraction,epochs,ramp", [
    (0.4, 10, 4), (0.7, 10, 7), (0.2, 10, 2), (0.25, 10, 2),
    (0.99, 10, 9), (0.01, 10, 1), (0.5, 1, 1)])
def test_the_ramp_fraction_splits_the_budget(fraction, epochs, ramp):
    """--ramp-fraction: the ramp takes round(fraction * epochs) epochs
    (banker's rounding of 2.5: 2), never all nor none of them; the
    magnitude schedule ends with it; the survivors take the rest; the
    reference the whole budget."""
    params = as_params(presets.params_for("demo", "awd", {
                  "finetune_epochs": epochs, "ramp_fraction": fraction}))
    assert stages.ramp_epochs(params) == ramp
    first = stages.finetune_params(params, "magnitude", 30)
    assert first.stopping.max_epochs == ramp
    assert first.prune.pruning_end_step == 30 * ramp
    assert stages.survivors_params(params).stopping.max_epochs == max(
        1, epochs - ramp)
    assert stages.reference_params(params).stopping.max_epochs == max(
        2, epochs)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_a_ramp_fraction_outside_the_open_interval_is_refused(bad):
    with pytest.raises(ValueError, match=r"ramp_fraction"):
        presets.params_for("demo", "awd", {"ramp_fraction": bad})
