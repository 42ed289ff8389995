"""The compression pipeline on a tiny language model (issue 12): every
stage's figures against an independent reference, zeros that stay zero
from the pruned checkpoint through quantization-aware training into the
.tflite file, the TFLite models' perplexity against the TF graph's, and
resume at every stage boundary."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.training import train
from tf1_awd_sparse.awd_lm.training.compression import (
    cuts, pipeline, rows as rows_, ship, stages, tflite)
from tf1_awd_sparse.awd_lm.corpus import data, synthetic
from tf1_awd_sparse.awd_lm.inference import export, lm_runner, tflite_weights
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.config.runrecord import RunSummary
from tf1_awd_sparse.export import sparse_storage
from support import ROOT
from support.versions import needs_litert
from support.lm import FLOAT_LOG_PROB_ATOL, FLOAT_PPL_RTOL, one_error_line
from support.lm_api import summary_json

TECHNIQUES = ["variational_dropout", "l0", "magnitude"]


def _corpus():
    corpus, _ = synthetic.hmm_corpus(seed=1, n_train=2400, n_valid=600,
                                     n_test=600, n_states=4, vocab_size=40)
    return corpus


def _params():
    return presets.params_for("demo", "awd", {
        "emb_size": 12, "hidden_size": 16, "max_epochs": 2, "batch_size": 4,
        "eval_batch_size": 4, "bptt": 8, "finetune_epochs": 3,
        "quant_epochs": 1, "quant_delay": 0, "target_sparsity": 0.7,
        "compress_sparsity_weight": 0.002, "patience": 9})


def _phases(params):
    """`presets.split_quant` of a dict, as flat dicts (None: no phase)."""
    return tuple(None if p is None else p.to_flat()
                 for p in presets.split_quant(as_params(params)))


def _run(out, resume=False, float_dir=None, **changes):
    corpus, params = _corpus(), dict(_params(), **changes)
    float_params, _ = _phases((params))
    float_dir = float_dir or os.path.join(out, "float")
    summary = train.run(corpus, float_params, float_dir, resume=True,
                        log=lambda *a: None, threads=1)
    return pipeline.run_pipeline(
        corpus, params, summary, float_dir, os.path.join(out, "compress"),
        TECHNIQUES, resume=resume, log=lambda *a: None, threads=1,
        parallel=1)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted pipeline run (module-wide: the tests read it)."""
    out = str(tmp_path_factory.mktemp("reference"))
    return out, _run(out)


def test_rows_and_summary_json(reference):
    out, result = reference
    stages = [r["stage"] for r in result["stages"]]
    # TF 2.x adds the int8 file stored sparse (TF 1.x cannot write it,
    # and the table says so).
    assert stages == ["float", "reference", "sparse", "sparse", "sparse",
                      "qat", "tflite_float", "tflite_uint8"] + (
                          ["tflite_int8", "tflite_int8_fused",
                           "tflite_int8_fused_pruned"]
                          if sparse_storage.available() else [])
    # Under the notes, the recommended file's line (last).
    assert result["table"][-2].startswith("tflite_int8")
    assert ("needs TensorFlow 2.x" in result["table"][-2]) != \
        sparse_storage.available()
    with open(os.path.join(out, "compress", "summary.json")) as handle:
        written = json.load(handle)
    assert written["stages"] == result["stages"]
    reference_ppl = result["stages"][1]["test_ppl"]
    for row in result["stages"]:
        for key in ("stage", "technique", "test_ppl", "nonzero_weights",
                    "total_weights", "bytes", "gzip_bytes"):
            assert key in row
        assert row["ratio_to_float"] == pytest.approx(
            row["test_ppl"] / result["stages"][0]["test_ppl"])
        assert row["ratio_to_reference"] == pytest.approx(
            row["test_ppl"] / reference_ppl)
        assert row["target_sparsity"] == 0.7
        zeros = row["total_weights"] - row["nonzero_weights"]
        if row["stage"] in ("float", "reference"):
            assert row["reached_target"] is None
        else:
            assert row["reached_target"] == (
                zeros >= round(0.7 * row["total_weights"]))
    # The reference: the float model fine-tuned, nothing compressed.
    assert result["stages"][1]["nonzero_weights"] == result["stages"][1][
        "total_weights"]
    assert result["chosen_reached_target"] is True
    # Every technique ends with exactly round(0.7 * size) zeros per matrix
    # (the exact cut; a tie at the threshold would keep a few more).
    sizes = [int(np.prod(s)) for s in tflite_weights.weight_shapes(as_params(dict(
        _params(), vocab_size=len(_corpus().vocab))))]
    exact = sum(int(round(0.7 * n)) for n in sizes)
    for row in result["stages"]:
        if row["stage"] == "sparse":
            zeros = row["total_weights"] - row["nonzero_weights"]
            assert zeros == exact, row["technique"]
    assert any(line.split("|")[6].strip() == "yes"
               for line in result["table"][2:])


def test_pruned_checkpoint_holds_the_evaluation_weights(reference):
    """The chosen technique's survivors (dense weights, fixed masks) are
    what the pruned checkpoint holds; the cut checkpoint holds the first
    phase's evaluation weights at exactly the target's zeros."""
    out, result = reference
    chosen = result["chosen"]
    short = {"variational_dropout": "vd", "l0": "l0", "magnitude": "mag"}
    best = train.best_checkpoint(os.path.join(out, "compress",
                                              short[chosen] + "_ft"))
    reader = tf.train.load_checkpoint(best)
    pruned = tf.train.load_checkpoint(
        os.path.join(out, "compress", "pruned", "model.ckpt"))
    for name in cuts.weight_names(as_params(_params())):
        expected = reader.get_tensor(name) * reader.get_tensor(_mask(name))
        got = pruned.get_tensor(name)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(pruned.get_tensor(_mask(name)),
                                      (got != 0).astype(np.float32))
    for technique in TECHNIQUES:
        phase = os.path.join(out, "compress", short[technique])
        last = tf.train.load_checkpoint(
            tf.train.latest_checkpoint(os.path.join(phase, "last")))
        cut = tf.train.load_checkpoint(
            os.path.join(phase + "_cut", "model.ckpt"))
        for name in cuts.weight_names(as_params(_params())):
            theta = last.get_tensor(name)
            # The reference, independent of the library: the technique's
            # score and evaluation weights written out in numpy.
            if technique == "magnitude":
                survivor = theta * last.get_tensor(_mask(name))
                score = np.abs(survivor)
            elif technique == "l0":
                aux = last.get_tensor(_aux(name, "log_alpha"))
                gate = np.clip(1.0 / (1.0 + np.exp(-aux)) * 1.2 - 0.1, 0, 1)
                survivor = np.where(gate > 0, theta * gate, theta)
                score = 1.0 / (1.0 + np.exp(-(aux - 2.0 / 3.0
                                              * np.log(0.1 / 1.1))))
            else:
                log_alpha = last.get_tensor(_aux(name, "log_sigma2")) - \
                    np.log(theta ** 2 + 1e-8)
                survivor = theta
                score = -log_alpha
            zeros = int(round(0.7 * theta.size))
            keep = score >= np.sort(score, axis=None)[zeros]
            np.testing.assert_allclose(cut.get_tensor(name), survivor * keep,
                                       rtol=1e-6, atol=1e-7)


