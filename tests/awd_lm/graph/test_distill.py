"""Issue 21: knowledge distillation from the float model in the compression
fine-tuning (`awd_lm.graph.distill`): the loss term against numpy from the
fetched logits, a teacher that is restored, never trained nor saved, whose
state the training loop carries (against one long window of the float
model), no teacher at weight 0, bad values named, and the pipeline's
parameters and config.json."""
import json
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.training import epochs, train, train_graph
from tf1_awd_sparse.awd_lm.training.compression import pipeline, stages
from tf1_awd_sparse.awd_lm.corpus import data, synthetic
from tf1_awd_sparse.awd_lm.graph import checkpoints, distill, model
from tf1_awd_sparse.awd_lm.inference import lm
from tf1_awd_sparse.awd_lm.distributed import model_fn
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from support.lm import FLOAT_LOG_PROB_ATOL, one_error_line, script
from support.tolerances import (U32, gamma, log_softmax_atol,
                                transcendental_rtol)


#: The float model's variables (2 layers), the teacher's.
FLOAT_NAMES = ["lm/embedding", "lm/softmax_bias"] + [
    "lm/layer_%d/lstm_%d/%s" % (i, i, k) for i in range(2)
    for k in ("kernel", "bias")]


def _corpus():
    corpus, _ = synthetic.hmm_corpus(seed=1, n_train=1600, n_valid=400,
                                     n_test=400, n_states=4, vocab_size=40)
    return corpus


def _params(**changes):
    params = presets.params_for("demo", "awd", dict({
        "emb_size": 12, "hidden_size": 16, "max_epochs": 1, "batch_size": 4,
        "eval_batch_size": 4, "bptt": 8, "finetune_epochs": 2,
        "quant_epochs": 1, "quant_delay": 0, "target_sparsity": 0.7,
        "patience": 9}, **changes))
    return presets.split_quant(as_params(params))[0]


@pytest.fixture(scope="module")
def teacher_run(tmp_path_factory):
    """A finished one-epoch float run: (corpus, params, run_dir, best)."""
    corpus = _corpus()
    run_dir = str(tmp_path_factory.mktemp("float"))
    summary = train.run(corpus, _params(), run_dir, log=lambda *a: None,
                        threads=1)
    return (corpus, as_params(summary.params), run_dir,
            train.best_checkpoint(run_dir))


def _student(teacher_run, weight=0.5, temperature=1.0, **changes):
    """A fine-tuning's parameters (plain SGD) distilled from the float
    run."""
    corpus, params, _, best = teacher_run
    return params.replace(**dict(dict(
        optimizer="sgd", lr=1.0, distill_weight=weight,
        distill_temperature=temperature, distill_from=best,
        vocab_size=len(corpus.vocab)), **changes))


def _session(params, checkpoint):
    """A session of `train.Graph(params)`'s instance, the model warm-started
    from and the teacher restored from ``checkpoint``."""
    g = train_graph.Graph(params, [n for n, _ in tf.train.list_variables(
        checkpoint)])
    graph, _, _, warm, teacher = g.instance(params.optimization.seed)
    sess = tf.Session(graph=graph)
    sess.run(g.init)
    warm.restore(sess, checkpoint)
    if teacher is not None:
        teacher.restore(sess, checkpoint)
    return g, sess


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _numpy_terms(student, teacher, temperature):
    """T^2 * mean CE(softmax(t / T), softmax(s / T)) and the mean KL."""
    log_p = _log_softmax(teacher.astype(np.float64) / temperature)
    log_q = _log_softmax(student.astype(np.float64) / temperature)
    p = np.exp(log_p)
    xent = -(p * log_q).sum(-1)
    kl = (p * (log_p - log_q)).sum(-1)
    return temperature ** 2 * xent.mean(), kl.mean()


