"""`awd_lm.graph.compression_ops`: what a model's parameters ask of its
graph beside the forward pass - a global step, the controller's weight
scale, the blocks magnitude pruning ranks, each matrix's share of the
zeros (against the counts of an exact cut, in integers). (The pruning op
and the group lasso on a trained model: tests/transforms/.)"""
import itertools

import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.awd_lm.graph import compression_ops


@pytest.mark.parametrize("quant,pruning,sparsity,ramp", list(
    itertools.product([False, True], [None, "magnitude", "fixed"],
                      [None, "l0"], [0, 100])))
def test_the_global_step_is_needed_by_what_counts_steps(quant, pruning,
                                                        sparsity, ramp):
    params = Params.from_flat({"quant": quant, "pruning": pruning,
                               "sparsity": sparsity,
                               "sparsity_ramp_steps": ramp})
    assert compression_ops.needs_global_step(params) == (
        quant or pruning == "magnitude" or (sparsity is not None and
                                            ramp > 0))


def test_the_weight_scale_is_one_untrained_variable():
    scale = compression_ops.sparsity_weight_scale()
    assert compression_ops.sparsity_weight_scale() is scale
    assert scale.op.name == "sparsity_controller/weight_scale"
    assert scale.dtype.base_dtype == tf.float32 and scale.shape == []
    assert scale not in tf.trainable_variables()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(scale) == 1.0


@pytest.mark.parametrize("k", [1, 4, 16])
def test_a_block_runs_along_the_products_input(k):
    # The table is the decoder's [out, in]; a kernel [in, 4 units].
    for name in ("embedding", "lm/embedding", "model/embedding_0"):
        assert compression_ops.is_table(name)
        assert compression_ops.pruning_block(name, [10, 8], k) == (1, k)
    for name in ("lm/layer_0/kernel", "embedding/kernel",
                 "rnn/lstm_cell/kernel"):
        assert not compression_ops.is_table(name)
        assert compression_ops.pruning_block(name, [20, 48], k) == (k, 1)


SIZES = {"lm/embedding": 1000, "lm/layer_0/kernel": 2400,
         "lm/layer_1/kernel": 1536}


@pytest.mark.parametrize("target", [0.5, 0.8, 0.9])
def test_without_a_table_budget_every_matrix_takes_the_target(target):
    params = Params.from_flat({"target_sparsity": target})
    assert compression_ops.matrix_targets(params, SIZES) == {
        n: target for n in SIZES}


#: Small matrices, where each cut's rounding counts.
SMALL = {"lm/embedding": 10, "lm/layer_0/kernel": 7, "lm/layer_1/kernel": 7}


@pytest.mark.parametrize("sizes,target,table", [
    (SIZES, 0.8, 0.5), (SIZES, 0.8, 0.95), (SIZES, 0.9, 0.6),
    (SIZES, 0.5, 0.0), (SMALL, 0.5, 0.3), (SMALL, 0.6, 0.45),
    (SMALL, 0.7, 0.6), (SMALL, 0.5, 0.0)])
def test_a_table_budget_leaves_the_model_its_target(sizes, target, table):
    params = Params.from_flat({"target_sparsity": target,
                               "table_sparsity": table})
    targets = compression_ops.matrix_targets(params, sizes)
    assert targets["lm/embedding"] == table
    kernel = targets["lm/layer_0/kernel"]
    assert targets["lm/layer_1/kernel"] == kernel
    # The exact cuts of every matrix reach the model's zeros, with at most
    # one zero more in each kernel.
    zeros = [int(round(targets[n] * s)) for n, s in sizes.items()]
    wanted = int(round(target * sum(sizes.values())))
    assert wanted <= sum(zeros) <= wanted + 2


def test_a_table_budget_the_kernels_cannot_meet_is_refused():
    params = Params.from_flat({"target_sparsity": 0.9,
                               "table_sparsity": 0.1})
    with pytest.raises(ValueError, match=r"^table_sparsity \(--table-"
                       r"sparsity\) 0.1 leaves the kernels 1.\d+ of zeros "
                       r"for the model's target 0.9: give it in \["):
        compression_ops.matrix_targets(params, SIZES)
    params = Params.from_flat({"target_sparsity": 0.9, "table_sparsity": 0.5,
                               "cut_scope": "global"})
    with pytest.raises(ValueError, match="needs cut_scope 'matrix'"):
        compression_ops.matrix_targets(params, SIZES)
