"""The library's gradual magnitude pruning
(tf1_awd_sparse.transforms.magnitude_pruning): its masks against the
weights' magnitudes as its schedule ramps them (the schedule alone:
test_pruning_schedule.py), its update steps, its argument errors on every
version, and, on TF 1.x, step by step beside
tf.contrib.model_pruning.Pruning, the reference it matches."""
import inspect

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base.checks import DtypeError
from tf1_awd_sparse.transforms.magnitude_pruning import (
    DEFAULT_NBINS, MagnitudePruning)
from tf1_awd_sparse.transforms.kernel import _register_for_model_pruning
from support.lm import PARAMS
from support.references import closed_form_sparsity
from support.versions import contrib, needs_contrib
from tf1_awd_sparse.awd_lm.config.params import as_params
from support.tolerances import U32
from weight_drop_lstm import WeightDropLSTMCell

B, T, D, N = 3, 4, 5, 6


def _update_steps(last_step, begin, end, frequency):
    """The steps at which masks change when steps 1..last_step all run:
    the first step >= begin that is `frequency` past the previous update
    (0 at first), up to end."""
    steps, previous = [], 0
    for step in range(1, last_step + 1):
        if begin <= step <= end and previous + frequency <= step:
            steps.append(step)
            previous = step
    return steps


def _inputs():
    return tf.constant(np.random.RandomState(0).randn(B, T, D), tf.float32)


def _pruned_model(weight_init):
    """A WeightDropLSTMCell(pruning_mask=True) kernel and a masked matrix
    (``w``, registered as the embedding is), trained by SGD on a fixed
    loss; returns (global step, train op, [(weight, mask, threshold)])."""
    step = tf.train.get_or_create_global_step()
    cell = WeightDropLSTMCell(N, pruning_mask=True)
    out, _ = tf.nn.dynamic_rnn(cell, _inputs(), dtype=tf.float32)
    weight = tf.get_variable("w", initializer=weight_init)
    mask = tf.get_variable("w_pruning_mask", initializer=np.ones_like(
        weight_init), trainable=False)
    threshold = tf.get_variable("w_pruning_threshold", [], trainable=False,
                                initializer=tf.zeros_initializer())
    masked = weight * mask
    _register_for_model_pruning(weight, mask, threshold, masked)
    target = np.random.RandomState(5).randn(*weight_init.shape)
    loss = (tf.reduce_mean(tf.square(out - 0.3))
            + tf.reduce_mean(tf.square(masked - target)))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, step)
    kernel = [v for v in cell.weights if v.op.name.endswith("/kernel")][0]
    return step, train, [(kernel, cell.pruning_mask_variable,
                          _threshold_of(kernel)), (weight, mask, threshold)]


def _threshold_of(kernel):
    name = kernel.op.name[:-len("kernel")] + "pruning_threshold"
    return [v for v in tf.global_variables() if v.op.name == name][0]


def _session():
    return tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1,
                                            inter_op_parallelism_threads=1))


# -- the reference: tf.contrib.model_pruning on TF 1.x ----------------------

def _contrib_threshold_is_exact():
    """TF 1.15's contrib takes the exact k-th largest |w| (top_k, nbins
    unused); TF 1.13's reads it from a histogram of nbins bins."""
    # pylint: disable=protected-access
    return "top_k" in inspect.getsource(
        contrib.model_pruning.Pruning._update_mask)


SCHEDULE = dict(begin=3, end=27, frequency=4, target=0.8)


def _run(make_op, steps):
    """Trains a fresh copy of the model ``steps`` steps, the pruning op
    after each; returns per step (step, [mask], [threshold], last update
    step, [weight])."""
    weight_init = np.random.RandomState(3).randn(20, 30).astype(np.float32)
    history = []
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        step, train, triples = _pruned_model(weight_init)
        op = make_op(step, train)
        last = [v for v in tf.global_variables()
                if v.op.name == "lm_pruning/last_mask_update_step"]
        assert len(last) == 1  # one counter, the name checkpoints hold
        with _session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(op)
                values = sess.run([step, [m for _, m, _ in triples],
                                   [t for _, _, t in triples], last[0],
                                   [w for w, _, _ in triples]])
                history.append(values)
    return history