def _term_atols(student, teacher, temperature):
    """What TF's float32 (term, kl) of ``distill.distill_terms`` can be
    from the float64 ones of the same logits: each log-softmax element
    within e = ``log_softmax_atol``, p = exp(log p) relatively within e +
    an exp's ulps; per token, xent = -sum p log q within e + (e + ulps +
    2 u + gamma(V)) xent, kl = sum p (log p - log q) within 2 e + (e +
    ulps + 2 u + gamma(V)) sum p |log p - log q| (kl cancels: no relative
    bound); the mean over N tokens gamma(N) of the largest, T^2 one u."""
    t = float(temperature)
    vocab, tokens = student.shape[-1], student.size // student.shape[-1]
    e = max(log_softmax_atol(np.float32(student / t)),
            log_softmax_atol(np.float32(teacher / t)))
    log_p = _log_softmax(teacher.astype(np.float64) / t)
    log_q = _log_softmax(student.astype(np.float64) / t)
    p = np.exp(log_p)
    factor = e + transcendental_rtol() + 2 * U32 + gamma(vocab)
    xent = -(p * log_q).sum(-1)
    spread = (p * np.abs(log_p - log_q)).sum(-1)
    kl = (p * (log_p - log_q)).sum(-1)
    term = t * t * (e + (factor + gamma(tokens)) * xent.max() + U32
                    * xent.mean())
    return term, 2 * e + factor * spread.max() + gamma(tokens) * kl.max()


def _first_window(g, corpus, params, training=True):
    stream = data.batchify(corpus.train, params.optimization.batch_size)
    x, y = epochs.window(stream, 0, params.optimization.bptt)
    state = g.zero_state(x.shape[0])
    extra = {g.training: training}
    extra.update(zip(g.teacher_state, g.zero_state(x.shape[0], True)))
    return g.feed(x, y, state, extra)


# -- (a) the loss term against numpy ---------------------------------------

@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_distillation_term_equals_numpy_from_the_fetched_logits(
        teacher_run, temperature):
    corpus = teacher_run[0]
    params = _student(teacher_run, temperature=temperature)
    g, sess = _session(params, teacher_run[3])
    with sess:
        student, teacher, term, kl = sess.run(
            [g.logits, g.teacher_logits, g.distill_term, g.distill_kl],
            _first_window(g, corpus, params))
    # Dropout in training: the student's logits differ from the teacher's.
    assert np.abs(student - teacher).max() > 1e-2
    want_term, want_kl = _numpy_terms(student, teacher, temperature)
    # Derived in _term_atols (were rtol 1e-5 and rtol 1e-4 + atol 1e-7:
    # relative to a kl that cancels towards 0, not to its terms' size).
    term_atol, kl_atol = _term_atols(student, teacher, temperature)
    np.testing.assert_allclose(term, want_term, rtol=0, atol=term_atol)
    np.testing.assert_allclose(kl, want_kl, rtol=0, atol=kl_atol)
    assert kl > 0


def test_loss_is_the_cross_entropy_plus_the_weighted_term(teacher_run):
    """Model 'plain' (no AR / TAR / weight decay): loss = xent + w * term."""
    corpus = teacher_run[0]
    params = _student(teacher_run, weight=0.7, temperature=2.0,
                      model="plain")
    g, sess = _session(params, teacher_run[3])
    with sess:
        loss, xent, term = sess.run([g.loss, g.xent, g.distill_term],
                                    _first_window(g, corpus, params))
    assert term > 0
    # The same fetched float32 values: TF rounds the product and a few
    # additions (zeros add exactly), u of the loss each; rel 1e-6 = 17 u.
    np.testing.assert_allclose(loss, xent + 0.7 * term, rtol=1e-6)


# -- (b) the teacher: restored, never trained, never saved -----------------

def test_teacher_keeps_the_checkpoint_values_and_is_not_trainable(
        teacher_run):
    corpus, _, _, best = teacher_run
    params = _student(teacher_run)
    g, sess = _session(params, best)
    reader = tf.train.load_checkpoint(best)
    with sess:
        graph = sess.graph
        assert not [v for v in graph.get_collection(
            tf.GraphKeys.TRAINABLE_VARIABLES) if "teacher" in v.op.name]
        assert not [v for v in graph.get_collection(
            tf.GraphKeys.GLOBAL_VARIABLES) if "teacher" in v.op.name]
        teacher = {v.op.name: v for v in graph.get_collection(
            tf.GraphKeys.LOCAL_VARIABLES)}
        assert sorted(teacher) == sorted("teacher/" + n
                                         for n in FLOAT_NAMES)
        stream = data.batchify(corpus.train, params.optimization.batch_size)
        epochs.train_epoch(sess, g, stream, params, 1)
        for name, variable in teacher.items():
            np.testing.assert_array_equal(
                sess.run(variable), reader.get_tensor(name[len("teacher/"):]))
        # The student did train (the test could fail).
        student = sess.run(graph.get_tensor_by_name("lm/embedding:0"))
        assert np.abs(student - reader.get_tensor("lm/embedding")).max() > 0


