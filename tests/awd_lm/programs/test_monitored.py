"""The MonitoredTrainingSession program (`awd-lm monitored`, issue 7): its
cluster configuration, its evaluation against a numpy reference and the
Estimator's, its resume, against hand-written expectations."""
import json
import shutil

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.programs import estimator, monitored
from tf1_awd_sparse.awd_lm.distributed import cli, input_fn
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.corpus import runtime
from support.versions import needs_estimator
from support.lm import (AWD_VD_PARAMS as PARAMS, FLOAT_LOG_PROB_ATOL,
                        TINY_HPARAMS, one_error_line)
from support.tolerances import float32_sum_rtol, perplexity_rtol

from support import example

# The example's harness, imported by its path (examples/ is no package).
local_cluster = example("local_cluster")
free_ports = local_cluster.free_ports

tf_config = local_cluster.tf_config


# --- awd_lm.monitored: TF_CONFIG, evaluation, the Estimator entry's exit --

def _cluster(n_workers=2):
    return {"ps": ["localhost:1"], "chief": ["localhost:2"],
            "worker": ["localhost:%d" % (3 + i) for i in range(n_workers)]}


def test_task_from_tf_config_ids_shards_and_chief():
    cluster = _cluster()
    got = {}
    for job, index in (("ps", 0), ("chief", 0), ("worker", 0),
                       ("worker", 1)):
        task = monitored.task_from_tf_config(tf_config(cluster, job, index))
        assert task.cluster.as_dict() == cluster
        assert (task.task_type, task.task_id, task.num_tasks) == (
            job, index, 3)
        got[job, index] = (task.global_id, task.is_chief)
    # Chief 0, workers 1 and 2: the Estimator's global ids (seed, shard).
    assert got == {("ps", 0): (None, False), ("chief", 0): (0, True),
                   ("worker", 0): (1, False), ("worker", 1): (2, False)}
    assert monitored.task_from_tf_config("") is None
    assert monitored.task_from_tf_config(None) is None
    assert monitored.task_from_tf_config('{"cluster": {}}') is None


@pytest.mark.parametrize("text,match", [
    ("{not json", "not JSON"),
    ("[1, 2]", "JSON object"),
    (json.dumps({"cluster": {"ps": "localhost:1"}}), "list of host:port"),
    (json.dumps({"cluster": dict(_cluster(), evaluator=["localhost:9"]),
                 "task": {"type": "evaluator", "index": 0}}), "evaluator"),
    (json.dumps({"cluster": {"ps": ["localhost:1"],
                             "worker": ["localhost:2"]},
                 "task": {"type": "worker", "index": 0}}), "one chief"),
    (json.dumps({"cluster": {"chief": ["localhost:2"]},
                 "task": {"type": "chief", "index": 0}}), "one ps"),
    (json.dumps({"cluster": _cluster(1),
                 "task": {"type": "worker", "index": 1}}), "not in the"),
    (json.dumps({"cluster": _cluster(1),
                 "task": {"type": "master", "index": 0}}), "not in the"),
    (json.dumps({"cluster": _cluster(1),
                 "task": {"type": "worker", "index": "0"}}), "not in the"),
])
def test_task_from_tf_config_errors(text, match):
    with pytest.raises(ValueError, match="^TF_CONFIG: .*" + match):
        monitored.task_from_tf_config(text)


def test_monitored_refuses_a_cluster_with_mirrored_or_evaluate_only(tmp_path):
    text = tf_config(_cluster(1), "chief", 0)
    for flag, hparams in ((["--distribute", "mirrored"], TINY_HPARAMS),
                          (["--evaluate-only"], EVAL_HPARAMS)):
        args = monitored.parse_args(["--model-dir", str(tmp_path)] + flag
                                    + ["--hparams", hparams])
        with pytest.raises(ValueError, match="unset TF_CONFIG"):
            monitored.prepare(args, tf_config=text)


#: TINY_HPARAMS without what only training reads (--evaluate-only refuses
#: batch_size and lr).
EVAL_HPARAMS = ",".join(item for item in TINY_HPARAMS.split(",")
                        if item.split("=")[0] not in ("batch_size", "lr"))


@pytest.fixture(scope="module")
def monitored_run(tmp_path_factory):
    """(model dir, eval metrics) of a 6-step single-process run of the
    monitored command line, in this process."""
    model_dir = str(tmp_path_factory.mktemp("monitored") / "model")
    verbosity = tf.logging.get_verbosity()
    try:
        with tf.Graph().as_default():
            metrics = monitored.run(["--model-dir", model_dir, "--hparams",
                                     TINY_HPARAMS, "--threads", "1",
                                     "--use-vd", "--train-steps", "6"])
    finally:
        tf.logging.set_verbosity(verbosity)
    return model_dir, metrics


def _reference_xent(model_dir):
    """The latest checkpoint's mean cross-entropy over the validation
    windows, computed apart from awd_lm.monitored: numpy windows
    (bptt_batches) fed through placeholders, averaged in numpy."""
    params = presets.params_for("demo", "awd",
                                cli.parse_hparams(TINY_HPARAMS))
    corpus, _, _ = runtime.load_corpus(None, as_params(params))
    params["vocab_size"] = len(corpus.vocab)
    inputs, targets = input_fn.bptt_batches(
        corpus.valid, params["eval_batch_size"], params["bptt"])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, inputs.shape[1:])
        y = tf.placeholder(tf.int32, inputs.shape[1:])
        xent = model.build_lm({"inputs": x, "targets": y}, "eval",
                              params).xent
        with tf.Session() as sess:
            tf.train.Saver().restore(sess,
                                     tf.train.latest_checkpoint(model_dir))
            values = [sess.run(xent, {x: a, y: b})
                      for a, b in zip(inputs, targets)]
    return float(np.mean(values)), len(values)