@needs_contrib
def test_masks_and_thresholds_match_contrib_step_by_step():
    """Exact equality: on 1.13 both read the threshold from a 4096-bin
    histogram, on 1.15 both take the exact quantile (the library's
    nbins=None); same float32 ops, so the same bits."""
    exact = _contrib_threshold_is_exact()
    s = SCHEDULE

    def with_contrib(step, train):
        hparams = contrib.model_pruning.get_pruning_hparams().parse(
            "name=lm_pruning,begin_pruning_step=%d,end_pruning_step=%d,"
            "pruning_frequency=%d,target_sparsity=%r,nbins=%d,"
            "sparsity_function_begin_step=%d,sparsity_function_end_step=%d"
            % (s["begin"], s["end"], s["frequency"], s["target"],
               DEFAULT_NBINS, s["begin"], s["end"]))
        with tf.control_dependencies([train]):
            pruning = contrib.model_pruning.Pruning(hparams, global_step=step)
            return pruning.conditional_mask_update_op()

    def with_library(step, train):
        pruning = MagnitudePruning(s["begin"], s["end"], s["frequency"],
                                   s["target"],
                                   nbins=None if exact else DEFAULT_NBINS,
                                   name="lm_pruning")
        with tf.control_dependencies([train]):
            return pruning.conditional_mask_update_op(step)

    reference, ours = _run(with_contrib, 32), _run(with_library, 32)
    updates = []
    for ref, got in zip(reference, ours):
        assert ref[0] == got[0]
        assert ref[3] == got[3], "last_mask_update_step at step %d" % ref[0]
        for ref_mask, mask in zip(ref[1], got[1]):
            np.testing.assert_array_equal(mask, ref_mask)
        assert got[2] == ref[2]  # thresholds, bit for bit
        for ref_weight, weight in zip(ref[4], got[4]):
            np.testing.assert_array_equal(weight, ref_weight)
        if ref[3] == ref[0]:
            updates.append(ref[0])
    assert updates == _update_steps(32, s["begin"], s["end"], s["frequency"])
    assert updates == [4, 8, 12, 16, 20, 24]
    # The masks really changed: the last update's sparsity of each matrix.
    for mask in ours[-1][1]:
        expected = closed_form_sparsity(24, s["begin"], s["end"], s["target"])
        assert abs((mask == 0).mean() - expected) < 0.02


@needs_contrib
def test_contrib_reference_and_library_share_checkpoints(tmp_path):
    """A checkpoint written with contrib's Pruning restores into the
    library's op (same variables, same names) and the schedule continues
    from its last update step."""
    path = str(tmp_path / "contrib.ckpt")
    weight_init = np.random.RandomState(3).randn(20, 30).astype(np.float32)
    with tf.Graph().as_default():
        step, train, _ = _pruned_model(weight_init)
        hparams = contrib.model_pruning.get_pruning_hparams().parse(
            "name=lm_pruning,begin_pruning_step=0,end_pruning_step=20,"
            "pruning_frequency=5,target_sparsity=0.5,nbins=4096,"
            "sparsity_function_begin_step=0,sparsity_function_end_step=20")
        with tf.control_dependencies([train]):
            op = contrib.model_pruning.Pruning(
                hparams, global_step=step).conditional_mask_update_op()
        with _session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(7):
                sess.run(op)
            tf.train.Saver().save(sess, path)
            names = sorted(v.op.name for v in tf.global_variables())
    with tf.Graph().as_default():
        step, train, _ = _pruned_model(weight_init)
        pruning = MagnitudePruning(0, 20, 5, 0.5, name="lm_pruning")
        with tf.control_dependencies([train]):
            op = pruning.conditional_mask_update_op(step)
        assert sorted(v.op.name for v in tf.global_variables()) == names
        with _session() as sess:
            tf.train.Saver().restore(sess, path)
            assert sess.run(pruning.last_update_step) == 5
            sess.run(op)
            sess.run(op)  # step 9: not due (5 + 5 > 9)
            assert sess.run(pruning.last_update_step) == 5
            sess.run(op)  # step 10
            assert sess.run(pruning.last_update_step) == 10


# -- every version ------------------------------------------------------------