def _mask(name):
    return (name[:-len("kernel")] + "pruning_mask" if name.endswith("kernel")
            else name + "_pruning_mask")


def _aux(theta_name, aux):
    if theta_name.endswith("/kernel"):
        return theta_name[:-len("kernel")] + aux
    return theta_name + "_" + aux


def test_zeros_stay_zero_through_qat_and_into_the_tflite_file(reference):
    out, result = reference
    params = _params()
    pruned = tf.train.load_checkpoint(
        os.path.join(out, "compress", "pruned", "model.ckpt"))
    quant_best = tf.train.load_checkpoint(
        train.best_checkpoint(os.path.join(out, "compress", "qat")))
    for name in cuts.weight_names(as_params(params)):
        zero = pruned.get_tensor(name) == 0
        mask_name = (name[:-len("kernel")] + "pruning_mask"
                     if name.endswith("kernel") else name + "_pruning_mask")
        # The mask held through QAT; the weights it zeroes are zero in use.
        np.testing.assert_array_equal(quant_best.get_tensor(mask_name),
                                      (~zero).astype(np.float32))
    # Read the weights back from the uint8 file: every pruned entry is
    # the zero point (TFLite stores FullyConnected weights transposed), in
    # every tensor of the weight's shape (a converter may store a copy per
    # unrolled step; the shapes here differ from weight to weight).
    path = os.path.join(out, "compress", "tflite_uint8.tflite")
    interpreter = tf.lite.Interpreter(model_path=path)
    interpreter.allocate_tensors()
    details = interpreter.get_tensor_details()
    shapes = tflite_weights.weight_shapes(as_params(dict(params, vocab_size=len(
        _corpus().vocab))))
    names = cuts.weight_names(as_params(params))
    assert len(set(shapes)) == len(shapes)
    for name, shape in zip(names, shapes):
        copies = [d for d in details if tuple(d["shape"]) == shape]
        assert copies
        zero = pruned.get_tensor(name) == 0
        if name.endswith("kernel"):
            zero = zero.T
        assert zero.any()
        for detail in copies:
            assert detail["dtype"] == np.uint8
            stored = interpreter.get_tensor(detail["index"])
            assert np.all(stored[zero] == detail["quantization"][1])
    row = [r for r in result["stages"] if r["stage"] == "tflite_uint8"][0]
    qat = [r for r in result["stages"] if r["stage"] == "qat"][0]
    assert row["nonzero_weights"] <= qat["nonzero_weights"]


class _GraphBuilt(Exception):
    """Stands for the training graph's construction."""


def test_resuming_a_finished_run_builds_no_graph(reference, monkeypatch):
    """A finished run resumed (as every finished stage of a resumed
    pipeline is) returns its summary without building its training graph;
    one resumed with more epochs builds it."""
    out, result = reference
    float_params, _ = _phases((_params()))
    float_dir = os.path.join(out, "float")

    def no_graph(*args, **kwargs):
        raise _GraphBuilt()

    monkeypatch.setattr(train, "Graph", no_graph)
    summary = train.run(_corpus(), float_params, float_dir, resume=True,
                        log=lambda *a: None, threads=1)
    assert summary.test_ppl == result["stages"][0]["test_ppl"]
    assert summary.epochs_run == float_params["max_epochs"]
    with pytest.raises(_GraphBuilt):
        train.run(_corpus(), dict(float_params,
                                  max_epochs=float_params["max_epochs"] + 1),
                  float_dir, resume=True, log=lambda *a: None, threads=1)


def test_tflite_perplexity_equals_the_tf_graphs(reference):
    out, result = reference
    rows = {r["stage"]: r for r in result["stages"]}
    chosen = [r for r in result["stages"] if r["stage"] == "sparse"
              and r["technique"] == result["chosen"]][0]
    # The float file computes the pruned float model (the chosen sparse
    # model's evaluation function); the uint8 file the fake-quant graph.
    assert rows["tflite_float"]["test_ppl"] == pytest.approx(
        chosen["test_ppl"], rel=FLOAT_PPL_RTOL)
    assert rows["tflite_uint8"]["test_ppl"] == pytest.approx(
        rows["qat"]["test_ppl"], rel=2e-3)
    if "tflite_int8" in rows:
        # The QAT model's weights as int8, float activations, stored
        # sparse: within 2 % of its fake-quant graph (issue 32), and
        # smaller than the uint8 file, with every zero kept (and, as in the
        # uint8 file, a few small weights rounded to zero).
        int8 = rows["tflite_int8"]
        assert int8["test_ppl"] == pytest.approx(rows["qat"]["test_ppl"],
                                                 rel=2e-2)
        assert int8["bytes"] < rows["tflite_uint8"]["bytes"]
        assert 0.98 * rows["qat"]["nonzero_weights"] <= \
            int8["nonzero_weights"] <= rows["qat"]["nonzero_weights"]
        # The same weights in 1 x 16 blocks, one fused LSTM op per layer
        # (one token a call): within 2 % of the fake-quant graph too, and
        # every row timed against the fastest dense file, which the table
        # names.
        fused = rows["tflite_int8_fused"]
        assert fused["test_ppl"] == pytest.approx(rows["qat"]["test_ppl"],
                                                  rel=2e-2)
        assert fused["bytes"] < rows["tflite_uint8"]["bytes"]
        assert fused["tokens_scored"] == rows["tflite_uint8"][
            "tokens_scored"]
        # The pruned model's weights in the same layout (no QAT): its TF
        # graph's (the sparse row's) perplexity within the int8 weights'
        # rounding, the same weights counted.
        pruned = rows["tflite_int8_fused_pruned"]
        assert pruned["test_ppl"] == pytest.approx(
            rows["sparse"]["test_ppl"], rel=2e-2)
        # The pruned model's mask, less the few small weights that round to
        # int8 zero (the QAT file's count can differ by a weight or so: its
        # weights trained on).
        assert 0.98 * chosen["nonzero_weights"] <= \
            pruned["nonzero_weights"] <= chosen["nonzero_weights"]
        # The same blocks stored (a block the QAT rounding empties is rare).
        assert pruned["bytes"] == pytest.approx(fused["bytes"], rel=2e-2)
        for stage in ("tflite_float", "tflite_uint8", "tflite_int8",
                      "tflite_int8_fused", "tflite_int8_fused_pruned"):
            assert rows[stage]["x_fastest_dense"] > 0
        assert any(line.startswith("ms/token: one thread") and
                   "tflite_int8_fused" in line for line in result["table"])
    # Whole test stream, window by window.
    stream = data.batchify(_corpus().test, _params()["eval_batch_size"])
    assert rows["tflite_uint8"]["tokens_scored"] == stream.shape[0] * (
        stream.shape[1] - 1)


