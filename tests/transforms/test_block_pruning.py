"""Pruning in 1 x k blocks (`magnitude_pruning.block_scores`,
`exact_block_keep_masks`, ``MagnitudePruning(block_shape=)``, the
language model's `compression_ops.pruning_block` and the pipeline's cut): whole
blocks kept or zeroed, ranked by their mean magnitude. The references are
numpy loops over the blocks and the closed-form count of zeroed blocks."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.graph.compression_ops import (
    matrix_targets, pruning_block)
from tf1_awd_sparse.awd_lm.training.compression import cuts, stages
from tf1_awd_sparse.transforms import magnitude_pruning as mp
from tf1_awd_sparse.transforms import pruning_cut, pruning_schedule
from support.tolerances import gamma
from tf1_awd_sparse.transforms.kernel import _register_for_model_pruning
from tf1_awd_sparse.awd_lm.config.params import as_params


def _loop_block_means(values, block):
    """Means over each block, a partial last block's over its entries."""
    rows, cols = block
    out = np.zeros([-(-values.shape[0] // rows), -(-values.shape[1] // cols)])
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.mean(values[i * rows:(i + 1) * rows,
                                       j * cols:(j + 1) * cols])
    return out


def _is_block_constant(mask, block):
    """Every block (a partial last one too) all kept or all zero."""
    rows, cols = block
    return all(len(np.unique(mask[i:i + rows, j:j + cols])) == 1
               for i in range(0, mask.shape[0], rows)
               for j in range(0, mask.shape[1], cols))


@pytest.mark.parametrize("block", [(1, 4), (4, 1), (1, 16), (2, 2), (1, 1)])
@pytest.mark.parametrize("target", [0.5, 0.9, 0.95])
def test_the_exact_block_cut_zeroes_the_lowest_mean_blocks(block, target):
    rng = np.random.RandomState(7)
    scores = np.abs(rng.randn(64, 48))
    # Two float64 means of a block's positive scores, summed in other
    # orders: 2 gamma(size + 1) relative (was rtol 1e-7, 10**8 times it).
    np.testing.assert_allclose(
        mp.block_scores(scores, block), _loop_block_means(scores, block),
        rtol=2 * gamma(block[0] * block[1] + 1, np.float64))
    keep = mp.exact_block_keep_masks(scores, target, block)
    assert keep.shape == scores.shape and _is_block_constant(keep, block)
    means = _loop_block_means(scores, block).ravel()
    size = block[0] * block[1]
    # The fewest blocks holding round(target * n) zeros: never short.
    zeroed = -(-int(round(target * scores.size)) // size)
    # The zeroed blocks are exactly the `zeroed` lowest means.
    lowest = set(np.argsort(means, kind="stable")[:zeroed])
    kept_blocks = mp.block_scores(keep.astype(float), block).ravel() == 1
    assert set(np.nonzero(~kept_blocks)[0]) == lowest
    assert np.sum(~keep) == zeroed * size
    assert 0 <= np.sum(~keep) - round(target * scores.size) < size


def test_a_global_block_cut_ranks_all_matrices_together():
    rng = np.random.RandomState(3)
    scores = {"a": np.abs(rng.randn(8, 16)), "b": 3 + np.abs(rng.randn(16, 4))}
    blocks = {"a": (1, 4), "b": (4, 1)}
    keep = mp.exact_block_keep_masks(scores, 0.5, blocks)
    # 32 + 16 blocks, 24 zeroed: all of "a"'s lowest, none of "b" (>= 3).
    assert keep["b"].all()
    assert np.sum(~keep["a"]) == 24 * 4
    with pytest.raises(ValueError, match="needs a 2-D weight"):
        mp.exact_block_keep_masks(np.ones([4, 4, 4]), 0.5, (1, 4))
    with pytest.raises(ValueError, match="a pair per array"):
        mp.exact_block_keep_masks([scores["a"]] * 3, 0.5, [(1, 4)] * 2)
    with pytest.raises(ValueError, match="blocks must have a pair"):
        mp.exact_block_keep_masks(scores, 0.5, {"a": (1, 4)})
    # numpy ints are a pair too.
    assert np.array_equal(
        mp.exact_block_keep_masks(scores["a"], 0.5, (np.int64(1),
                                                     np.int64(4))),
        mp.exact_block_keep_masks(scores["a"], 0.5, (1, 4)))


def test_blocks_of_different_sizes_cut_together_reach_the_target():
    """A 1 x 16 matrix beside an entry-by-entry one (ptb-small's
    --pruning-block 16: 1 x 4 table, 16 x 1 kernels): the zeros are
    counted in entries, not in blocks."""
    rng = np.random.RandomState(0)
    scores = {"a": np.abs(rng.randn(8, 64)), "b": np.abs(rng.randn(64, 8))}
    keep = mp.exact_block_keep_masks(scores, 0.5, {"a": (1, 16),
                                                   "b": (1, 1)})
    zeros = sum(int(np.sum(~k)) for k in keep.values())
    assert 0 <= zeros - 512 < 16
    assert _is_block_constant(keep["a"], (1, 16))
    # Every zeroed block's mean is below every kept one's.
    means = np.concatenate([_loop_block_means(scores["a"], (1, 16)).ravel(),
                            scores["b"].ravel()])
    alive = np.concatenate([
        mp.block_scores(keep["a"].astype(float), (1, 16)).ravel() == 1,
        keep["b"].ravel()])
    assert means[~alive].max() <= means[alive].min()
    with pytest.raises(ValueError, match="pair of positive ints"):
        mp.check_block((0, 4), None)


@pytest.mark.parametrize("block", [(1, 16), (16, 1), (3, 5)])
@pytest.mark.parametrize("target", [0.5, 0.95])
def test_a_block_that_does_not_divide_ends_in_a_partial_block(block,
                                                              target):
    """ptb-small's 200-wide table in 1 x 16 blocks: twelve of 16 and one
    of 8. The partial block is ranked by the mean of its entries and
    counts its entries toward the target."""
    rng = np.random.RandomState(11)
    scores = np.abs(rng.randn(40, 200)) if block[1] > 1 else \
        np.abs(rng.randn(200, 40))
    if block == (3, 5):
        scores = np.abs(rng.randn(10, 12))
    means = _loop_block_means(scores, block)
    # Two float64 means, other orders: 2 gamma(size + 1) (was 1e-7).
    np.testing.assert_allclose(
        mp.block_scores(scores, block), means,
        rtol=2 * gamma(block[0] * block[1] + 1, np.float64))
    sizes = np.array([[scores[i:i + block[0], j:j + block[1]].size
                       for j in range(0, scores.shape[1], block[1])]
                      for i in range(0, scores.shape[0], block[0])])
    np.testing.assert_array_equal(mp.block_sizes(scores.shape, block), sizes)
    keep = mp.exact_block_keep_masks(scores, target, block)
    assert keep.shape == scores.shape and _is_block_constant(keep, block)
    # The lowest means zeroed, in order, until their entries reach the
    # wanted zeros: a numpy walk over the sorted blocks.
    wanted = int(round(target * scores.size))
    order = np.argsort(means.ravel(), kind="stable")
    reached = np.cumsum(sizes.ravel()[order])
    zeroed = order[:int(np.searchsorted(reached, wanted)) + 1]
    expected = np.ones(means.size, bool)
    expected[zeroed] = False
    np.testing.assert_array_equal(
        keep, mp.expand_blocks(expected.reshape(means.shape), block,
                               scores.shape))
    assert 0 <= np.sum(~keep) - wanted < block[0] * block[1]


def _masked_weight(value):
    """A weight ``w`` of ``value`` registered for pruning, as the
    embedding is; returns its mask variable."""
    weight = tf.get_variable("w", initializer=value)
    mask = tf.get_variable("w_pruning_mask", initializer=np.ones_like(
        value), trainable=False)
    threshold = tf.get_variable("w_pruning_threshold", [], trainable=False,
                                initializer=tf.zeros_initializer())
    _register_for_model_pruning(weight, mask, threshold, weight * mask)
    return mask


@pytest.mark.parametrize("nbins", [None, mp.DEFAULT_NBINS])
def test_the_op_prunes_whole_blocks_to_the_target(nbins):
    """MagnitudePruning(block_shape=(4, 1)) at the end of its ramp: a
    block-constant mask with round(target * blocks) zero blocks (the
    quantile) or within one histogram bin of them, the lowest means."""
    target, block = 0.75, (4, 1)
    value = np.random.RandomState(0).randn(32, 8).astype(np.float32)
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        mask = _masked_weight(value)
        pruning = mp.MagnitudePruning(0, 1, 1, target, nbins=nbins,
                                      block_shape=block)
        update = pruning.mask_update_op(step)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            session.run(tf.assign(step, 1))
            session.run(update)
            got = session.run(mask).astype(bool)
    assert _is_block_constant(got, block)
    means = _loop_block_means(np.abs(value), block).ravel()
    zero_blocks = ~mp.block_scores(got.astype(float), block).ravel().astype(
        bool)
    want = int(round(target * means.size))
    if nbins is None:
        assert zero_blocks.sum() == want
    else:
        assert abs(int(zero_blocks.sum()) - want) <= 1
    # Every zeroed block's mean is below every kept block's.
    assert means[zero_blocks].max() < means[~zero_blocks].min()


def test_a_callable_block_shape_and_a_block_that_does_not_divide():
    """A callable gives each weight its block; a block that does not
    divide the weight (1 x 5 of 12 columns) ends in a partial block, ranked
    by its mean as the exact cut ranks it."""
    value = np.random.RandomState(1).randn(8, 12).astype(np.float32)
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        mask = _masked_weight(value)
        seen = []
        pruning = mp.MagnitudePruning(
            0, 1, 1, 0.5, nbins=None, name="p1",
            block_shape=lambda w: seen.append(w.name) or (1, 4))
        update = pruning.mask_update_op(step)
        assert seen == ["w:0"]
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            session.run(tf.assign(step, 1))
            session.run(update)
            assert _is_block_constant(session.run(mask), (1, 4))
            partial = mp.MagnitudePruning(0, 1, 1, 0.5, name="p2", nbins=None,
                                          block_shape=(1, 5))
            session.run(tf.variables_initializer(tf.global_variables(
                "p2")))
            session.run(partial.mask_update_op(step))
            got = session.run(mask).astype(bool)
    assert _is_block_constant(got, (1, 5))
    means = _loop_block_means(np.abs(value), (1, 5))
    kept = got[:, ::5]
    assert means[~kept].max() < means[kept].min()
    # The quantile rule over the 8 x 3 block means: 12 of 24 blocks kept.
    assert kept.sum() == 12


def test_the_language_model_blocks_run_along_each_input_dimension():
    # A cell's kernel [input + units, 4 units] (rows are the input), the
    # embedding [vocab, emb] (the decoder's [out, in]).
    assert pruning_block("lm/layer_0/lstm_0/kernel", [400, 800], 4) \
        == (4, 1)
    assert pruning_block("lm/embedding", [6990, 200], 4) == (1, 4)
    # 16 does not divide 200: a partial last block (the fast export pads
    # the table to 208 columns for the int8 1 x 16 kernel).
    assert pruning_block("lm/embedding", [6990, 200], 16) == (1, 16)
    assert pruning_block("lm/embedding", [6990, 202], 4) == (1, 4)
    assert pruning_block("lm/layer_1/lstm_1/kernel", [400, 800],
                         16) == (16, 1)
    assert pruning_block("lm/embedding", [6990, 200], 1) == (1, 1)


@pytest.mark.parametrize("k", [1, 4, 16])
def test_the_pipelines_cut_keeps_whole_blocks(k):
    params = as_params({"vocab_size": 50, "emb_size": 32, "hidden_size": 16,
                        "num_layers": 1, "model": "awd", "pruning": "magnitude",
                        "pruning_block": k})
    names = cuts.weight_names(params)
    rng = np.random.RandomState(k)
    shapes = {names[0]: (50, 32), names[1]: (48, 64)}
    values = {}
    for name in names:
        values[name] = rng.randn(*shapes[name]).astype(np.float32)
        values[cuts.mask_name(name)] = np.ones(shapes[name],
                                               np.float32)
    out = cuts.dense_survivors(values, params, 0.9, "matrix")
    for name in names:
        block = pruning_block(name, shapes[name], k)
        assert _is_block_constant(out[name] != 0, block)
        size = block[0] * block[1]
        wanted = int(round(0.9 * np.prod(shapes[name])))
        assert np.sum(out[name] == 0) == -(-wanted // size) * size


@pytest.mark.parametrize("technique", ["magnitude", "l0",
                                       "variational_dropout"])
@pytest.mark.parametrize("k", [1, 4, 16])
def test_the_block_reaches_the_ramp_and_its_cut(technique, k):
    # The command line's --pruning-block is a compression key, which the
    # stages' parameters drop; the ramp's pruning and the cut read it
    # from the ramp's parameters, so it must be carried there.
    params = as_params(dict(presets.DEFAULTS, pruning_block=k, target_sparsity=0.9,
                            compress=technique, vocab_size=50))
    ramp = stages.finetune_params(params, technique, 10)
    assert ramp.prune.pruning_block == k


def _two_layer_values(params, shapes, seed):
    rng = np.random.RandomState(seed)
    values = {}
    for name in cuts.weight_names(params):
        values[name] = rng.randn(*shapes[name]).astype(np.float32)
        values[cuts.mask_name(name)] = np.ones(shapes[name], np.float32)
    return values


@pytest.mark.parametrize("k", [1, 16])
@pytest.mark.parametrize("table", [0.8, 0.9, 0.95])
def test_uneven_budgets_keep_the_models_zeros(k, table):
    """--table-sparsity: the cut gives the table its own target and the
    kernels one shared fraction; the model's zeros still reach
    round(0.9 * n) and overshoot it by less than a block per matrix."""
    params = as_params({"vocab_size": 50, "emb_size": 32, "hidden_size": 16,
                        "num_layers": 2, "model": "awd", "pruning": "magnitude",
                        "pruning_block": k, "target_sparsity": 0.9,
                        "table_sparsity": table})
    names = cuts.weight_names(params)
    shapes = dict(zip(names, [(50, 32), (48, 64), (48, 128)]))
    out = cuts.dense_survivors(_two_layer_values(params, shapes, k),
                               params, 0.9, "matrix")
    zeros = {n: int(np.sum(out[n] == 0)) for n in names}
    sizes = {n: int(np.prod(shapes[n])) for n in names}
    total = sum(sizes.values())
    assert total == 1600 + 3072 + 6144
    # The table: its own exact cut (whole 1 x k blocks, never short).
    wanted = int(round(table * 1600))
    assert zeros[names[0]] == -(-wanted // k) * k
    # The kernels: one fraction, the rest of the model's zeros.
    kernel = [zeros[n] / float(sizes[n]) for n in names[1:]]
    assert abs(kernel[0] - kernel[1]) <= float(k) / 3072
    model_zeros = int(round(0.9 * total))
    assert model_zeros <= sum(zeros.values()) < model_zeros + 3 * k + 2
    targets = matrix_targets(params, sizes)
    assert targets[names[0]] == table
    assert targets[names[1]] == targets[names[2]]
    # A sparser table leaves the kernels denser, and the other way round.
    assert (targets[names[1]] - 0.9) * (0.9 - table) >= 0
    for name in names:
        assert _is_block_constant(out[name] != 0, pruning_block(
            name, shapes[name], k))


def test_uneven_budgets_refuse_what_leaves_the_kernels_none():
    params = as_params({"vocab_size": 50, "emb_size": 32, "hidden_size": 16,
                        "num_layers": 2, "model": "awd", "target_sparsity": 0.9})
    sizes = {"lm/embedding": 1600, "lm/layer_0/lstm_0/kernel": 3072,
             "lm/layer_1/lstm_1/kernel": 6144}
    # The kernels hold 9216 of 10816 weights: the table needs at least
    # (0.9 * 10816 - 9216) / 1600 = 0.324 of zeros.
    with pytest.raises(ValueError, match=r"table_sparsity \(--table-"
                       r"sparsity\) 0.3 leaves the kernels 1.00\d+ of zeros "
                       r"for the model's target 0.9: give it in "
                       r"\[0.3240, 1.0000\)"):
        matrix_targets(params.replace(table_sparsity=0.3), sizes)
    assert matrix_targets(params.replace(table_sparsity=0.33),
                          sizes)["lm/embedding"] == 0.33
    with pytest.raises(ValueError, match=r"needs cut_scope 'matrix'"):
        matrix_targets(params.replace(table_sparsity=0.9,
                            cut_scope="global"), sizes)
    assert set(matrix_targets(params, sizes).values()) == {0.9}


def test_the_table_budget_reaches_the_ramp_and_its_cut():
    params = as_params(dict(presets.DEFAULTS, pruning_block=16, target_sparsity=0.95,
                            table_sparsity=0.93, compress="magnitude", vocab_size=50))
    ramp = stages.finetune_params(params, "magnitude", 10)
    assert ramp.prune.table_sparsity == 0.93
    with pytest.raises(ValueError, match=r"table_sparsity.*got 1.0"):
        presets.check_params({"table_sparsity": 1.0})