def _cell_kernel_pruning(**kwargs):
    """A WeightDropLSTMCell(pruning_mask=True) trained by SGD with the
    library's op after each step."""
    step = tf.train.get_or_create_global_step()
    cell = WeightDropLSTMCell(N, pruning_mask=True, weight_drop_kr=0.8,
                              seed=4)
    out, _ = tf.nn.dynamic_rnn(cell, _inputs(), dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(out - 0.3))
    pruning = MagnitudePruning(**kwargs)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, step)
    with tf.control_dependencies([train]):
        update = pruning.conditional_mask_update_op(step)
    kernel = [v for v in cell.weights if v.op.name.endswith("/kernel")][0]
    return step, update, cell, kernel, pruning, _threshold_of(kernel)


@pytest.mark.parametrize("nbins", [DEFAULT_NBINS, 256, None])
def test_schedule_prunes_the_cell_kernel_by_magnitude(sess, nbins):
    begin, end, frequency, target = 2, 20, 3, 0.75
    step, update, cell, kernel, pruning, threshold = _cell_kernel_pruning(
        begin_step=begin, end_step=end, frequency=frequency,
        target_sparsity=target, nbins=nbins)
    sess.run(tf.global_variables_initializer())
    expected_updates = _update_steps(25, begin, end, frequency)
    assert expected_updates == [3, 6, 9, 12, 15, 18]
    previous_mask = sess.run(cell.pruning_mask_variable)
    for _ in range(25):
        sess.run(update)
        now, mask, weights, thr, last = sess.run(
            [step, cell.pruning_mask_variable, kernel, threshold,
             pruning.last_update_step])
        if now in expected_updates:
            assert last == now
            # The mask is |w| > threshold (>= for the exact quantile) on
            # the weights after this step's update; it keeps the largest.
            keep = (np.abs(weights) >= thr if nbins is None
                    else np.abs(weights) > thr)
            np.testing.assert_array_equal(mask, keep.astype(np.float32))
            if 0 < mask.sum() < mask.size:
                assert (np.abs(weights[mask == 1]).min()
                        >= np.abs(weights[mask == 0]).max())
            sparsity = float(pruning.sparsity_at(now))
            # Within the histogram's resolution: the threshold is a bin
            # edge, so the zeros are short of the schedule by less than the
            # entries of one bin (for a kernel this small, a few entries).
            zeros = (mask == 0).mean()
            if nbins is None:
                assert zeros == pytest.approx(
                    np.round(mask.size * sparsity) / mask.size, abs=1e-9)
            else:
                width = np.abs(weights).max() / nbins
                in_bin = np.mean(np.abs(np.abs(weights) - thr) <= width)
                assert sparsity - in_bin - 1e-9 <= zeros <= sparsity + 1e-9
        else:
            # No update outside the schedule steps: nothing assigned.
            assert last == (max([s for s in expected_updates if s < now],
                                default=0))
            np.testing.assert_array_equal(mask, previous_mask)
        effective = sess.run(cell.effective_kernel)
        assert np.all(effective[mask == 0] == 0.0)
        previous_mask = mask
    assert last == 18


def test_sparsity_at_end_step_is_the_target(sess):
    """With end_step an update step, every matrix ends at the target within
    one histogram bin (the 4096 bins over this kernel's range hold at most
    a few entries each)."""
    rng = np.random.RandomState(0)
    init = rng.randn(200, 300).astype(np.float32)
    step = tf.train.get_or_create_global_step()
    weight = tf.get_variable("w", initializer=init)
    mask = tf.get_variable("w_pruning_mask", initializer=np.ones_like(init),
                           trainable=False)
    threshold = tf.get_variable("w_pruning_threshold", [], trainable=False,
                                initializer=tf.zeros_initializer())
    _register_for_model_pruning(weight, mask, threshold, weight * mask)
    pruning = MagnitudePruning(0, 40, 10, 0.9)
    increment = tf.assign_add(step, 1)
    with tf.control_dependencies([increment]):
        update = pruning.conditional_mask_update_op(step)
    sess.run(tf.global_variables_initializer())
    for _ in range(45):
        sess.run(update)
    got_mask, thr = sess.run([mask, threshold])
    zeros = (got_mask == 0).mean()
    width = np.abs(init).max() / DEFAULT_NBINS
    in_bin = np.mean(np.abs(np.abs(init) - thr) <= width)
    assert 0.9 - in_bin <= zeros <= 0.9
    assert zeros == pytest.approx(0.9, abs=1e-3)
    # The threshold is a bin edge: k * max / nbins, k <= nbins, rounded
    # in float32 (width = max / 4096 is exact): within nbins u of an
    # integer, twice for the order of the product (was 1e-3, about it).
    edges = thr / width
    assert abs(edges - round(edges)) < 2 * DEFAULT_NBINS * U32
    np.testing.assert_array_equal(got_mask, np.abs(init) > thr)
    assert sess.run(pruning.last_update_step) == 40


