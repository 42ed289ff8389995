"""The sparsity controller (`training.controller`): its rule on a stub
sparsity sequence, and the weight scale it raises in a tiny training
run, in the records and in the checkpoint."""
import os

import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import losses
from tf1_awd_sparse.transforms import pruning_schedule
from tf1_awd_sparse.awd_lm.training import train
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.corpus import synthetic


def test_controller_rule_on_a_stub_sparsity_sequence():
    """Behind the schedule: x factor; caught up: kept (never lowered);
    capped at max_scale."""
    scheduled = [0.3, 0.6, 0.8, 0.9, 0.9, 0.9]
    measured = [0.1, 0.5, 0.85, 0.7, 0.95, 0.2]
    scale, seen = 1.0, []
    for m, s in zip(measured, scheduled):
        scale = losses.controlled_weight_scale(scale, m, s, factor=3.0,
                                               max_scale=20.0)
        seen.append(scale)
    assert seen == [3.0, 9.0, 9.0, 20.0, 20.0, 20.0]
    assert losses.controlled_weight_scale(2.0, 0.1, 0.9, 1.0) == 2.0
    with pytest.raises(ValueError, match="factor"):
        losses.controlled_weight_scale(1.0, 0.1, 0.9, 0.5)
    with pytest.raises(ValueError, match="measured"):
        losses.controlled_weight_scale(1.0, 1.5, 0.9, 2.0)


def test_controller_raises_the_weight_variable_in_training(tmp_path):
    """A tiny L0 run whose sparsity lags a 0.95 target: the scale variable
    doubles after each epoch, in the records and in the checkpoint."""
    corpus, _ = synthetic.hmm_corpus(seed=1, n_train=800, n_valid=200,
                                     n_test=200, n_states=3, vocab_size=20)
    params = presets.params_for("demo", "awd", {
        "emb_size": 6, "hidden_size": 8, "max_epochs": 3, "batch_size": 4,
        "eval_batch_size": 4, "bptt": 8, "optimizer": "sgd",
        "sparsity_weight": 1e-4})
    params = presets.split_quant(as_params(params))[0].replace(
        sparsity="l0", sparsity_controller=2.0, target_sparsity=0.95)
    run_dir = str(tmp_path / "run")
    summary = train.run(corpus, params, run_dir, log=lambda *a: None,
                        threads=1)
    records = summary.epochs
    expected = [float(pruning_schedule.gradual_sparsity(e, 0, 3, 0.95))
                for e in (1, 2, 3)]
    assert [r.scheduled_sparsity for r in records] == pytest.approx(
        expected)
    assert all(r.sparsity < s for r, s in zip(records, expected))
    assert [r.sparsity_weight_scale for r in records] == [2.0, 4.0, 8.0]
    last = tf.train.latest_checkpoint(os.path.join(run_dir, "last"))
    assert tf.train.load_checkpoint(last).get_tensor(
        "sparsity_controller/weight_scale") == 8.0