@needs_litert
def test_litert_scores_the_files_as_tf_lite_does(reference):
    """Both exported language models in LiteRT's interpreter: the uint8
    model's log-probabilities exactly tf.lite's, the float model's to
    float32 rounding, window by window over the whole test stream."""
    out, result = reference
    stream = data.batchify(_corpus().test, _params()["eval_batch_size"])
    for stage in ("tflite_uint8", "tflite_float"):
        path = os.path.join(out, "compress", stage + ".tflite")
        windows = [list(lm_runner.LMRunner(path, name).windows(stream))
                   for name in ("tf", "litert")]
        assert len(windows[0]) == len(windows[1]) > 1
        for (want, n), (got, m) in zip(*windows):
            assert n == m
            if stage == "tflite_uint8":
                np.testing.assert_array_equal(got, want)
            else:
                # Two builds of the float kernels (their blocking may
                # differ): float32 rounding of the LM.
                np.testing.assert_allclose(got, want, rtol=0,
                                           atol=FLOAT_LOG_PROB_ATOL)
        row = [r for r in result["stages"] if r["stage"] == stage][0]
        assert lm_runner.tflite_perplexity(path, stream, interpreter="litert")[
            0] == pytest.approx(row["test_ppl"], rel=FLOAT_PPL_RTOL)


class _Killed(Exception):
    """Stands for a kill between two stages."""


# Every boundary between two stages, in pipeline order: after the float
# model, between two fine-tunings, before the strip, before QAT, before
# each export.
#: The files made from the QAT checkpoint: uint8, and on TF 2.x the int8
#: weights stored sparse.
QAT_EXPORTS = ["tflite_uint8.tflite"] + (
    ["tflite_int8.tflite", "tflite_int8_fused.tflite"]
    if sparse_storage.available() else [])
#: The files written after the float one, in order: those and (TF 2.x) the
#: pruned model's fused file.
AFTER_FLOAT_EXPORT = QAT_EXPORTS + (
    ["tflite_int8_fused_pruned.tflite"]
    if sparse_storage.available() else [])
#: The streaming twins every run times (in a temporary folder, each time):
#: each file's, then the fastest dense file's (TF 2.x).
STREAMED = [name[:-len(".tflite")] + tflite.STREAM_SUFFIX
            for name in ["tflite_float.tflite"] + AFTER_FLOAT_EXPORT] + (
    ["int8_dense_XNNPACK" + tflite.STREAM_SUFFIX]
    if sparse_storage.available() else [])

BOUNDARIES = ["before_sparse", "before_survivors", "between_sparse",
              "before_prune",
              "before_qat", "before_float_export", "before_uint8_export"]


def _killing_at(boundary, originals):
    """Stand-ins for the stage functions that raise `_Killed` at one
    boundary and otherwise call the originals."""
    run, prune, export_lm = originals
    sparse_dirs = {"before_sparse": "vd", "before_survivors": "vd_ft",
                   "between_sparse": "l0"}

    def killing_run(corpus, params, run_dir, *args, **kwargs):
        if (boundary == "before_qat" and run_dir.endswith("qat")) or (
                run_dir.endswith(os.sep + sparse_dirs.get(boundary, "-"))):
            raise _Killed()
        return run(corpus, params, run_dir, *args, **kwargs)

    def killing_prune(*args, **kwargs):
        if boundary == "before_prune":
            raise _Killed()
        return prune(*args, **kwargs)

    def killing_export(params, checkpoint, path, *args, **kwargs):
        if (boundary, "uint8" in path) in (("before_float_export", False),
                                            ("before_uint8_export", True)):
            raise _Killed()
        return export_lm(params, checkpoint, path, *args, **kwargs)

    return killing_run, killing_prune, killing_export


# Slow (about 40 s): runs on the default version (docs/testing.md); the
# resume bookkeeping it checks is the pipeline's own Python, and training's
# kill-and-resume runs on every version (test_lm_script.py).
@pytest.mark.slow
def test_resume_at_every_stage_boundary_equals_uninterrupted(
        reference, tmp_path, monkeypatch):
    """One run killed at each boundary in turn and resumed each time (so
    every boundary is a resume point) ends with the uninterrupted run's
    figures."""
    ref_out, ref = reference
    out = str(tmp_path)
    float_dir = os.path.join(ref_out, "float")
    originals = (train.run, cuts.prune_checkpoint, export.export_lm)
    targets = ((train, "run"), (cuts, "prune_checkpoint"),
               (export, "export_lm"))
    for i, boundary in enumerate(BOUNDARIES):
        for (module, name), stand_in in zip(
                targets, _killing_at(boundary, originals)):
            monkeypatch.setattr(module, name, stand_in)
        with pytest.raises(_Killed):
            _run(out, resume=i > 0, float_dir=float_dir)
    # The last resume redoes nothing that finished: no strip, and only the
    # exports after the float file's (the kill came before them).
    calls = []
    monkeypatch.setattr(train, "run", originals[0])
    monkeypatch.setattr(cuts, "prune_checkpoint",
                        lambda *a, **k: calls.append("prune"))
    monkeypatch.setattr(cuts, "cut_checkpoint",
                        lambda *a, **k: calls.append("cut"))
    monkeypatch.setattr(export, "export_lm", lambda params, checkpoint, path,
                        *a, **k: (calls.append(os.path.basename(path)),
                                  originals[2](params, checkpoint, path, *a,
                                               **k)))
    resumed = _run(out, resume=True, float_dir=float_dir)
    assert calls == AFTER_FLOAT_EXPORT + STREAMED
    assert len(resumed["stages"]) == len(ref["stages"])
    for got, want in zip(resumed["stages"], ref["stages"]):
        for key in ("stage", "technique", "nonzero_weights", "bytes"):
            assert got[key] == want[key]
        assert got["test_ppl"] == pytest.approx(want["test_ppl"], rel=1e-9)


def test_resume_redoes_an_export_whose_source_changed(reference, tmp_path,
                                                      monkeypatch):
    """A finished pipeline whose QAT checkpoint changed since (e.g. resumed
    with more --quant-epochs) exports the uint8 model again; nothing else."""
    ref_out, _ = reference
    out = str(tmp_path)
    shutil.copytree(os.path.join(ref_out, "compress"),
                    os.path.join(out, "compress"))
    qat_best = train.best_checkpoint(os.path.join(out, "compress", "qat"))
    # Other weights under the same names: half of one kernel.
    reader = tf.train.NewCheckpointReader(qat_best)
    values = {name: reader.get_tensor(name)
              for name in reader.get_variable_to_shape_map()}
    name = max((n for n in values if n.endswith("kernel")),
               key=lambda n: np.abs(values[n]).sum())
    assert np.abs(values[name]).sum() > 0
    values[name] = values[name] * 0.5
    with tf.Graph().as_default():
        variables = [tf.Variable(v, name=n) for n, v in values.items()]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver(variables).save(sess, qat_best,
                                           write_meta_graph=False)
    calls, shapes = [], {}
    original = export.export_lm

    def exporting(params, checkpoint, path, batch, steps, **formats):
        calls.append(os.path.basename(path))
        shapes[path] = (batch, steps)
        return original(params, checkpoint, path, batch, steps, **formats)
    monkeypatch.setattr(cuts, "prune_checkpoint",
                        lambda *a, **k: calls.append("prune"))
    monkeypatch.setattr(export, "export_lm", exporting)
    _run(out, resume=True, float_dir=os.path.join(ref_out, "float"))
    assert calls == QAT_EXPORTS + STREAMED
    # The timed twins: batch 1, one token a call, in a temporary folder
    # that is gone; nothing of them in the pipeline's.
    streamed = [p for p in shapes
                if p.endswith(tflite.STREAM_SUFFIX)]
    assert [shapes[p] for p in streamed] == [(1, 1)] * len(STREAMED)
    assert len({os.path.dirname(p) for p in streamed}) == 1
    assert not os.path.exists(os.path.dirname(streamed[0]))
    assert not [n for n in os.listdir(os.path.join(out, "compress"))
                if n.endswith(tflite.STREAM_SUFFIX)]