def _registered(name, init):
    """A weight ``name`` with its mask and threshold, registered as the
    cells register theirs; returns the mask."""
    weight = tf.get_variable(name, initializer=init)
    mask = tf.get_variable(name + "_pruning_mask",
                           initializer=np.ones_like(init), trainable=False)
    threshold = tf.get_variable(name + "_pruning_threshold", [],
                                trainable=False,
                                initializer=tf.zeros_initializer())
    _register_for_model_pruning(weight, mask, threshold, weight * mask)
    return mask


def test_weight_sparsity_map_gives_a_weight_its_own_target(sess):
    """contrib's weight_sparsity_map: a weight whose name holds a key of
    the map ramps to that key's target on the same cubic schedule, the
    others to target_sparsity (exact quantile: round(s * n) zeros)."""
    rng = np.random.RandomState(1)
    inits = {"table/embedding": rng.randn(30, 20).astype(np.float32),
             "cell/kernel": rng.randn(24, 10).astype(np.float32)}
    masks = {n: _registered(n, v) for n, v in inits.items()}
    step = tf.train.get_or_create_global_step()
    pruning = MagnitudePruning(0, 12, 3, 0.9, nbins=None,
                               weight_sparsity_map={"embedding": 0.5})
    assert pruning.target_of("table/embedding") == 0.5
    assert pruning.target_of("cell/kernel") == 0.9
    with tf.control_dependencies([tf.assign_add(step, 1)]):
        update = pruning.conditional_mask_update_op(step)
    sess.run(tf.global_variables_initializer())
    for _ in range(13):
        sess.run(update)
        now, got = sess.run([step, masks])
        if now % 3:
            continue
        for name, target in (("table/embedding", 0.5), ("cell/kernel", 0.9)):
            size = got[name].size
            wanted = closed_form_sparsity(now, 0, 12, target)
            assert (got[name] == 0).sum() == round(size * wanted), (now, name)
            zeros = np.abs(inits[name])[got[name] == 0]
            if 0 < zeros.size < size:
                assert (np.abs(inits[name])[got[name] == 1].min()
                        >= zeros.max())


def test_weight_sparsity_map_refuses_what_contrib_refuses():
    _registered("a/embedding_kernel", np.ones((3, 4), np.float32))
    pruning = MagnitudePruning(0, 10, 2, 0.5, weight_sparsity_map={
        "embedding": 0.2, "kernel": 0.3})
    with pytest.raises(ValueError, match=r"weight_sparsity_map: weight "
                       r"a/embedding_kernel matches \['embedding', "
                       r"'kernel'\]"):
        pruning.conditional_mask_update_op(tf.constant(1))
    with pytest.raises(ValueError, match=r"weight_sparsity_map\['x'\] must "
                       r"be a finite number in \[0, 1\), got 1.5"):
        MagnitudePruning(0, 10, 2, 0.5, weight_sparsity_map={"x": 1.5})
    with pytest.raises(ValueError, match=r"weight_sparsity_map must be None "
                       r"or a dict"):
        MagnitudePruning(0, 10, 2, 0.5, weight_sparsity_map=["x:0.5"])