@pytest.mark.parametrize("student", [
    {"sparsity": "variational_dropout", "sparsity_weight": 1e-3,
     "sparsity_ramp_steps": 10},
    {"pruning": "magnitude", "pruning_end_step": 10,
     "target_sparsity": 0.5},
    {"pruning": "fixed"},
    {"quant": True, "quant_delay": 0}], ids=["vd", "magnitude", "fixed",
                                              "quant"])
def test_teacher_is_the_float_model_whatever_the_student(teacher_run,
                                                         student):
    """The teacher holds the float model's variables only (no sparse
    auxiliary variable, mask or range); none is trainable or global."""
    g = train_graph.Graph(_student(teacher_run, **student))
    with tf.Graph().as_default():
        tf.train.import_meta_graph(g.meta_graph)
        local = sorted(v.op.name for v in tf.local_variables())
        assert not [v for v in tf.global_variables() + tf.trainable_variables()
                    if v.op.name.startswith("teacher/")]
    assert local == sorted("teacher/" + n for n in FLOAT_NAMES)


def test_student_checkpoints_hold_no_teacher_and_load(teacher_run,
                                                      tmp_path):
    corpus, _, _, best = teacher_run
    params = _student(teacher_run, max_epochs=2)
    run_dir = str(tmp_path / "student")
    summary = train.run(corpus, params, run_dir, log=lambda *a: None,
                        threads=1, init_from=best)
    # Epoch 2 restored the teacher again (it is not in last/).
    assert summary.epochs_run == 2
    for epoch in summary.epochs:
        assert np.isfinite(epoch.distill_kl) and epoch.distill_kl > 0
    plain = params.replace(distill_weight=0.0, distill_from=None)
    with tf.Graph().as_default():
        tf.train.import_meta_graph(train_graph.Graph(plain).meta_graph)
        want = sorted(v.op.name for v in tf.global_variables())
    for prefix in (train.best_checkpoint(run_dir),
                   tf.train.latest_checkpoint(os.path.join(run_dir, "last"))):
        names = sorted(n for n, _ in tf.train.list_variables(prefix))
        assert names == want
    with open(os.path.join(run_dir, "config.json")) as handle:
        recorded = json.load(handle)["params"]
    assert (recorded["distill_weight"], recorded["distill_from"]) == (0.5,
                                                                      best)
    model_ = lm.LanguageModel.load(run_dir)
    try:
        ppl = model_.perplexity(" ".join(corpus.vocab[i]
                                         for i in corpus.test[:200]))
    finally:
        model_.close()
    assert np.isfinite(ppl) and ppl > 1


# -- (c) weight 0: nothing changes ------------------------------------------

def test_weight_zero_builds_the_graph_without_distillation(teacher_run):
    params = _student(teacher_run, weight=0.0)
    without = params.without(*(k for k in params.to_flat()
                               if k.startswith("distill")))
    zero, none = train_graph.Graph(params), train_graph.Graph(without)
    nodes = [[n.name for n in g.meta_graph.graph_def.node]
             for g in (zero, none)]
    assert nodes[0] == nodes[1]
    assert not [n for n in nodes[0] if n.startswith("teacher")]
    assert zero.teacher_state == [] and zero.distill_kl is None
    assert zero.teacher_saver_def is None
    with_teacher = train_graph.Graph(_student(teacher_run))
    assert [n.name for n in with_teacher.meta_graph.graph_def.node
            if n.name.startswith("teacher/")]


# -- (d) the teacher's state is carried across windows ----------------------

class _Recorder(object):
    """A session that also fetches ``extra`` and records each call's feed
    and those values."""

    def __init__(self, sess, extra):
        self.sess, self.extra, self.calls = sess, list(extra), []

    def run(self, fetches, feed):
        res = self.sess.run(list(fetches) + self.extra, feed)
        self.calls.append((dict(feed), res[len(fetches):]))
        return res[:len(fetches)]


