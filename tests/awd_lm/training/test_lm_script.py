"""examples/awd_lm.py end to end on tiny corpora: a two-epoch run, bad data,
kill-and-resume equal to an uninterrupted run, and what an averaging
NT-ASGD run validates."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

from support.lm import SCRIPT, TINY, script, write_ptb
from support.lm_api import tree_bytes

def test_two_epoch_run_on_ptb_layout(tmpdir, capsys):
    data_dir = str(tmpdir.mkdir("ptb"))
    write_ptb(data_dir)
    out = str(tmpdir.join("out"))
    rc = script.main(TINY + ["--model", "both", "--data-dir", data_dir,
                             "--max-epochs", "2", "--out", out])
    printed = capsys.readouterr().out
    assert rc == 0
    assert "mapped to <unk>: valid 0, test 1" in printed
    assert "awd / plain test perplexity" in printed
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert [m["model"] for m in summary["models"]] == ["plain", "awd"]
    for m in summary["models"]:
        assert m["epochs_run"] == 2 and len(m["epochs"]) == 2
        assert m["stop_reason"] == "max epochs (2)"
        # Scored at the best-validation checkpoint.
        best = min(m["epochs"], key=lambda r: r["valid_loss"])
        assert m["best_epoch"] == best["epoch"]
        assert 1 < m["test_ppl"] < 20  # 9-word vocabulary
        run_dir = os.path.join(out, m["model"])
        assert os.path.exists(os.path.join(run_dir, "best", "checkpoint"))
        assert any(n.startswith("events.out") for n in os.listdir(run_dir))
    assert os.path.getsize(os.path.join(out, "valid_ppl.png")) > 1000


def test_bad_data_exits_2_with_one_line(tmpdir):
    d = str(tmpdir)
    write_ptb(d)
    with open(os.path.join(d, "valid.txt"), "wb") as f:
        f.write(b"ok\n\xc3\x28 bad\n")
    proc = subprocess.run([sys.executable, SCRIPT, "--data-dir", d,
                           "--out", os.path.join(d, "o")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    rc, err = proc.returncode, proc.stderr.strip()
    assert rc == 2
    assert err.splitlines() == [
        "error: %s: undecodable bytes at byte offset 3 (not UTF-8: invalid "
        "continuation byte)" % os.path.join(d, "valid.txt")]


def losses(run_dir):
    with open(os.path.join(run_dir, "state.json")) as f:
        state = json.load(f)
    return ([(r["epoch"], r["train_loss"], r["valid_loss"], r["averaged"])
             for r in state["epochs"]], state["test_loss"],
            state["averaging_epoch"])


def test_last_keeps_the_two_latest_epochs(tmpdir):
    """last/ holds the epoch's checkpoint and the one before, not every
    epoch's (a 60-epoch run kept 60)."""
    out = str(tmpdir.join("out"))
    data_dir = str(tmpdir.mkdir("ptb"))
    write_ptb(data_dir)
    assert script.main(TINY + ["--model", "plain", "--data-dir", data_dir,
                               "--out", out, "--max-epochs", "4",
                               "--patience", "9"]) == 0
    last = os.path.join(out, "plain", "last")
    kept = sorted(name for name in os.listdir(last)
                  if name.endswith(".index"))
    assert kept == ["model.ckpt-3.index", "model.ckpt-4.index"], kept


@pytest.fixture(scope="module")
def averaging_run(tmp_path_factory):
    """A 4-epoch awd run on a corpus whose validation worsens, so that
    NT-ASGD switches to averaging on the way: (its arguments, data
    directory, run directory)."""
    root = tmp_path_factory.mktemp("averaging")
    data_dir = str(root / "ptb")
    os.makedirs(data_dir)
    write_ptb(data_dir, shuffled_valid=True)
    args = TINY + ["--model", "awd", "--max-epochs", "4", "--nonmono", "1",
                   "--patience", "9", "--data-dir", data_dir]
    assert script.main(args + ["--out", str(root / "ref")]) == 0
    return args, data_dir, str(root / "ref" / "awd")


