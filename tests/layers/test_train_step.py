"""One training step for every driver (issue 20): `train_op.build_train_step`
under the loop (`train.Graph`), the Estimator's `model_fn` and the
monitored command line, and the distributed command lines reading their
model directory's config.json.

References: numpy for the clipped step, the pruning masks read back from
the checkpoints (their sparsity against the schedule's target, the kept
weights against the pruned ones' magnitudes), and the training run's own
final evaluation line for ``--evaluate-only``."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm import estimator, monitored
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.graph.train_op import build_train_step
from tf1_awd_sparse.awd_lm.distributed import cli, model_fn
from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.training import train_graph
from tf1_awd_sparse.transforms.magnitude_pruning import PRUNING_COLLECTIONS
from tf1_awd_sparse.transforms import PRUNING_MASKS
from support.graphs import ancestors
from support.lm import TINY_HPARAMS
from support.versions import needs_estimator
from support.tolerances import U32

from support import ROOT

# Pruned to half by step 8, the runs' last step: the last mask update is
# at the last step, after its gradient step.
PRUNED = TINY_HPARAMS + (",pruning=magnitude,pruning_begin_step=0,"
                         "pruning_end_step=8,pruning_frequency=2,"
                         "target_sparsity=0.5")

ENTRIES = [pytest.param("estimator", marks=needs_estimator), "monitored"]


def test_build_train_step_clips_runs_update_ops_and_counts_steps():
    """One SGD step against numpy: the gradient clipped to global norm
    ``clip``, the UPDATE_OPS run with it, the global step incremented."""
    c = np.array([3.0, -4.0, 12.0], np.float32)   # norm 13
    w0 = np.array([1.0, 2.0, 3.0], np.float32)
    with tf.Graph().as_default():
        w = tf.Variable(w0)
        ran = tf.Variable(0.0)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, ran.assign_add(1.0))
        step = tf.train.get_or_create_global_step()
        op, opt = build_train_step(tf.reduce_sum(c * w), 0.5,
                                   {"optimizer": "sgd", "clip": 0.25},
                                   step)
        assert isinstance(opt, tf.train.GradientDescentOptimizer)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(op)
            got_w, got_ran, got_step = sess.run([w, ran, step])
    # The norm is exact (169 = 9 + 16 + 144, sqrt 13); TF rounds 1 / 13,
    # its product with c and w - 0.5 g, numpy c / 13 and the subtraction:
    # with |update| <= 0.12 |w'|, <= 3 u relative to w' (was rtol 1e-6).
    np.testing.assert_allclose(got_w, w0 - 0.5 * c * 0.25 / 13.0,
                               rtol=3 * U32)
    assert (got_ran, got_step) == (1.0, 1)


def test_build_train_step_magnitude_pruning_needs_a_global_step():
    with tf.Graph().as_default():
        w = tf.Variable(1.0)
        with pytest.raises(ValueError, match="global_step.*magnitude"):
            build_train_step(w * 2.0, 1.0, {"pruning": "magnitude"})


def _params(**extra):
    params = presets.params_for("demo", "awd",
                                cli.parse_hparams(PRUNED))
    params.update(vocab_size=20, **extra)
    return presets.check_params(params)


def _ancestors(op):
    """Every op the run of ``op`` (an op or a tensor) runs, transitively
    (test_compose's walk over inputs and control inputs)."""
    return ancestors([getattr(op, "op", op)])


def _assigned_variable(op):
    """The name of the variable an assign op writes (through the
    ``tf.cond`` switches of a conditional update)."""
    target = op.inputs[0].op
    while target.type in ("Switch", "RefSwitch", "Identity", "RefIdentity"):
        target = target.inputs[0].op
    return target.name


def _check_step(train_op, graph):
    """The pieces of the one training step in ``train_op``'s run: every
    pruning mask assigned by the schedule's op, every UPDATE_OP, the
    global-norm clip and the global step's increment."""
    ran = _ancestors(train_op)
    names = {op.name for op in ran}
    masks = graph.get_collection(PRUNING_MASKS)
    assert len(masks) == 3    # the embedding and the two kernels
    assigned = {_assigned_variable(op) for op in ran
                if op.type in ("Assign", "AssignVariableOp")}
    assert {m.op.name for m in masks} <= assigned, assigned
    updates = [getattr(u, "op", u)
               for u in graph.get_collection(tf.GraphKeys.UPDATE_OPS)]
    assert updates and set(updates) <= ran
    assert any("clip_by_global_norm" in n for n in names)
    assert any(op.type in ("AssignAdd", "AssignAddVariableOp")
               and "global_step" in op.inputs[0].op.name for op in ran)


def test_loop_and_model_fn_build_the_same_step():
    """The loop's train op and model_fn's (what the Estimator and the
    monitored command line run) hold the same pieces; before the one
    step, model_fn's never updated the pruning masks."""
    params = _params(use_vd=True)
    g = train_graph.Graph(as_params(params))
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(g.meta_graph)   # its collections too
        _check_step(graph.as_graph_element(g.train_op), graph)
    with tf.Graph().as_default() as graph:
        tf.train.get_or_create_global_step()
        ids = tf.zeros([2, 5], tf.int32)
        _, op = model_fn.train_step({"inputs": ids}, ids,
                                    dict(params, lr=1.0))
        _check_step(op, graph)


def _quiet_run(run, argv):
    verbosity = tf.logging.get_verbosity()
    try:
        with tf.Graph().as_default():
            return run(argv)
    finally:
        tf.logging.set_verbosity(verbosity)


@pytest.mark.parametrize("entry", ENTRIES)
def test_magnitude_pruning_prunes_under_the_distributed_drivers(tmp_path,
                                                                entry):
    """8 steps of the schedule's 8 under each command line: every mask at
    the target sparsity (within a few entries), the zeros on the smallest
    magnitudes, and the model's masked weights zero where the mask is."""
    model_dir = str(tmp_path / "model")
    run = {"estimator": estimator.run, "monitored": monitored.run}[entry]
    _quiet_run(run, ["--model-dir", model_dir, "--hparams", PRUNED,
                     "--threads", "1", "--train-steps", "8"])
    config = modeldir.read_config(os.path.join(model_dir, "config.json"))
    with tf.Graph().as_default() as graph:
        ids = tf.zeros([1, 2], tf.int32)
        model.build_lm({"inputs": ids, "targets": ids}, "eval",
                       config["params"])
        masks = graph.get_collection(PRUNING_COLLECTIONS[0])
        masked = graph.get_collection(PRUNING_COLLECTIONS[2])
        weights = graph.get_collection(PRUNING_COLLECTIONS[3])
        assert len(masks) == 3
        with tf.Session() as sess:
            tf.train.Saver().restore(sess,
                                     tf.train.latest_checkpoint(model_dir))
            values = sess.run([masks, masked, weights])
    for mask, used, weight in zip(*values):
        assert abs((mask == 0).mean() - 0.5) <= 3.0 / mask.size, mask
        assert (np.abs(weight[mask == 1]).min()
                >= np.abs(weight[mask == 0]).max())
        np.testing.assert_array_equal(used, weight * mask)
        assert not used[mask == 0].any()


def test_magnitude_pruning_is_refused_under_mirrored(tmp_path):
    args = monitored.parse_args(["--model-dir", str(tmp_path), "--hparams",
                                 PRUNED, "--distribute", "mirrored"])
    with pytest.raises(ValueError, match="pruning 'magnitude'.*mirrored"):
        cli.command_params(args)


def _own_lines(stderr):
    """stderr without TensorFlow 2.21's C++ start-up lines (absl)."""
    return [line for line in stderr.strip().splitlines()
            if not re.match(r"[IWEF]\d{4} |WARNING: All log messages before "
                            r"absl::InitializeLog", line)]


def _cli(entry, *argv):
    proc = subprocess.run(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm." + entry,
         "--threads", "1"] + list(argv),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2"))
    evals = [json.loads(line[len("eval: "):])
             for line in proc.stdout.splitlines() if line.startswith("eval: ")]
    return proc, evals


@pytest.mark.parametrize("entry", ENTRIES)
def test_evaluate_only_reads_the_model_directory(tmp_path, entry):
    """Train with --hparams, then --evaluate-only with none: the same
    figures as the training's final evaluation (the directory's
    config.json is its configuration); a flag that disagrees with it is
    refused in one line, one that agrees is accepted."""
    model_dir = str(tmp_path / "model")
    proc, evals = _cli(entry, "--model-dir", model_dir,
                       "--hparams", TINY_HPARAMS, "--train-steps", "4")
    assert proc.returncode == 0 and len(evals) == 1, proc.stderr
    config = modeldir.read_config(os.path.join(model_dir, "config.json"))
    assert config["params"].model.emb_size == 4
    assert config["checkpoint"] == "model.ckpt-4"
    assert os.path.exists(os.path.join(model_dir, "model.ckpt-4.index"))
    proc, again = _cli(entry, "--model-dir", model_dir, "--evaluate-only")
    assert proc.returncode == 0 and len(again) == 1, proc.stderr
    assert again[0]["global_step"] == 4
    # The same evaluation graph on the checkpoint's copy of the trained
    # values, one thread, printed with repr: bit-identical in practice;
    # rel 1e-6 (17 u) would still catch any other checkpoint or window.
    for key in ("xent", "perplexity"):
        np.testing.assert_allclose(again[0][key], evals[0][key], rtol=1e-6)
    proc, agreed = _cli(entry, "--model-dir", model_dir, "--evaluate-only",
                        "--hparams", "emb_size=4", "--preset", "demo")
    assert proc.returncode == 0 and agreed == again, proc.stderr
    proc, none = _cli(entry, "--model-dir", model_dir, "--evaluate-only",
                      "--hparams", "emb_size=8")
    assert proc.returncode == 2 and not none
    lines = _own_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert re.match(r"error: --hparams emb_size 8 disagrees with "
                    r".*config\.json, which holds 4", lines[0]), lines


def _args(model_dir, *extra):
    return monitored.parse_args(["--model-dir", model_dir] + list(extra))


def test_command_params_one_source_and_one_line_errors(tmp_path):
    """Without config.json the flags make the parameters; with one, its
    params (flags left out); misspelt keys in either are refused naming
    the closest key; a corpus of another vocabulary is refused."""
    model_dir = str(tmp_path)
    params, corpus = cli.command_params(
        _args(model_dir, "--hparams", TINY_HPARAMS))
    assert params.optimization.lr == 2.0
    assert params.model.vocab_size == len(corpus.vocab)
    args = _args(model_dir, "--train-steps", "3")
    args.hparams = TINY_HPARAMS
    cli.write_model_dir(args, params.replace(use_vd=True), corpus)
    stored = json.load(open(os.path.join(model_dir, "config.json")))
    assert "use_vd" not in stored["params"]
    from_dir, _ = cli.command_params(_args(model_dir))
    assert from_dir == params
    with pytest.raises(ValueError, match="did you mean 'lr'"):
        cli.command_params(_args(model_dir, "--hparams", "lrr=2"))
    with pytest.raises(ValueError, match="--model disagrees|--model 'plain'"):
        cli.command_params(_args(model_dir, "--model", "plain"))
    stored["params"]["hiden_size"] = stored["params"].pop("hidden_size")
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(stored, f)
    with pytest.raises(modeldir.ConfigError,
                       match="'hiden_size'.*did you mean 'hidden_size'"):
        cli.command_params(_args(model_dir))
    stored["params"]["hidden_size"] = stored["params"].pop("hiden_size")
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(stored, f)
    vocab = os.path.join(model_dir, "vocab.txt")
    words = open(vocab).read().split()
    with open(vocab, "w") as f:    # another corpus's order of ids
        f.write("\n".join(words[1:] + words[:1]) + "\n")
    # No --data-dir given: the error names the corpus config.json
    # recorded (here the embedded one), not a flag.
    with pytest.raises(ValueError, match="the corpus of .*config.json: "
                                         "the corpus's vocabulary"):
        cli.command_params(_args(model_dir))