def _float_logits(params, checkpoint, inputs):
    """The float model's logits in evaluation mode over ``inputs`` from a
    zero state, in one window (an independent graph)."""
    with tf.Graph().as_default():
        x = tf.constant(inputs)
        out = model.build_lm({"inputs": x, "targets": x}, False, params)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, checkpoint)
            return sess.run(out.logits)


def test_training_loop_carries_the_teachers_state(teacher_run):
    corpus, float_params, _, best = teacher_run
    params = _student(teacher_run)
    g, sess = _session(params, best)
    stream = data.batchify(corpus.train,
                           params.optimization.batch_size)[:, :40]
    with sess:
        recorder = _Recorder(sess, [g.teacher_logits])
        epochs.train_epoch(recorder, g, stream, params, 1)
    (feed1, _), (feed2, (logits2,)) = recorder.calls[:2]
    for name in g.teacher_state:   # reset at the epoch's start
        assert not feed1[name].any()
    x1, x2 = feed1[g.inputs], feed2[g.inputs]
    np.testing.assert_array_equal(x2[:, 0], stream[:, x1.shape[1]])
    both = _float_logits(float_params.replace(vocab_size=len(corpus.vocab)),
                         best, np.concatenate([x1, x2], 1))
    want = both[:, x1.shape[1]:]
    # Two float32 graphs of the model (hidden 16) in other shapes (two
    # windows against one): FLOAT_LOG_PROB_ATOL's derivation (was atol
    # 1e-4 + rtol 1e-4, which let logits of size ~10 be 1e-3 off).
    np.testing.assert_allclose(logits2, want, rtol=0,
                               atol=FLOAT_LOG_PROB_ATOL)
    # From a zero state the second window's logits differ: the state
    # matters, so the comparison above checks that it was carried.
    alone = _float_logits(float_params.replace(vocab_size=len(corpus.vocab)),
                          best, x2)
    assert np.abs(alone - want).max() > 1e-3


# -- (e) bad values, named -------------------------------------------------

@pytest.mark.parametrize("key, value", [
    ("distill_weight", -1.0), ("distill_weight", float("nan")),
    ("distill_temperature", 0.0), ("distill_temperature", -2.0)])
def test_bad_values_are_named(key, value):
    with pytest.raises(ValueError, match=key):
        presets.params_for("demo", "awd", {key: value})


@pytest.mark.parametrize("flag, value", [("--distill-weight", "-1"),
                                         ("--distill-temperature", "0")])
def test_bad_flags_are_named(capsys, tmp_path, flag, value):
    line = one_error_line(capsys, lambda: script.main(
        ["--out", str(tmp_path / "out"), "%s=%s" % (flag, value)]))
    assert flag in line and value in line, line
    assert not (tmp_path / "out").exists()


def test_a_weight_without_a_teacher_is_refused_before_anything_runs(
        teacher_run, tmp_path):
    corpus = teacher_run[0]
    params = _student(teacher_run, distill_from=None)
    with pytest.raises(ValueError, match=r"distill_from.*distill_weight"):
        model.check_params(params)
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match="distill_from"):
        train.run(corpus, params, str(run_dir), log=lambda *a: None)
    assert not run_dir.exists()
    with pytest.raises(checkpoints.CheckpointError, match="distill_from"):
        train.run(corpus, params.replace(distill_from=str(tmp_path / "none")),
                  str(run_dir), log=lambda *a: None)
    with pytest.raises(ValueError, match="distill_from"):
        presets.check_params({"distill_from": ""})
    with pytest.raises(ValueError, match="temperature"):
        distill.distill_terms(tf.zeros([2, 3]), tf.zeros([2, 3]), 0.0)


def test_estimator_training_refuses_distillation(teacher_run):
    params = _student(teacher_run)
    x = tf.placeholder(tf.int32, [2, 3])
    with pytest.raises(ValueError, match="distill_weight"):
        model_fn.train_step({"inputs": x}, x, params)


# -- (f) the pipeline --------------------------------------------------------