def test_every_stage_opens_as_a_language_model(reference):
    """config.json / vocab.txt in every stage directory and a sidecar
    beside each .tflite file; each opens with LanguageModel and its
    evaluation reproduces the stage's test perplexity."""
    from tf1_awd_sparse.awd_lm import LanguageModel
    from tf1_awd_sparse.awd_lm.config import modeldir
    out, result = reference
    root = os.path.join(out, "compress")
    test = os.path.join(out, "test.txt")
    data.write_ptb(_corpus(), out)
    chosen = result["chosen"]
    rows = {(r["stage"], r["technique"]): r for r in result["stages"]}
    stages = {"vd_ft": ("sparse", "variational_dropout"),
              "l0_ft": ("sparse", "l0"), "mag_ft": ("sparse", "magnitude"),
              "reference": ("reference", None),
              "qat": ("qat", chosen),
              "tflite_float.tflite": ("tflite_float", chosen),
              "tflite_uint8.tflite": ("tflite_uint8", chosen)}
    for name, key in stages.items():
        path = os.path.join(root, name)
        config = modeldir.read_config(
            modeldir.sidecar_path(path) if name.endswith(".tflite")
            else os.path.join(path, "config.json"))
        assert config["produced_by"]["stage"] == key[0], name
        assert config["produced_by"]["technique"] == key[1], name
        if name == "qat":   # the pipeline's QAT, not --quant's awd+q
            assert config["produced_by"]["model"] == "awd+pruned+q"
        lm = LanguageModel.load(path)
        # The same model and file, read in other windows / batch rows.
        assert lm.evaluate(test)["perplexity"] == pytest.approx(
            rows[(key[0], key[1] or "-")]["test_ppl"], rel=FLOAT_PPL_RTOL), \
            name
        lm.close()
    # The ramps' directories too (a VD / L0 ramp's config holds its
    # controller factor, a parameter a config may hold).
    for name in ("vd", "l0", "mag"):
        config = modeldir.read_config(os.path.join(root, name, "config.json"))
        LanguageModel.load(os.path.join(root, name)).close()
    assert config["params"].prune.pruning == "magnitude"
    pruned = modeldir.read_config(os.path.join(root, "pruned",
                                               "config.json"))
    assert pruned["produced_by"]["stage"] == "pruned"
    assert pruned["produced_by"]["sparsity"] == pytest.approx(
        rows[("tflite_float", chosen)]["sparsity"], abs=0.01)


# Slow (about 30 s: eight epochs of NT-ASGD fine-tuning): runs on the
# default version (docs/testing.md); NT-ASGD's averaging and swap run on
# every version (graph/test_ntasgd.py).
@pytest.mark.slow
def test_survivors_and_reference_average_under_fixed_masks(reference,
                                                           tmp_path):
    """``finetune_optimizer='ntasgd'``: the survivors and the reference
    fine-tune with NT-ASGD (the ramp stays plain SGD: its masks move),
    side by side in one process (parallel=2). Once the survivors average,
    the checkpoint they validate holds the cut's masks unchanged and the
    pruned weights at zero: the average of weights under a fixed mask.
    ``finetune_dropout_scale`` scales every dropout rate of the ramp, the
    survivors and QAT, not the reference's; the reference, from the float
    model's averaged weights, averages from its first step."""
    corpus = _corpus()
    params = dict(_params(), finetune_optimizer="ntasgd", nonmono=1,
                  finetune_epochs=8, patience=20, finetune_dropout_scale=0.5)
    # The float model is the reference run's (its patience and nonmono
    # differ from the fine-tunings' here, which inherit these).
    float_params, _ = _phases((_params()))
    float_dir = os.path.join(reference[0], "float")
    summary = train.run(corpus, float_params, float_dir, resume=True,
                        log=lambda *a: None, threads=1)
    out = str(tmp_path / "compress")
    pipeline.run_pipeline(corpus, params, summary, float_dir, out,
                          ["magnitude"], log=lambda *a: None, threads=1,
                          parallel=2)
    assert stages.finetune_params(as_params(params), "magnitude", 10)[
        "optimizer"] == "sgd"
    for run in ("reference", "mag_ft"):
        with open(os.path.join(out, run, "summary.json")) as handle:
            run_summary = json.load(handle)
        assert run_summary["params"]["optimizer"] == "ntasgd"
        # nonmono=1 over 5+ epochs at rate 5 on this corpus: it triggers.
        assert any(r["averaged"] for r in run_summary["epochs"]), run
        if run == "reference":   # from the float model's averaged weights
            assert run_summary["epochs"][0]["averaged"]
            assert run_summary["averaging_epoch"] == 1
    for run, scale in (("reference", 1.0), ("mag", 0.5), ("mag_ft", 0.5),
                       ("qat", 0.5)):
        with open(os.path.join(out, run, "summary.json")) as handle:
            run_params = json.load(handle)["params"]
        for key in stages.DROPOUT_KEYS:
            assert run_params[key] == pytest.approx(params[key] * scale), (
                run, key)
    cut = tf.train.load_checkpoint(os.path.join(out, "mag_cut",
                                                "model.ckpt"))
    best = tf.train.load_checkpoint(train.best_checkpoint(
        os.path.join(out, "mag_ft")))
    zeros = 0
    for name in cuts.weight_names(as_params(params)):
        mask = cut.get_tensor(_mask(name))
        np.testing.assert_array_equal(best.get_tensor(_mask(name)), mask)
        effective = best.get_tensor(name) * mask
        zeros += int((effective == 0).sum())
        assert not np.array_equal(effective, cut.get_tensor(name) * mask)
    sizes = [int(np.prod(s)) for s in tflite_weights.weight_shapes(as_params(dict(
        params, vocab_size=len(corpus.vocab))))]
    assert zeros == sum(int(round(0.7 * n)) for n in sizes)
    # The pruned checkpoint is the model, without the averaged run's slots.
    survivors = set(best.get_variable_to_shape_map())
    pruned = set(tf.train.load_checkpoint(os.path.join(
        out, "pruned", "model.ckpt")).get_variable_to_shape_map())
    slots = {n for n in survivors if n.split("/")[-1].startswith("NTASGD")}
    assert slots and not slots & pruned
    assert {n for n in survivors - slots if n.startswith("lm/")} <= pruned