def test_histogram_threshold_against_the_exact_quantile(sess):
    """Same weights, same sparsity s: the 4096-bin threshold is the left
    edge of the bin where the cumulative fraction reaches s, so it prunes
    fewer entries than s * size, short by less than that bin's entries;
    the exact quantile prunes round(s * size). The masks differ only on
    the entries between the two thresholds. (In distance the thresholds may
    be several bin widths apart: with empty bins after the crossing one,
    the exact quantile's entry lies beyond them.)"""
    init = np.random.RandomState(2).standard_t(3, (64, 96)).astype(
        np.float32)
    weight = tf.get_variable("w", initializer=init)
    mask = tf.get_variable("w_pruning_mask", initializer=np.ones_like(init),
                           trainable=False)
    threshold = tf.get_variable("w_pruning_threshold", [], trainable=False,
                                initializer=tf.zeros_initializer())
    _register_for_model_pruning(weight, mask, threshold, weight * mask)
    step = tf.placeholder(tf.int32, [])
    histogram = MagnitudePruning(0, 10, 1, 0.95, name="histogram")
    exact = MagnitudePruning(0, 10, 1, 0.95, nbins=None, name="exact")
    ops = histogram.mask_update_op(step), exact.mask_update_op(step)
    sess.run(tf.global_variables_initializer())
    magnitude = np.abs(init)
    width = magnitude.max() / DEFAULT_NBINS
    for at in range(1, 11):
        results = []
        for op in ops:
            sess.run(op, {step: at})
            results.append(sess.run([threshold, mask]))
        (thr_h, mask_h), (thr_e, mask_e) = results
        sparsity = float(histogram.sparsity_at(at))
        assert thr_h <= thr_e
        zeros_h, zeros_e = int((mask_h == 0).sum()), int((mask_e == 0).sum())
        assert zeros_e == int(np.round(init.size * sparsity))
        crossing_bin = int(((magnitude > thr_h)
                            & (magnitude <= thr_h + width)).sum())
        assert zeros_h <= init.size * sparsity
        assert zeros_h > init.size * sparsity - crossing_bin - 1e-6
        differ = mask_h != mask_e
        assert np.all((magnitude[differ] > thr_h)
                      & (magnitude[differ] < thr_e))
        assert sess.run(histogram.last_update_step) == at


def test_partitioned_weights_and_masks(sess):
    """A partitioned kernel (num_unit_shards) is pruned as one matrix; a
    partitioned mask is assigned piece by piece."""
    cell = WeightDropLSTMCell(N, pruning_mask=True, num_unit_shards=2)
    tf.nn.dynamic_rnn(cell, _inputs(), dtype=tf.float32)
    partitioner = tf.fixed_size_partitioner(3)
    weight = tf.get_variable("w", [9, 4], partitioner=partitioner)
    mask = tf.get_variable("w_pruning_mask", [9, 4], partitioner=partitioner,
                           initializer=tf.ones_initializer(),
                           trainable=False)
    threshold = tf.get_variable("w_pruning_threshold", [], trainable=False,
                                initializer=tf.zeros_initializer())
    _register_for_model_pruning(weight, mask, threshold,
                                weight.as_tensor() * mask.as_tensor())
    pruning = MagnitudePruning(0, 10, 1, 0.5, nbins=None)
    update = pruning.mask_update_op(tf.constant(10))
    sess.run(tf.global_variables_initializer())
    sess.run(update)
    kernel = [v for v in tf.get_collection("kernel") if v is not weight][0]
    for w, m, t in [(kernel, cell.pruning_mask_variable,
                     _threshold_of_partitioned(kernel)),
                    (weight, mask, threshold)]:
        w_value, m_value, t_value = sess.run([w.as_tensor(), _full(m), t])
        np.testing.assert_array_equal(m_value, np.abs(w_value) >= t_value)
        assert (m_value == 0).mean() == pytest.approx(0.5, abs=0.5 / 36)


def _full(variable):
    return (variable.as_tensor() if hasattr(variable, "as_tensor")
            else variable)


def _threshold_of_partitioned(kernel):
    name = kernel.name[:-len("kernel")] + "pruning_threshold"
    return [v for v in tf.global_variables() if v.op.name == name][0]


def test_no_weights_or_no_step_raise_named_errors():
    pruning = MagnitudePruning(0, 10, 2, 0.5)
    step = tf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="no masked weights"):
        pruning.conditional_mask_update_op(step)
    with tf.Graph().as_default():
        pruning = MagnitudePruning(0, 10, 2, 0.5)
        with pytest.raises(ValueError, match="global_step must be given"):
            pruning.mask_update_op()
    with pytest.raises(DtypeError, match="global_step must be an int32 or "
                                         "int64 tensor, got float32"):
        pruning = MagnitudePruning(0, 10, 2, 0.5)
        pruning.is_update_step(tf.constant(1.0))
    with pytest.raises(ValueError, match="global_step must have rank 0"):
        pruning.is_update_step(tf.constant([1, 2]))