def test_monitored_evaluation_matches_a_reference(monitored_run):
    model_dir, metrics = monitored_run
    assert tf.train.load_variable(model_dir, "global_step") == 6
    want, windows = _reference_xent(model_dir)
    assert windows > 1
    assert metrics["global_step"] == 6
    # Two float32 graphs of the model (hidden 8) fed the same windows, in
    # other sessions (one thread against the default: other blockings):
    # each window's mean log-prob within FLOAT_LOG_PROB_ATOL, then the
    # float32 mean of the windows' (gamma of their count, relative); the
    # perplexity within perplexity_rtol of that (was rtol 1e-6, ~3e-6
    # here: held only while both graphs summed alike).
    atol = FLOAT_LOG_PROB_ATOL + float32_sum_rtol(windows + 1) * want
    np.testing.assert_allclose(metrics["xent"], want, rtol=0, atol=atol)
    np.testing.assert_allclose(metrics["loss"], want, rtol=0, atol=atol)
    np.testing.assert_allclose(metrics["perplexity"], np.exp(want),
                               rtol=perplexity_rtol(atol))


@needs_estimator
def test_estimator_evaluates_a_monitored_checkpoint_alike(monitored_run):
    """Both command lines write and read the same checkpoints: Estimator's
    evaluation of the monitored run's checkpoint gives the same figures."""
    model_dir, metrics = monitored_run
    verbosity = tf.logging.get_verbosity()
    try:
        with tf.Graph().as_default():
            got = estimator.run(["--model-dir", model_dir, "--hparams",
                                 TINY_HPARAMS, "--evaluate-only"])
    finally:
        tf.logging.set_verbosity(verbosity)
    assert got["global_step"] == metrics["global_step"]
    # Two float32 evaluations of the same checkpoint (other graphs and
    # sessions): FLOAT_LOG_PROB_ATOL per token, then means over at most
    # the 200 validation tokens in float32 (gamma(200) relative); the
    # perplexity within perplexity_rtol of that (was rtol 1e-5).
    atol = FLOAT_LOG_PROB_ATOL + float32_sum_rtol(200) * metrics["xent"]
    for key in ("xent", "loss"):
        np.testing.assert_allclose(got[key], metrics[key], rtol=0, atol=atol)
    np.testing.assert_allclose(got["perplexity"], metrics["perplexity"],
                               rtol=perplexity_rtol(atol))


def test_evaluate_checkpoint_errors(tmp_path):
    params = as_params(dict(PARAMS, eval_batch_size=2, bptt=4))
    ids = np.arange(100) % 20
    with pytest.raises(ValueError, match="eval_steps"):
        monitored.evaluate_checkpoint(str(tmp_path), params, ids,
                                      eval_steps=0)
    with pytest.raises(ValueError, match="no checkpoint"):
        monitored.evaluate_checkpoint(str(tmp_path), params, ids)


def test_monitored_resumes_and_never_steps_a_finished_run(monitored_run,
                                                          tmp_path, capsys):
    model_dir = str(tmp_path / "model")
    shutil.copytree(monitored_run[0], model_dir)
    argv = ["--model-dir", model_dir, "--hparams", TINY_HPARAMS, "--threads",
            "1", "--use-vd", "--train-steps"]
    verbosity = tf.logging.get_verbosity()
    try:
        for steps, want_own in ((6, 0), (9, 3)):
            capsys.readouterr()
            assert monitored.main(argv + [str(steps)]) == 0
            lines = capsys.readouterr().out.strip().splitlines()
            train = json.loads(lines[-2][len("train: "):])
            evaluation = json.loads(lines[-1][len("eval: "):])
            assert (train["steps"], train["global_step"]) == (want_own,
                                                              steps)
            assert evaluation["global_step"] == steps
            assert tf.train.load_variable(model_dir, "global_step") == steps
    finally:
        tf.logging.set_verbosity(verbosity)


def test_monitored_logs_loss_and_perplexity_every_log_steps():
    import collections
    import io
    import math
    from tf1_awd_sparse.awd_lm import monitored
    assert monitored.parse_args(["--model-dir", "d"]).log_steps == 100
    assert monitored.parse_args(["--model-dir", "d", "--log-steps",
                                 "2"]).log_steps == 2
    out = io.StringIO()
    hook = monitored._LastLossHook(None, log_steps=2, file=out)
    values = collections.namedtuple("Values", "results")
    for loss in (3.0, 2.0, 1.5, 1.0, 0.5):
        hook.after_run(None, values(loss))
    assert out.getvalue().splitlines() == [
        "train: step 2 loss 2.0000 ppl %.2f" % math.exp(2.0),
        "train: step 4 loss 1.0000 ppl %.2f" % math.exp(1.0)]
    quiet = io.StringIO()
    hook = monitored._LastLossHook(None, log_steps=0, file=quiet)
    hook.after_run(None, values(1.0))
    assert quiet.getvalue() == ""


def test_monitored_refuses_log_steps_with_evaluate_only(capsys):
    line = one_error_line(capsys, lambda: monitored.parse_args(
        ["--model-dir", "m", "--evaluate-only", "--log-steps", "5"]))
    assert line.startswith("error: --log-steps has no effect here")
