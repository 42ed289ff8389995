"""The group lasso over blocks (`magnitude_pruning.block_group_lasso`) and
the language model's use of it (``--group-lasso``,
`compression_ops.group_lasso_loss`): its value and gradient against numpy loops
over the blocks, the loss term present only while magnitude pruning runs,
and only the ramp of the compression pipeline carrying it."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.graph import compression_ops, model
from tf1_awd_sparse.awd_lm.training.compression import cuts, stages
from tf1_awd_sparse.transforms import magnitude_pruning as mp
from tf1_awd_sparse.awd_lm.config.params import as_params
from support.lm import PARAMS
from support.tolerances import gamma


def _loop_lasso(values, block):
    """(sum_b sqrt(|b|) ||w_b||, its gradient) by a loop over the blocks,
    in float64; a partial last block counts its own entries."""
    rows, cols = block
    total, grad = 0.0, np.zeros(values.shape)
    for i in range(0, values.shape[0], rows):
        for j in range(0, values.shape[1], cols):
            part = values[i:i + rows, j:j + cols].astype(np.float64)
            norm = np.sqrt((part ** 2).sum())
            total += np.sqrt(part.size) * norm
            if norm > 0:
                grad[i:i + rows, j:j + cols] = np.sqrt(part.size) * part / norm
    return total, grad


def _rtol(shape, block):
    # A block's squares summed (|b| terms), its square root, the scaled
    # norms summed over the blocks: within gamma of all those terms.
    return gamma(block[0] * block[1] + int(np.prod(shape)) + 4)


@pytest.mark.parametrize("block,shape", [
    ((1, 16), (7, 40)),    # 40 = 2 x 16 + a partial block of 8
    ((16, 1), (40, 6)),    # a kernel's blocks run down its rows
    ((1, 4), (5, 8)), ((2, 3), (5, 7)), ((1, 1), (4, 5))])
def test_the_group_lasso_sums_each_blocks_weighted_norm(block, shape):
    rng = np.random.RandomState(sum(shape))
    value = rng.randn(*shape).astype(np.float32)
    # An all-zero block: no term, a zero (not NaN) gradient.
    value[:block[0], :block[1]] = 0.0
    with tf.Graph().as_default():
        weight = tf.constant(value)
        loss = mp.block_group_lasso([weight], block)
        grad, = tf.gradients(loss, [weight])
        with tf.Session() as sess:
            got, got_grad = sess.run([loss, grad])
    expected, expected_grad = _loop_lasso(value, block)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=_rtol(shape, block),
                               atol=1e-17)
    assert np.all(np.isfinite(got_grad))
    assert np.all(got_grad[:block[0], :block[1]] == 0.0)
    # Each entry of the gradient is sqrt(|b|) w / ||w_b||: within a few
    # roundings of the norm's sum.
    np.testing.assert_allclose(got_grad, expected_grad,
                               rtol=_rtol([block[0], block[1]], block),
                               atol=1e-7)


def test_the_group_lasso_adds_weights_each_in_its_own_block():
    rng = np.random.RandomState(0)
    table = rng.randn(9, 20).astype(np.float32)
    kernel = rng.randn(20, 8).astype(np.float32)
    with tf.Graph().as_default():
        loss = mp.block_group_lasso(
            [tf.constant(table), tf.constant(kernel)], [(1, 16), (16, 1)])
        one_pair = mp.block_group_lasso([tf.constant(table)], (1, 4))
        empty = mp.block_group_lasso([], (1, 4))
        with tf.Session() as sess:
            got, got_one, got_empty = sess.run([loss, one_pair, empty])
    expected = (_loop_lasso(table, (1, 16))[0]
                + _loop_lasso(kernel, (16, 1))[0])
    np.testing.assert_allclose(got, expected,
                               rtol=_rtol([table.size + kernel.size], (1, 16)))
    np.testing.assert_allclose(got_one, _loop_lasso(table, (1, 4))[0],
                               rtol=_rtol(table.shape, (1, 4)))
    assert got_empty == 0.0
    with pytest.raises(ValueError, match=r"blocks must be one pair or one "
                       r"per weight \(2\), got 3"):
        mp.block_group_lasso([tf.constant(table), tf.constant(kernel)],
                             [(1, 4)] * 3)
    with pytest.raises(ValueError, match=r"blocks must be a pair of "
                       r"positive ints"):
        mp.block_group_lasso([tf.constant(table)], [(0, 4)])


LM = dict(PARAMS, emb_size=8, model="awd", pruning_begin_step=0,
          pruning_end_step=12, pruning_frequency=3, target_sparsity=0.6,
          pruning_block=4)


@pytest.mark.parametrize("weight,pruning", [
    (0.01, "magnitude"), (0.0, "magnitude"), (0.01, None)])
def test_the_language_models_loss_adds_the_lasso_while_pruning(weight,
                                                               pruning):
    """``group_lasso`` G with magnitude pruning: the sparsity loss is G
    times the lasso of the embedding (1 x 4 blocks along its rows) and the
    kernels (4 x 1 down their rows, the last block partial: 14 rows), and
    the training loss holds it; no term without pruning or at G = 0."""
    params = as_params(dict(LM, pruning=pruning, group_lasso=weight))
    rng = np.random.RandomState(1)
    ids = rng.randint(0, LM["vocab_size"], (3, 6))
    with tf.Graph().as_default():
        tf.set_random_seed(2)
        tf.train.get_or_create_global_step()
        out = model.build_lm({"inputs": tf.constant(ids[:, :-1]),
                              "targets": tf.constant(ids[:, 1:])},
                             True, params)
        by_name = {v.op.name: v for v in tf.global_variables()}
        names = cuts.weight_names(params)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, values = sess.run(
                [{k: getattr(out, k) for k in (
                    "loss", "xent", "ar", "tar", "weight_decay",
                    "sparsity_loss")},
                 {n: by_name[n] for n in names}])
    if weight == 0.0 or pruning is None:
        assert got["sparsity_loss"] == 0.0
    else:
        terms = [_loop_lasso(values[n], compression_ops.pruning_block(
            n, values[n].shape, 4))[0] for n in names]
        assert [values[n].shape for n in names] == [(11, 8), (14, 24),
                                                    (14, 32)]
        np.testing.assert_allclose(
            got["sparsity_loss"], weight * sum(terms),
            rtol=_rtol([11 * 8 + 14 * 24 + 14 * 32], (4, 1)))
    parts = sum(got[k] for k in ("xent", "ar", "tar", "weight_decay",
                                 "sparsity_loss"))
    np.testing.assert_allclose(got["loss"], parts, rtol=gamma(6))


def test_the_group_lasso_reaches_the_ramp_only():
    """The ramp (before the cut) carries ``group_lasso``; the survivors,
    the reference and the float phase do not (a compression key)."""
    params = as_params(dict(presets.DEFAULTS, pruning_block=16, target_sparsity=0.95,
                            group_lasso=2e-6, compress="magnitude", vocab_size=50))
    assert stages.finetune_params(
        params, "magnitude", 10).prune.group_lasso == 2e-6
    assert stages.survivors_params(params).prune.group_lasso == 0.0
    assert stages.reference_params(params).prune.group_lasso == 0.0
    assert "group_lasso" not in presets.split_quant(params)[0].to_flat()
    with pytest.raises(ValueError, match=r"group_lasso.*-1"):
        presets.check_params({"group_lasso": -1.0})