@pytest.mark.parametrize("kwargs,match", [
    (dict(begin_step=-1), r"begin_step must be an int >= 0, got -1"),
    (dict(begin_step=1.5), r"begin_step must be an int >= 0, got 1.5"),
    (dict(end_step=5), r"end_step must be > begin_step \(5\), got 5"),
    (dict(end_step="9"), r"end_step must be an int, got '9'"),
    (dict(frequency=0), r"frequency must be a positive int, got 0"),
    (dict(frequency=True), r"frequency must be a positive int, got True"),
    (dict(target_sparsity=1.0),
     r"target_sparsity must be a finite number in \[0, 1\), got 1.0"),
    (dict(target_sparsity=-0.1),
     r"target_sparsity must be a finite number in \[0, 1\), got -0.1"),
    (dict(target_sparsity=float("nan")), r"target_sparsity must be a finite"),
    (dict(nbins=0), r"nbins must be a positive int or None, got 0"),
    (dict(sparsity_begin_step=-2),
     r"sparsity_begin_step must be an int >= 0, got -2"),
    (dict(sparsity_begin_step=9, sparsity_end_step=9),
     r"sparsity_end_step must be > sparsity_begin_step \(9\), got 9"),
    (dict(exponent=0), r"exponent must be a finite number in \(0, inf\), "
                       r"got 0"),
    (dict(name=""), r"name must be a non-empty str, got ''"),
])
def test_bad_arguments_raise_named_errors(kwargs, match):
    args = dict(begin_step=5, end_step=10, frequency=2, target_sparsity=0.5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        MagnitudePruning(**args)


def test_mask_of_another_shape_is_refused():
    weight = tf.get_variable("w", [4, 5])
    mask = tf.get_variable("w_pruning_mask", [5, 4], trainable=False)
    threshold = tf.get_variable("w_pruning_threshold", [], trainable=False)
    _register_for_model_pruning(weight, mask, threshold, weight)
    pruning = MagnitudePruning(0, 10, 2, 0.5)
    with pytest.raises(ValueError, match=r"mask w_pruning_mask must have its "
                                         r"weight's shape \(4, 5\), got "
                                         r"\(5, 4\)"):
        pruning.mask_update_op(tf.train.get_or_create_global_step())



# -- the language model's op --------------------------------------------------

LM_PARAMS = dict(PARAMS, model="awd", clip=0.25, optimizer="sgd", nonmono=5,
                 pruning="magnitude", pruning_begin_step=0,
                 pruning_end_step=12, pruning_frequency=3,
                 target_sparsity=0.6)


def _contrib_lm_pruning_op(params, global_step, train_op):
    """What awd_lm's magnitude_pruning_op (graph.compression_ops) built
    before the library had its own op (TF 1.x only): the reference the
    language model matches."""
    flat = params.to_flat()   # the keys LM_PARAMS gives
    hparams = contrib.model_pruning.get_pruning_hparams().parse(
        "name=lm_pruning,begin_pruning_step=%d,end_pruning_step=%d,"
        "pruning_frequency=%d,target_sparsity=%r,nbins=4096,"
        "sparsity_function_begin_step=%d,sparsity_function_end_step=%d" % (
            flat["pruning_begin_step"], flat["pruning_end_step"],
            flat["pruning_frequency"], float(flat["target_sparsity"]),
            flat["pruning_begin_step"], flat["pruning_end_step"]))
    if flat.get("table_sparsity") is not None:
        # Uneven budgets as contrib spells them: name part -> target.
        from tf1_awd_sparse.awd_lm.graph import compression_ops
        targets = compression_ops.matrix_targets(params, _LM_SIZES)
        hparams.set_hparam("weight_sparsity_map", [
            "%s:%r" % (name.split("lm/")[1], t) for name, t in
            sorted(targets.items())])
    with tf.control_dependencies([train_op]):
        pruning = contrib.model_pruning.Pruning(hparams,
                                                global_step=global_step)
        return pruning.conditional_mask_update_op()


#: LM_PARAMS' pruned matrices: the 11 x 4 table, the kernels [4 + 6, 24]
#: and [6 + 4, 16].
_LM_SIZES = {"lm/embedding": 44, "lm/layer_0/lstm_0/kernel": 240,
             "lm/layer_1/lstm_1/kernel": 160}


def _train_lm(make_op, steps=15, **changes):
    """Trains the tiny AWD model ``steps`` steps with ``make_op``'s pruning
    (LM_PARAMS with ``changes``); returns the masks (and their weights) by
    name after every step."""
    from tf1_awd_sparse.awd_lm.graph import model
    from tf1_awd_sparse.awd_lm.graph.train_op import build_train_op
    from tf1_awd_sparse.transforms.kernel import PRUNING_MASKS, pruned_weight_name
    history = []
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        rng = np.random.RandomState(0)
        params = dict(LM_PARAMS, **changes)
        ids = rng.randint(0, params["vocab_size"], (3, 9))
        features = {"inputs": tf.constant(ids[:, :-1], tf.int32),
                    "targets": tf.constant(ids[:, 1:], tf.int32)}
        step = tf.train.get_or_create_global_step()
        out = model.build_lm(features, True, params)
        train_op, _ = build_train_op(out.loss, 1.0, params, step)
        op = make_op(as_params(params), step, train_op)
        names = {v.op.name for v in tf.global_variables()}
        assert "lm_pruning/last_mask_update_step" in names
        masks = tf.get_collection(PRUNING_MASKS)
        by_name = {v.op.name: v for v in tf.global_variables()}
        weights = [by_name[pruned_weight_name(m.op.name) + (
            "" if m.op.name.endswith("_pruning_mask") else "/kernel")]
            for m in masks]
        assert len(masks) == 3  # the embedding and the two kernels
        with _session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(op)
                history.append(sess.run([step, masks, weights]))
    return history


@pytest.mark.parametrize("table", [None, 0.3])
def test_language_model_prunes_by_the_schedule(table):
    """compression_ops.magnitude_pruning_op on this version: every mask at its
    schedule's sparsity after the last update (step 12), largest
    magnitudes kept; with table_sparsity (uneven budgets) the table ramps
    to it and the kernels to the fraction that keeps the model's zeros at
    the target (here 0.3 of 44 and 253 of 400 for 266 of 444)."""
    from tf1_awd_sparse.awd_lm.graph import compression_ops
    history = _train_lm(compression_ops.magnitude_pruning_op,
                        table_sparsity=table)
    targets = [0.6] * 3 if table is None else [0.3] + [253.0 / 400] * 2
    updates = _update_steps(15, 0, 12, 3)
    assert updates == [3, 6, 9, 12]
    for now, masks, weights in history:
        assert [m.size for m in masks] == [44, 240, 160]
        for mask, weight, target in zip(masks, weights, targets):
            if now < 3:
                assert mask.min() == 1.0
            if now in updates:
                expected = closed_form_sparsity(now, 0, 12, target)
                # These matrices have 44 - 240 entries: within a few of
                # the schedule (one histogram bin's entries, and rounding).
                assert abs((mask == 0).mean() - expected) <= 3.0 / mask.size
                assert (np.abs(weight[mask == 1]).min()
                        > np.abs(weight[mask == 0]).max())
    final = history[-1][1]
    assert all(abs((m == 0).mean() - t) <= 3.0 / m.size
               for m, t in zip(final, targets))
    assert abs(sum((m == 0).sum() for m in final) - 266) <= 6


@needs_contrib
@pytest.mark.parametrize("table", [None, 0.3])
def test_language_model_prunes_as_contrib_did(table):
    """On TF 1.x the language model's pruning is the op contrib built:
    identical masks and weights after every step (on 1.15, contrib's exact
    quantile against the library's 4096 bins: equal to the bin's
    resolution, checked by the sparsity); uneven budgets
    (``table_sparsity``) as contrib's ``weight_sparsity_map``."""
    from tf1_awd_sparse.awd_lm.graph import compression_ops
    ours = _train_lm(compression_ops.magnitude_pruning_op,
                     table_sparsity=table)
    reference = _train_lm(_contrib_lm_pruning_op, table_sparsity=table)
    exact = not _contrib_threshold_is_exact()
    for (now, masks, weights), (ref_now, ref_masks, ref_weights) in zip(
            ours, reference):
        assert now == ref_now
        for mask, ref_mask, weight, ref_weight in zip(
                masks, ref_masks, weights, ref_weights):
            if exact:
                np.testing.assert_array_equal(mask, ref_mask)
                np.testing.assert_array_equal(weight, ref_weight)
            else:
                assert abs((mask == 0).sum() - (ref_mask == 0).sum()) <= 3