def test_the_reference_averages_from_its_first_step():
    """Same budget: the reference fine-tunes with the compressed model's
    optimizer and, with NT-ASGD, averages from its first step (it starts
    from averaged weights), with the float model's dropout; the survivors
    start from a fresh cut, so their averaging waits for the trigger."""
    params = presets.params_for("demo", "awd", {"compress": "magnitude"})
    reference = stages.reference_params(as_params(params))
    for key in stages.DROPOUT_KEYS:
        assert reference[key] == params[key], key
    assert reference["optimizer"] == params["finetune_optimizer"] == "ntasgd"
    assert reference["average_from_start"] is True
    assert stages.reference_params(as_params(dict(
        params, finetune_optimizer="sgd")))["average_from_start"] is False
    assert not stages.survivors_params(
        as_params(params)).stage.average_from_start
    assert presets.DEFAULTS["average_from_start"] is False


def _dense_row(stage, valid, test):
    return {"stage": stage, "technique": "-", "valid_ppl": valid,
            "test_ppl": test, "ratio_to_float": test / 100.0,
            "ratio_to_reference": 1.0, "nonzero_weights": 10,
            "total_weights": 10, "bytes": 40, "gzip_bytes": 30,
            "reached_target": None}


def test_a_reference_that_validates_worse_is_the_float_model():
    float_row = _dense_row("float", 110.0, 100.0)
    better = rows_.best_reference(float_row,
                                  _dense_row("reference", 108.0, 99.0))
    assert (better["test_ppl"], better["reference_is"]) == (99.0,
                                                            "fine-tuned")
    # Worse (or equal) on validation: the float model's own figures, and
    # the table says so under a starred stage.
    for valid in (110.0, 111.0):
        worse = rows_.best_reference(
            float_row, _dense_row("reference", valid, 98.0))
        assert worse["stage"] == "reference"
        assert (worse["test_ppl"], worse["valid_ppl"]) == (100.0, 110.0)
        assert (worse["reference_is"], worse["finetuned_valid_ppl"]) == (
            "float", valid)
    table = rows_.format_table([float_row, worse])
    assert table[3].split("|")[0].strip() == "reference*"
    assert table[-1] == ("* /ref is the float model itself: its fine-tuning "
                         "for the same budget validated worse (111.00 "
                         "against 110.00)")
    assert rows_.format_table([float_row, better])[-1].startswith(
        "/ref: the float model fine-tuned for the same budget")


def test_the_pipelines_reference_row_is_the_better_validated_model(
        reference):
    """The pipeline's own reference row against the two runs' summaries,
    read here: the fine-tuned float model where its validation beat the
    float model's, else the float model's figures; reference_is and the
    table's footnote say which. (With best_reference's arguments swapped
    in run_pipeline every figure stays, but not these.)"""
    out, result = reference
    runs = {}
    for name, path in (("float", ("float",)),
                       ("tuned", ("compress", "reference"))):
        with open(os.path.join(out, *(path + ("summary.json",)))) as f:
            runs[name] = json.load(f)
    float_valid = runs["float"]["best_valid_ppl"]
    tuned_valid = runs["tuned"]["best_valid_ppl"]
    float_row, row = result["stages"][:2]
    assert row["stage"] == "reference"
    assert float_row["valid_ppl"] == pytest.approx(float_valid)
    if tuned_valid < float_valid:
        assert row["reference_is"] == "fine-tuned"
        assert (row["valid_ppl"], row["test_ppl"]) == pytest.approx(
            (tuned_valid, runs["tuned"]["test_ppl"]))
        footnote = ("/ref: the float model fine-tuned for the same budget, "
                    "averaging from its first step (validation %.2f)"
                    % tuned_valid)
    else:
        assert row["reference_is"] == "float"
        assert (row["valid_ppl"], row["test_ppl"]) == (
            float_row["valid_ppl"], float_row["test_ppl"])
        assert row["finetuned_valid_ppl"] == pytest.approx(tuned_valid)
        footnote = ("* /ref is the float model itself: its fine-tuning for "
                    "the same budget validated worse (%.2f against %.2f)"
                    % (tuned_valid, float_valid))
    assert [line for line in result["table"] if "/ref" in line
            and not line.startswith("stage")] == [footnote]


def test_reached_target_is_one_rule_for_tf_and_tflite_rows():
    # Three 5-weight matrices with 2 zeros each at target 0.5: the exact
    # per-matrix cut makes round(2.5) = 2 zeros per matrix (6 in all), the
    # global rounding would ask round(7.5) = 8. The same weights in the
    # TFLite file must be judged as in the TF checkpoint.
    weights = {n: np.array([0., 0., 1., 2., 3.]) for n in ("a", "b", "c")}
    summary = RunSummary.from_json(summary_json(test_ppl=10.0,
                                                best_valid_ppl=11.0))
    sparse = rows_.row("sparse", "magnitude", summary, 9.0, weights)
    tfl = rows_.tflite_row("tflite_float", "magnitude", 10.0, 9.0,
                           (6, 15), [(1, 5)] * 3, {})
    rows = rows_.mark([sparse, tfl], 0.5, 9.5)
    assert [r["reached_target"] for r in rows] == [True, True]
    # Independent reference: per-matrix zeros >= per-matrix cut.
    assert all(2 >= int(round(0.5 * 5)) for _ in range(3))


def _float_phase(params):
    """The float model's phase of ``params`` (no quantization or
    compression key), as a plain dict."""
    float_params, _ = _phases((dict(params, quant=False)))
    return dict(float_params)


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_each_stages_parameters_follow_the_documented_rules(technique):
    """Each stage's flat parameters, key for key: the float model's phase,
    every dropout rate times ``finetune_dropout_scale`` (not the
    reference's), ``finetune_lr`` (None: lr / 4), the budget split
    between the ramp (plain SGD) and the survivors (``finetune_optimizer``)
    and the keys each stage sets, nothing else."""
    params = dict(presets.params_for("demo", "awd", {
        "compress": technique, "finetune_dropout_scale": 0.25,
        "compress_sparsity_weight": 0.003}), vocab_size=50)
    base = _float_phase(params)
    scaled = {k: params[k] * 0.25 for k in stages.DROPOUT_KEYS}
    lr = params["lr"] / 4.0
    ramp = stages.ramp_epochs(as_params(params))
    rest = stages.survivors_epochs(as_params(params))
    assert (ramp, rest) == (5, 7)   # 0.4 and 0.6 of finetune_epochs 12
    distill = {"distill_weight": 0.0, "distill_temperature": 1.0}
    if technique == "magnitude":   # the schedule over the ramp's steps
        own = {"pruning": "magnitude", "pruning_begin_step": 0,
               "pruning_end_step": 5 * 30, "pruning_frequency": 5 * 30 // 40,
               "group_lasso": 0.0}
    else:   # the KL / L0 weight ramped, with the controller's factor
        own = {"sparsity": technique, "sparsity_ramp_steps": 5 * 30,
               "sparsity_controller": 2.0, "sparsity_weight": 0.003,
               "aux_lr_scale": stages.AUX_LR_SCALE[technique]}
    assert stages.finetune_params(as_params(params), technique, 30).to_flat() == dict(
        base, max_epochs=ramp, lr=lr, optimizer="sgd", pruning_block=1,
        table_sparsity=None, target_sparsity=0.9, select_from_epoch=ramp,
        **dict(own, **dict(scaled, **distill)))
    assert stages.survivors_params(as_params(params)).to_flat() == dict(
        base, max_epochs=rest, lr=lr, optimizer="ntasgd", pruning="fixed",
        select_min_sparsity=0.9, **dict(scaled, **distill))
    assert stages.reference_params(as_params(params)).to_flat() == dict(
        base, max_epochs=12, lr=lr, optimizer="ntasgd", distill_weight=0.0,
        average_from_start=True)
    _, quant = _phases((dict(params, quant=True)))
    assert stages.quantize_params(as_params(params)).to_flat() == dict(
        quant, pruning="fixed", **scaled)
    assert stages.model_params(as_params(params), pruning="fixed").to_flat() == \
        dict(base, pruning="fixed")