def test_pipeline_parameters_distil_the_techniques_not_the_reference():
    params = as_params(presets.params_for("demo", "awd", {
        "distill_weight": 0.5, "distill_temperature": 2.0,
        "compress": "magnitude"}))
    teacher = "float/best/model.ckpt"
    assert "distill_weight" not in presets.split_quant(params)[0].to_flat()
    for run in (stages.finetune_params(params, "magnitude", 10, teacher),
                stages.finetune_params(params, "l0", 10, teacher),
                stages.survivors_params(params, teacher)):
        assert (run.distill.distill_weight, run.distill.distill_temperature,
                run.stage.distill_from) == (0.5, 2.0, teacher)
    reference = stages.reference_params(params)
    assert reference.distill.distill_weight == 0.0
    assert reference.stage.distill_from is None
    with pytest.raises(ValueError, match="teacher"):
        stages.finetune_params(params, "magnitude", 10)
    off = as_params(presets.params_for("demo", "awd"))
    for run in (stages.finetune_params(off, "magnitude", 10, teacher),
                stages.survivors_params(off, teacher)):
        assert run.distill.distill_weight == 0.0
        assert "distill_from" not in run.to_flat()


def test_pipeline_records_distillation_and_resumes(teacher_run, tmp_path):
    corpus, _, float_dir, best = teacher_run
    params = presets.params_for("demo", "awd", {
        "emb_size": 12, "hidden_size": 16, "batch_size": 4,
        "eval_batch_size": 4, "bptt": 8, "finetune_epochs": 2,
        "quant_epochs": 1, "quant_delay": 0, "target_sparsity": 0.7,
        "patience": 9, "distill_weight": 0.5, "distill_temperature": 2.0})
    with open(os.path.join(float_dir, "summary.json")) as handle:
        float_summary = json.load(handle)
    out = str(tmp_path / "compress")

    def run(resume):
        # The stage that distils (ramp, cut, survivors); the reference
        # (test above) and the later stages (prune, QAT, export) never
        # see the settings.
        run_ = pipeline.Pipeline(
            corpus, as_params(params), float_summary, float_dir, out,
            {"resume": resume, "log": lambda *a: None, "progress": None,
             "threads": 1})
        return pipeline.sparsify(run_, ["magnitude"], 1)

    first = run(False)
    for stage in ("mag", "mag_ft"):
        with open(os.path.join(out, stage, "config.json")) as handle:
            recorded = json.load(handle)["params"]
        assert (recorded["distill_weight"], recorded["distill_temperature"],
                recorded["distill_from"]) == (0.5, 2.0, best), stage
        with open(os.path.join(out, stage, "summary.json")) as handle:
            assert all(e["distill_kl"] > 0
                       for e in json.load(handle)["epochs"])
    # Resumed: every stage finished, nothing retrained (the same rows,
    # their training seconds included).
    again = run(True)
    assert [r["row"] for r in again] == [r["row"] for r in first]
    assert stages.survivors_params(as_params(params),
                                   best).stage.distill_from == best


def test_pipeline_distils_from_the_reference_when_asked(teacher_run,
                                                         tmp_path):
    """distill_teacher='reference': the reference trains first and both
    phases of each technique distil from its best checkpoint; the
    reference itself does not distil."""
    corpus, _, float_dir, best = teacher_run
    params = presets.params_for("demo", "awd", {
        "emb_size": 12, "hidden_size": 16, "batch_size": 4,
        "eval_batch_size": 4, "bptt": 8, "finetune_epochs": 2,
        "target_sparsity": 0.7, "patience": 9, "distill_weight": 0.5,
        "distill_teacher": "reference"})
    with open(os.path.join(float_dir, "summary.json")) as handle:
        float_summary = json.load(handle)
    out = str(tmp_path / "compress")
    run_ = pipeline.Pipeline(
        corpus, as_params(params), float_summary, float_dir, out,
        {"resume": False, "log": lambda *a: None, "progress": None,
         "threads": 1})
    assert run_.teacher_is_reference()
    runs = pipeline.sparsify(run_, ["reference", "magnitude"], 2)
    assert [r["technique"] for r in runs] == ["-", "magnitude"]
    reference_best = train.best_checkpoint(os.path.join(out, "reference"))
    assert reference_best != best
    for stage, teacher in (("reference", None), ("mag", reference_best),
                           ("mag_ft", reference_best)):
        with open(os.path.join(out, stage, "config.json")) as handle:
            recorded = json.load(handle)["params"]
        assert recorded.get("distill_from") == teacher, stage
    with pytest.raises(ValueError, match="distill_teacher"):
        presets.params_for("demo", "awd", {"distill_teacher": "teacher"})
