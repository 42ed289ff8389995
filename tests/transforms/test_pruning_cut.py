"""The exact cut of numpy scores (`transforms.pruning_cut`:
`exact_keep_masks`, magnitude, log alpha or L0 gate probability) against
numpy, and the techniques' keep scores, one formula in TF and numpy."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import common, techniques
from tf1_awd_sparse.transforms import pruning_cut
from support.tolerances import U32, transcendental_rtol


# -- exact_keep_masks ------------------------------------------------------

@pytest.mark.parametrize("target", [0.0, 0.3, 0.9, 0.95, 0.999])
def test_exact_cut_zeroes_round_target_n_of_the_lowest(target):
    rng = np.random.RandomState(0)
    scores = rng.randn(37, 53)
    keep = pruning_cut.exact_keep_masks(scores, target)
    zeros = int(round(target * scores.size))
    assert int((~keep).sum()) == zeros
    # The zeroed ones are the lowest scores (independent: a full sort).
    order = np.argsort(scores, axis=None)
    want = np.ones(scores.size, bool)
    want[order[:zeros]] = False
    np.testing.assert_array_equal(keep.reshape(-1), want)


def test_exact_cut_keeps_every_tie_at_the_threshold():
    # 10 entries, 4 of them tied at the 6th rank: target 0.6 asks for 6
    # zeros; the ties straddle the cut, so all 4 are kept (fewer zeros).
    scores = np.array([0., 1., 2., 3., 5., 5., 5., 5., 8., 9.])
    keep = pruning_cut.exact_keep_masks(scores, 0.6)
    np.testing.assert_array_equal(keep, scores >= 5.)
    assert int((~keep).sum()) == 4 <= round(0.6 * 10)


def test_global_cut_has_one_threshold_across_matrices():
    rng = np.random.RandomState(1)
    scores = {"a": rng.rand(20, 30), "b": 3.0 * rng.rand(50)}
    keep = pruning_cut.exact_keep_masks(scores, 0.9)
    total = sum(v.size for v in scores.values())
    assert sum(int((~m).sum()) for m in keep.values()) == round(0.9 * total)
    kept_min = min(scores[k][keep[k]].min() for k in scores)
    cut_max = max(scores[k][~keep[k]].max() for k in scores)
    assert cut_max < kept_min
    # b's scores are 3x larger: the global cut leaves b denser than a.
    assert keep["b"].mean() > keep["a"].mean()


@pytest.mark.parametrize("bad, message", [
    (np.zeros([0]), "at least one entry"),
    (np.array([1.0, np.nan]), "finite"),
])
def test_exact_cut_refuses_bad_scores(bad, message):
    with pytest.raises(ValueError, match=message):
        pruning_cut.exact_keep_masks(bad, 0.5)


def test_exact_cut_refuses_a_target_of_one():
    with pytest.raises(ValueError, match="target_sparsity"):
        pruning_cut.exact_keep_masks(np.ones(3), 1.0)


# -- keep scores: one formula, TF and numpy ---------------------------------

def test_keep_scores_match_the_papers_formulas_in_tf_and_numpy():
    rng = np.random.RandomState(2)
    theta = rng.randn(6, 7).astype(np.float32)
    aux = rng.randn(6, 7).astype(np.float32) * 3
    want = {"variational_dropout": -(aux - np.log(theta ** 2 + 1e-8)),
            # the logit of P(z != 0) = sigmoid(log alpha - beta log(-g/z))
            "l0": aux - 2.0 / 3.0 * np.log(0.1 / 1.1)}
    # Each side is float32: a square, an add, one log (a few ulp) and a
    # subtraction, each rounding relative to the terms' sizes |aux| and
    # |log(theta**2 + 1e-8)| <= 18.5 (a relative error u in the log's
    # argument moves it by u), so per side (log's ulps + 3 roundings) of
    # their sum; two sides. Absolute: the difference cancels towards 0
    # where aux ~ the log, so a relative tolerance would mean nothing
    # there (was rtol 1e-5 + atol 1e-5, under this bound's ~3e-5).
    size = np.abs(aux).max() + np.abs(np.log(theta ** 2 + 1e-8)).max()
    atol = 2 * (transcendental_rtol() + 3 * U32) * size
    for name, expected in want.items():
        tech = techniques.get(name)
        got = tech.keep_score(theta, aux, common.NUMPY_MATH)
        np.testing.assert_allclose(got, expected, rtol=0, atol=atol)
        with tf.Graph().as_default(), tf.Session() as sess:
            graph = sess.run(tech.keep_score(tf.constant(theta),
                                             tf.constant(aux)))
        np.testing.assert_allclose(graph, expected, rtol=0, atol=atol)


def test_l0_scores_do_not_saturate_into_ties():
    """Gates wide open (log alpha 40-60) stay ordered, so the cut is exact:
    their probabilities are all 1.0 in float64, which kept every one."""
    aux = np.array([40., 45., 50., 60., -5., -6.])
    score = techniques.get("l0").keep_score(np.ones(6), aux,
                                            common.NUMPY_MATH)
    mask = pruning_cut.exact_keep_masks(score, 0.5)
    assert mask.tolist() == [0, 1, 1, 1, 0, 0]