@pytest.fixture(scope="module")
def small_dense(reference, tmp_path_factory):
    """The reference run's pipeline resumed with --small-dense (its other
    stages finished): (out, result)."""
    ref_out, _ = reference
    out = str(tmp_path_factory.mktemp("small_dense"))
    shutil.copytree(os.path.join(ref_out, "compress"),
                    os.path.join(out, "compress"))
    return out, _run(out, resume=True,
                     float_dir=os.path.join(ref_out, "float"),
                     small_dense=True)


def test_small_dense_rows_are_the_files_of_a_narrower_dense_model(
        reference, small_dense):
    """--small-dense (issue 55, item 3): beside the compressed rows, a
    dense model of emb_size = hidden_size = w trained from scratch for the
    float model's epochs, then QAT; its uint8 file within the bytes of
    the smallest compressed file (read from the disk), scored and timed
    with the others; summary.json and the table's line say what the files
    say."""
    from tf1_awd_sparse.awd_lm import LanguageModel
    from tf1_awd_sparse.awd_lm.config import modeldir
    ref_out, ref = reference
    out, result = small_dense
    root = os.path.join(out, "compress")
    dense = ["small_dense", "small_dense_qat", "small_dense_uint8"] + (
        ["small_dense_int8"] if sparse_storage.available() else [])
    compressed = [r["stage"] for r in ref["stages"]]
    assert [r["stage"] for r in result["stages"]] == compressed + dense
    for got, want in zip(result["stages"], ref["stages"]):   # unchanged
        assert (got["technique"], got["bytes"]) == (want["technique"],
                                                    want["bytes"])
        assert got["test_ppl"] == pytest.approx(want["test_ppl"], rel=1e-9)
    files = {stage: os.path.getsize(os.path.join(root, stage + ".tflite"))
             for stage in compressed if stage.startswith("tflite_")}
    budget = min(files.values())
    rows = dict((r["stage"], r) for r in result["stages"])
    width = rows["small_dense"]["emb_size"]
    size = os.path.getsize(os.path.join(root, "small_dense_uint8.tflite"))
    assert rows["small_dense_uint8"]["bytes"] == size
    # Within the budget, or (TF 2.x: the fused int8 file is smaller than
    # any uint8 file's unrolled graph) over it at the narrowest width.
    assert size <= budget or width == 1
    # The float run: the narrower model from scratch, the float recipe
    # for the float model's epochs; its QAT from its best checkpoint.
    with open(os.path.join(ref_out, "float", "summary.json")) as handle:
        float_epochs = json.load(handle)["epochs_run"]
    run = os.path.join(root, "small_dense_e%d" % width)
    config = modeldir.read_config(os.path.join(run, "config.json"))
    params = config["params"].to_flat()
    assert (params["emb_size"], params["hidden_size"], params["num_layers"],
            params["vocab_size"], params["max_epochs"], params["lr"]) == (
                width, width, 2, len(_corpus().vocab), float_epochs,
                _params()["lr"])
    assert config["produced_by"]["init_from"] is None
    qat = modeldir.read_config(os.path.join(run + "_qat", "config.json"))
    assert qat["params"].quantization.quant is True
    assert qat["produced_by"]["init_from"] == train.best_checkpoint(run)
    test = os.path.join(out, "test.txt")
    data.write_ptb(_corpus(), out)
    for stage in dense:
        row = rows[stage]
        assert row["technique"] == "small-dense e=%d" % width
        if "8" not in stage:   # a uint8 weight may round to its zero point
            assert row["nonzero_weights"] == row["total_weights"]
        assert row["reached_target"] is None
        assert row["budget_bytes"] == budget
        path = (os.path.join(root, stage + ".tflite") if "8" in stage
                else run + ("_qat" if stage.endswith("qat") else ""))
        lm = LanguageModel.load(path)
        assert lm.evaluate(test)["perplexity"] == pytest.approx(
            row["test_ppl"], rel=FLOAT_PPL_RTOL), stage
        lm.close()
        if "8" in stage:
            assert row["ms_per_token"] > 0
            assert ("x_fastest_dense" in row) == sparse_storage.available()
    smallest = min(files, key=files.get)
    with open(os.path.join(root, "summary.json")) as handle:
        written = json.load(handle)
    assert written["stages"] == result["stages"]
    better = rows[smallest]["test_ppl"] < rows["small_dense_uint8"][
        "test_ppl"]
    assert written["small_dense"] == {
        "emb_size": width, "budget_bytes": budget, "budget_from": smallest,
        "bytes": size, "within_budget": size <= budget,
        "test_ppl": rows["small_dense_uint8"]["test_ppl"],
        "epochs": rows["small_dense"]["epochs"],
        "compressed_bytes": files[smallest],
        "compressed_test_ppl": rows[smallest]["test_ppl"],
        "compressed_is_better": better}
    line, = [l for l in result["table"] if l.startswith("small-dense:")]
    assert line.startswith("small-dense: emb_size = hidden_size = %d"
                           % width)
    assert ("(budget %d: over it" % budget in line) == (size > budget)
    assert line.endswith("large-sparse %s small-dense here"
                         % ("beats" if better else "does not beat"))
    assert any([c.strip() for c in r.split("|")[:2]] == [
        "small_dense_uint8", "small-dense e=%d" % width]
        for r in result["table"])