def test_kill_and_resume_equals_uninterrupted(averaging_run, tmpdir):
    args, _, ref = averaging_run
    cut = str(tmpdir.join("cut"))
    state = os.path.join(cut, "awd", "state.json")
    proc = subprocess.Popen([sys.executable, SCRIPT] + args + ["--out", cut],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not os.path.exists(state) and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # mid-epoch 2 (or later)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    with open(state) as f:
        killed_at = json.load(f)
    assert not killed_at["done"]
    rc = subprocess.run([sys.executable, SCRIPT] + args + ["--out", cut,
                                                          "--resume"],
                        stdout=subprocess.PIPE, timeout=120).returncode
    assert rc == 0
    want, got = losses(ref), losses(os.path.join(cut, "awd"))
    assert want[2] is not None  # the run switched to averaging on the way
    assert got[0] == pytest.approx(want[0], rel=1e-6)
    assert got[1:] == pytest.approx(want[1:], rel=1e-6)


def test_fresh_run_deletes_only_its_owntree_bytes(tmpdir):
    from tf1_awd_sparse.awd_lm.config import rundir
    for d in ("last", "best", "data"):
        tmpdir.mkdir(d).join("x").write("x")
    for f in ("state.json", "summary.json", "events.out.tfevents.1.h",
              "notes.txt"):
        tmpdir.join(f).write("x")
    # What `train.Trainer` calls on a fresh run.
    rundir.RunDir(str(tmpdir)).clear()
    assert sorted(os.listdir(str(tmpdir))) == ["data", "notes.txt"]


def test_diverged_run_exits_1_naming_the_step(tmpdir, capsys):
    """--lr 1e12 gave a finite loss near 5e10 nats per token (perplexity
    inf) and exit 0 with a diverged model in summary.json."""
    data_dir = str(tmpdir.mkdir("ptb"))
    write_ptb(data_dir)
    out = str(tmpdir.join("out"))
    with pytest.raises(SystemExit) as stop:
        script.main(TINY + ["--model", "awd", "--data-dir", data_dir,
                            "--out", out, "--lr", "1e12"])
    assert stop.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: training diverged at epoch 1, step "), err
    assert err[0].endswith("no checkpoint was written"), err
    assert not os.path.exists(os.path.join(out, "summary.json"))
    assert not [p for p in tree_bytes(out) if "model.ckpt" in p]


@pytest.fixture
def trainer_after_one_epoch(tmpdir):
    from tf1_awd_sparse.awd_lm.corpus import data
    from tf1_awd_sparse.awd_lm.config import presets
    from tf1_awd_sparse.awd_lm.config.params import USER_KEYS
    from tf1_awd_sparse.awd_lm.training import train
    data_dir = str(tmpdir.mkdir("ptb"))
    write_ptb(data_dir)
    args = script.parse_args(TINY)
    # The flags are the keys a user sets (the stage keys are none).
    params = presets.params_for("demo", "awd", {
        k: getattr(args, k) for k in USER_KEYS})
    run_dir = str(tmpdir.join("run"))
    trainer = train.Trainer(data.read_ptb(data_dir), params, run_dir)
    trainer.epoch()
    return trainer, run_dir


def test_divergence_keeps_the_last_good_checkpoint(trainer_after_one_epoch):
    from tf1_awd_sparse.awd_lm.graph import checkpoints
    from tf1_awd_sparse.awd_lm.training import epochs
    trainer, run_dir = trainer_after_one_epoch
    before = tree_bytes(run_dir)
    assert "last/model.ckpt-1.index" in before and "best/checkpoint" in before
    trainer.params = trainer.params.replace(lr=1e12)  # a checked Params
    with pytest.raises(epochs.TrainingDiverged) as error:
        trainer.epoch()
    assert (error.value.epoch, error.value.what) == (2, "training loss")
    assert (error.value.step >= 1
            and error.value.loss > checkpoints.DIVERGED_LOSS)
    assert ("kept: the checkpoint of epoch 1 (%s-1)" % os.path.join(
        run_dir, "last", "model.ckpt")) in str(error.value)
    after = {k: v for k, v in tree_bytes(run_dir).items()
             if not k.startswith("events.out")}
    assert after == {k: v for k, v in before.items()
                     if not k.startswith("events.out")}


def test_diverged_validation_saves_no_best(trainer_after_one_epoch,
                                           monkeypatch):
    """A finite training loss, then weights whose validation loss is NaN:
    neither best/ nor last/ takes them."""
    from tf1_awd_sparse.awd_lm.training import epochs, train
    trainer, run_dir = trainer_after_one_epoch
    before = tree_bytes(run_dir)
    monkeypatch.setattr(train, "evaluate", lambda *a: float("nan"))
    with pytest.raises(epochs.TrainingDiverged,
                       match="^training diverged after the last step of "
                       "epoch 2: validation loss nan"):
        trainer.epoch()
    assert {k: v for k, v in tree_bytes(run_dir).items()
            if not k.startswith("events.out")} == {
                k: v for k, v in before.items()
                if not k.startswith("events.out")}


def test_diverged_threshold():
    from tf1_awd_sparse.awd_lm.graph import checkpoints
    # The threshold: the perplexity exp(loss) overflows a float just above.
    assert math.isfinite(math.exp(checkpoints.DIVERGED_LOSS - 1e-9))
    with pytest.raises(OverflowError):
        math.exp(checkpoints.DIVERGED_LOSS + 1e-9)
    for loss, want in ((2.3, False), (709.0, False), (710.0, True),
                       (5e10, True), (float("nan"), True),
                       (float("inf"), True)):
        assert checkpoints.diverged(loss) is want, loss


def test_patience_restarts_when_averaging_starts(tmpdir):
    """NT-ASGD's trigger fires on a stalled validation loss, when patience
    is nearly spent; the averaged weights get `patience` epochs of their
    own: the run stops `patience` epochs after the later of the best epoch
    and the epoch averaging started."""
    data_dir = str(tmpdir.mkdir("ptb"))
    write_ptb(data_dir, shuffled_valid=True)
    out = str(tmpdir.join("out"))
    assert script.main(TINY + ["--model", "awd", "--max-epochs", "12",
                               "--nonmono", "1", "--patience", "2",
                               "--data-dir", data_dir, "--out", out]) == 0
    with open(os.path.join(out, "awd", "state.json")) as f:
        state = json.load(f)
    records = state["epochs"]
    started = state["averaging_epoch"]
    assert started is not None
    best = min(records, key=lambda r: r["valid_loss"])["epoch"]
    last = records[-1]["epoch"]
    assert last < 12, "the run should stop on patience, not max_epochs"
    assert last == max(best, started) + 2
    # Without the restart it would have stopped 2 epochs after the best.
    assert started > best


def test_validation_evaluates_the_averaged_weights_once_averaging(
        averaging_run):
    """Once NT-ASGD averages, an epoch's validation loss is the loss of
    the averaged weights (each variable's NTASGD slot), not of the raw
    weights the epoch ends with: both evaluated here from the last epoch's
    checkpoint, the averages loaded by hand."""
    import tensorflow.compat.v1 as tf
    from tf1_awd_sparse.awd_lm.config.params import as_params
    from tf1_awd_sparse.awd_lm.corpus import data
    from tf1_awd_sparse.awd_lm.training import epochs, train_graph
    _, data_dir, run_dir = averaging_run
    with open(os.path.join(run_dir, "state.json")) as f:
        state = json.load(f)
    record, params = state["epochs"][-1], state["params"]
    assert record["averaged"] and state["averaging_epoch"] < record["epoch"]
    valid = data.batchify(data.read_ptb(data_dir).valid,
                          params["eval_batch_size"])
    g = train_graph.Graph(as_params(params))
    graph, last_saver = g.instance(0)[:2]
    losses = {}
    with tf.Session(graph=graph, config=tf.ConfigProto(
            intra_op_parallelism_threads=1,
            inter_op_parallelism_threads=1)) as sess:
        last_saver.restore(sess, os.path.join(
            run_dir, "last", "model.ckpt-%d" % record["epoch"]))
        losses["raw"] = epochs.evaluate(sess, g, valid, params["bptt"])
        variables = {v.op.name: v for v in
                     graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)}
        averages = sess.run({name[:-len("/NTASGD")]: v
                             for name, v in variables.items()
                             if name.endswith("/NTASGD")})
        assert averages
        for name, value in averages.items():
            variables[name].load(value, sess)
        losses["averaged"] = epochs.evaluate(sess, g, valid, params["bptt"])
    message = ("epoch %d validated %.6f; the raw weights give %.6f, the "
               "averaged %.6f" % (record["epoch"], record["valid_loss"],
                                  losses["raw"], losses["averaged"]))
    print(message)
    assert abs(losses["raw"] - losses["averaged"]) > 1e-3, message
    assert record["valid_loss"] == pytest.approx(losses["averaged"],
                                                 rel=1e-6), message