def test_a_run_killed_in_the_small_dense_stage_resumes_there(
        reference, small_dense, tmp_path, monkeypatch):
    """Killed before the small-dense QAT run, then resumed: the float run
    is not trained again and the rows are the uninterrupted run's."""
    ref_out, _ = reference
    _, want = small_dense
    out = str(tmp_path)
    shutil.copytree(os.path.join(ref_out, "compress"),
                    os.path.join(out, "compress"))
    original = train.run

    def killing_run(corpus, params, run_dir, *args, **kwargs):
        if os.path.basename(run_dir).startswith("small_dense") and \
                run_dir.endswith("_qat"):
            raise _Killed()
        return original(corpus, params, run_dir, *args, **kwargs)

    monkeypatch.setattr(train, "run", killing_run)
    float_dir = os.path.join(ref_out, "float")
    with pytest.raises(_Killed):
        _run(out, resume=True, float_dir=float_dir, small_dense=True)
    width = [r for r in want["stages"] if r["stage"] == "small_dense"][0][
        "emb_size"]
    state = os.path.join(out, "compress", "small_dense_e%d" % width,
                         "state.json")
    with open(state) as handle:
        before = handle.read()
    monkeypatch.setattr(train, "run", original)
    got = _run(out, resume=True, float_dir=float_dir, small_dense=True)
    with open(state) as handle:
        assert handle.read() == before   # not trained again
    assert [r["stage"] for r in got["stages"]] == [
        r["stage"] for r in want["stages"]]
    for g, w in zip(got["stages"], want["stages"]):
        assert (g["technique"], g["bytes"]) == (w["technique"], w["bytes"])
        assert g["test_ppl"] == pytest.approx(w["test_ppl"], rel=1e-9)


def _ship_rule(rows, target):
    """The recommendation rule written out (docs/awd_lm.md, the file to
    ship): the scored files within ``target`` x /ref, fastest first (an
    untimed one last), then fewest bytes; none within: the lowest test
    perplexity of the files smaller than the uint8 file and faster than
    the fastest dense file, or of all when none is."""
    files = [r for r in rows if "tokens_scored" in r]
    reference_ppl = [r for r in rows if r["stage"] == "reference"][0][
        "test_ppl"]
    within = [r for r in files if r["test_ppl"] <= target * reference_ppl]
    if within:
        return sorted(within, key=lambda r: (
            r.get("ms_per_token") is None, r.get("ms_per_token") or 0,
            r["bytes"]))[0], True
    uint8 = [r["bytes"] for r in files if r["stage"] == "tflite_uint8"]
    worth = [r for r in files if r["bytes"] < uint8[0]
             and (r.get("x_fastest_dense") or 0.0) < 1.0]
    return sorted(worth or files, key=lambda r: r["test_ppl"])[0], False


def test_the_summary_names_the_file_to_ship(reference):
    """summary.json's ``recommended`` is the rule's pick among the rows,
    its figures the row's and the file's; the table's last line says it."""
    out, result = reference
    with open(os.path.join(out, "compress", "summary.json")) as handle:
        entry = json.load(handle)["recommended"]
    assert entry == result["recommended"]
    row, within = _ship_rule(result["stages"], 1.05)
    assert entry["stage"] == row["stage"]
    assert entry["within_target"] is within
    assert entry["ship_ppl_target"] == 1.05
    path = os.path.join(out, "compress", entry["path"])
    assert os.path.getsize(path) == entry["bytes"] == row["bytes"]
    for key in ("test_ppl", "ratio_to_reference", "ms_per_token"):
        assert entry[key] == row[key]
    assert entry["ratio_to_reference"] == pytest.approx(
        row["test_ppl"] / result["stages"][1]["test_ppl"])
    uint8 = [r for r in result["stages"] if r["stage"] == "tflite_uint8"][0]
    assert entry["x_uint8_bytes"] == pytest.approx(
        row["bytes"] / float(uint8["bytes"]))
    line = result["table"][-1]
    assert line == ship.recommended_line(entry)
    assert line.startswith("recommended: %s  %s bytes" % (
        entry["path"], "{:,}".format(row["bytes"])))
    assert "ppl %.3f x ref" % row["ratio_to_reference"] in line
    if "x_fastest_dense" in row:
        assert "%.2f x the fastest dense" % row["x_fastest_dense"] in line
    else:
        assert "%.4f ms/token" % row["ms_per_token"] in line


def test_a_target_no_file_meets_recommends_the_lowest_perplexity(
        reference, tmp_path):
    """--ship-ppl-target below every file's ratio: the pipeline, resumed
    with it (nothing retrained), recommends the lowest perplexity and its
    line says no file is within."""
    ref_out, result = reference
    files = [r for r in result["stages"] if "tokens_scored" in r]
    target = 0.5 * min(r["ratio_to_reference"] for r in files)
    out = str(tmp_path)
    shutil.copytree(os.path.join(ref_out, "compress"),
                    os.path.join(out, "compress"))
    corpus, float_dir = _corpus(), os.path.join(ref_out, "float")
    params = dict(_params(), ship_ppl_target=target)
    summary = train.run(corpus, _phases((params))[0], float_dir,
                        resume=True, log=lambda *a: None, threads=1)
    again = pipeline.run_pipeline(
        corpus, params, summary, float_dir, os.path.join(out, "compress"),
        TECHNIQUES, resume=True, log=lambda *a: None, threads=1,
        parallel=1)
    entry = again["recommended"]
    row, within = _ship_rule(again["stages"], target)
    assert not within and entry["within_target"] is False
    assert entry["stage"] == row["stage"]
    assert entry["test_ppl"] == row["test_ppl"]
    assert entry["ship_ppl_target"] == target
    uint8 = [r for r in files if r["stage"] == "tflite_uint8"][0]
    smaller = entry["bytes"] < uint8["bytes"] and \
        (entry.get("x_fastest_dense") or 0.0) < 1.0
    assert entry["fallback"] == (ship.WORTH_SHIPPING if smaller
                                 else ship.ALL_FILES)
    assert "NO file within the" in again["table"][-1]


def test_info_shows_the_recommended_file(reference):
    """``awd-lm info`` of the run (and of the pipeline's folder), without
    TensorFlow: the pipeline's line is the table's last."""
    out, result = reference
    folder = os.path.join(out, "compress")
    prelude = "import sys; sys.modules['tensorflow'] = None\n"
    for path in (out, folder):
        code = (prelude + "import runpy, sys\nsys.argv = ['awd-lm', 'info',"
                " %r]\nrunpy.run_module('tf1_awd_sparse.awd_lm', "
                "run_name='__main__', alter_sys=True)\n" % path)
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=ROOT))
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "  %s: %s" % (
            folder, result["table"][-1])


def test_export_of_the_run_writes_the_recommended_file(reference, tmp_path,
                                                       capsys):
    """``awd-lm export --model RUN --out F``: the recommended file's bytes,
    its sidecar and vocabulary naming the copy, one line saying which;
    ``awd-lm score`` of the copy gives the row's perplexity. A flag given
    exports that file's model again with the flag winning; a refused
    --out leaves nothing."""
    from tf1_awd_sparse.awd_lm.config import modeldir
    from tf1_awd_sparse.awd_lm.programs import export as export_program
    from tf1_awd_sparse.awd_lm.programs import score as score_program
    out, result = reference
    entry = result["recommended"]
    source = os.path.join(out, "compress", entry["path"])
    ship = str(tmp_path / "ship" / "model.tflite")
    assert export_program.main(["--model", out, "--out", ship]) == 0
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and line.startswith(
        "%s: %d bytes, copied from %s" % (ship, entry["bytes"], source))
    with open(ship, "rb") as a, open(source, "rb") as b:
        assert a.read() == b.read()
    config = modeldir.read_config(ship + ".json")
    assert config["tflite"]["file"] == "model.tflite"
    assert config["vocab"] == "model.tflite.vocab.txt"
    assert config["words"] == _corpus().vocab
    # The test split as text: one line whose last <eos> the reader adds
    # (the batches drop the stream's tail, so the same windows).
    text = tmp_path / "test.txt"
    words = _corpus().vocab
    text.write_text(" ".join(words[i] for i in _corpus().test) + "\n")
    assert score_program.main(["--model", ship, "--as-training",
                               str(text)]) == 0
    printed = capsys.readouterr().out.splitlines()[-1].split()
    assert printed[0] == "perplexity"
    row = [r for r in result["stages"] if r["stage"] == entry["stage"]][0]
    assert float(printed[1]) == pytest.approx(row["test_ppl"],
                                              rel=FLOAT_PPL_RTOL, abs=1e-4)
    # Refused: an existing --out (the copy), nothing changed.
    before = os.path.getmtime(ship)
    one = one_error_line(capsys, lambda: export_program.main(
        ["--model", out, "--out", ship]))
    assert "exists" in one and os.path.getmtime(ship) == before
    # A flag given: the file's model exported again at batch 1.
    again = str(tmp_path / "batch1.tflite")
    assert export_program.main(["--model", os.path.join(out, "compress"),
                                "--batch-size", "1", "--out", again]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith("the model of %s's recommended file %s, the flags "
                         "given winning" % (os.path.join(out, "compress"),
                                            entry["path"]))
    made = modeldir.read_config(again + ".json")
    assert made["tflite"]["batch"] == 1
    assert made["produced_by"]["source"] == os.path.abspath(os.path.join(
        out, "compress", entry["model_dir"]))
    assert made["produced_by"]["stage"] == "tflite_" + entry["format"]


#: ``table_rank_rows`` of the low-rank pipeline: fewer than the vocabulary's
#: words (the other rows have no part).
LOW_RANK_ROWS = 20


@pytest.fixture(scope="module")
def low_rank(reference, tmp_path_factory):
    """The reference run's float model compressed by magnitude with
    ``table_rank`` 2 on the vocabulary's first `LOW_RANK_ROWS` words
    (issue 55): (out, result)."""
    ref_out, _ = reference
    out = str(tmp_path_factory.mktemp("low_rank"))
    corpus = _corpus()
    params = dict(_params(), table_rank=2, table_rank_rows=LOW_RANK_ROWS,
                  compress="magnitude")
    float_dir = os.path.join(ref_out, "float")
    float_params, _ = _phases((params))
    # The reference's float model, finished: resumed, nothing trains.
    summary = train.run(corpus, float_params, float_dir, resume=True,
                        log=lambda *a: None, threads=1)
    return out, pipeline.run_pipeline(
        corpus, params, summary, float_dir, os.path.join(out, "compress"),
        ["magnitude"], log=lambda *a: None, threads=1, parallel=1)


def test_a_low_rank_table_runs_through_every_stage_and_file(low_rank,
                                                            tmp_path):
    """``--table-rank``: the compressed stages train the dense part (the
    pruned checkpoint and the QAT model hold it, their config.json its
    rank), each row counts it in its weights but the target is the pruned
    matrices' (every row reaches it but the unrolled float file's, whose
    folded table is dense), each file scores as its TF graph, the fused
    file stores the part apart (and its float twin computes the sparse
    model), and the stage directories open as language models."""
    from tf1_awd_sparse.awd_lm import LanguageModel
    from tf1_awd_sparse.awd_lm.config import modeldir
    out, result = low_rank
    root = os.path.join(out, "compress")
    rows = {r["stage"]: r for r in result["stages"]}
    vocab = len(_corpus().vocab)
    assert LOW_RANK_ROWS < vocab
    # Counted as [vocab, 2] and [emb, 2], the rows past LOW_RANK_ROWS zero.
    part = 2 * (vocab + _params()["emb_size"])
    stored = 2 * (LOW_RANK_ROWS + _params()["emb_size"])
    float_total = rows["float"]["total_weights"]
    assert "low_rank_weights" not in rows["reference"]
    for stage in ("sparse", "qat"):
        assert rows[stage]["low_rank_weights"] == part, stage
        assert 0 < rows[stage]["low_rank_nonzero"] <= stored, stage
        assert rows[stage]["total_weights"] == float_total + part, stage
        assert rows[stage]["reached_target"], stage
    for name in ("pruned", "qat"):
        directory = os.path.join(root, name)
        config = modeldir.read_config(os.path.join(directory, "config.json"))
        assert config["params"].prune.table_rank == 2, name
        assert config["params"].prune.table_rank_rows == LOW_RANK_ROWS, name
        values = cuts.read_values(
            os.path.join(directory, "best", "model.ckpt") if name == "qat"
            else os.path.join(directory, "model.ckpt"))
        assert values["lm/table_low"].shape == (LOW_RANK_ROWS, 2), name
        assert np.abs(values["lm/table_low"]).max() > 0, name
    # The unrolled files hold the folded table (dense in the float file).
    assert rows["tflite_float"]["test_ppl"] == pytest.approx(
        rows["sparse"]["test_ppl"], rel=FLOAT_PPL_RTOL)
    assert not rows["tflite_float"]["reached_target"]
    assert rows["tflite_uint8"]["test_ppl"] == pytest.approx(
        rows["qat"]["test_ppl"], rel=2e-3)
    if sparse_storage.available():
        fused = rows["tflite_int8_fused"]
        assert fused["low_rank_weights"] == part and fused["reached_target"]
        assert 0 < fused["low_rank_nonzero"] <= stored
        assert fused["test_ppl"] == pytest.approx(rows["qat"]["test_ppl"],
                                                  rel=2e-2)
        # The pruned model's fused file: the sparse row's perplexity within
        # the int8 weights' rounding.
        assert rows["tflite_int8_fused_pruned"]["test_ppl"] == \
            pytest.approx(rows["sparse"]["test_ppl"], rel=2e-2)
        # The float fused file of the pruned model: the sparse row's
        # perplexity to float rounding, its part stored apart.
        path = str(tmp_path / "fused_float.tflite")
        params = modeldir.read_config(os.path.join(
            root, "pruned", "config.json"))["params"]
        batch = params.optimization.eval_batch_size
        export.export_lm(params, os.path.join(root, "pruned", "model.ckpt"),
                         path, batch, 1, weights="float", lstm="fused")
        low, proj = tflite_weights.low_rank_of_tflite(path)
        assert low.shape == (vocab, 2) and proj.shape == (
            _params()["emb_size"], 2)
        assert not low[LOW_RANK_ROWS:].any() and low[:LOW_RANK_ROWS].any()
        ppl, _, _ = lm_runner.tflite_perplexity(path, data.batchify(
            _corpus().test, batch))
        assert ppl == pytest.approx(rows["sparse"]["test_ppl"],
                                    rel=FLOAT_PPL_RTOL)
    test = os.path.join(out, "test.txt")
    data.write_ptb(_corpus(), out)
    lm = LanguageModel.load(os.path.join(root, "qat"))
    assert lm.evaluate(test)["perplexity"] == pytest.approx(
        rows["qat"]["test_ppl"], rel=FLOAT_PPL_RTOL)
    lm.close()
