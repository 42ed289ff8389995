"""A run's whole plan, recorded at its start (issue 54): ``train --quant
--quant-epochs 1`` interrupted in its float phase and resumed with
``--resume`` alone finishes the quantization-aware phase it asked for, as
asked; and a run recorded by 0.3.0 (its config.json names only its
corpus) resumes on the embedded corpus without --data-dir."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tf1_awd_sparse.awd_lm.config import modeldir, presets, runrecord
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.corpus import synthetic
from tf1_awd_sparse.awd_lm.training.plan import plan_run

from support import ROOT

COMMAND = [sys.executable, "-m", "tf1_awd_sparse.awd_lm", "train"]
#: A tiny model on a tiny embedded corpus: an epoch takes about a second.
TINY_HMM = ["--preset", "demo", "--emb-size", "8", "--hidden-size", "16",
            "--batch-size", "4", "--eval-batch-size", "2", "--bptt", "8",
            "--threads", "1", "--no-progress", "--hmm-train", "2000",
            "--hmm-valid", "400", "--hmm-test", "400", "--hmm-vocab", "50",
            "--hmm-states", "4"]
#: The ``params`` of the config.json files release 0.3.0 wrote.
RELEASE_PARAMS = os.path.join(ROOT, "tests", "data",
                              "awd_lm_0.3.0_demo_params.json")


def _models(out):
    with open(os.path.join(out, "summary.json")) as f:
        return {m["model"]: m for m in json.load(f)["models"]}


@pytest.mark.slow   # 18 s on an idle 2-core machine; the plan's reading
# is covered on every version by the in-process tests below.
def test_resume_after_ctrl_c_finishes_the_planned_quant_phase(tmp_path):
    """The float phase's config.json holds the plan from its first epoch;
    `--resume` alone then runs --quant's phase for the 1 epoch asked (it
    ended with no awd+q model; `--resume --quant` ran the default 3)."""
    out = str(tmp_path / "run")
    state = os.path.join(out, "awd", "state.json")
    proc = subprocess.Popen(
        COMMAND + TINY_HMM + ["--max-epochs", "3", "--quant",
                              "--quant-epochs", "1", "--quant-delay", "2",
                              "--out", out],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not os.path.exists(state) and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)   # Ctrl-C after the first epoch
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    with open(state) as f:
        assert not json.load(f)["done"]
    assert not os.path.exists(os.path.join(out, "awd_quant"))
    resumed = subprocess.run(COMMAND + ["--out", out, "--resume",
                                        "--no-progress"],
                             cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    models = _models(out)
    assert sorted(models) == ["awd", "awd+q"]
    assert models["awd"]["epochs_run"] == 3
    quant = models["awd+q"]
    assert quant["epochs_run"] == 1
    assert quant["params"]["quant_delay"] == 2
    assert quant["params"]["hmm_vocab"] == 50   # the run's own corpus


def _planned_run(tmp_path, params):
    """A run folder whose float phase recorded ``params``' plan and has
    not finished (no checkpoint yet): ``tmp_path/run``."""
    out = tmp_path / "run"
    (out / "awd").mkdir(parents=True)
    words = [synthetic.data.EOS] + ["w%d" % i for i in range(1, 1000)]
    params = as_params(params)
    float_params = presets.split_quant(params)[0]
    modeldir.write_config(str(out / "awd"),
                          float_params.replace(vocab_size=1000),
                          words, {"stage": "float", "data_dir": None,
                                  "plan": runrecord.plan_entry(params)},
                          checkpoint="best/model.ckpt")
    return out


def test_a_compression_flag_refused_names_the_compress_program(tmp_path,
                                                                capsys):
    """A planned compression binds --resume too; its refusal names the
    program that compresses the trained model again with other settings
    (a float-phase flag's does not)."""
    from tf1_awd_sparse.awd_lm.programs import train as program
    from support.lm import one_error_line
    params = presets.params_for("demo", "awd", {"compress": "magnitude",
                                                "target_sparsity": 0.9})
    out = _planned_run(tmp_path, params)
    line = one_error_line(capsys, lambda: program.main(
        ["--out", str(out), "--resume", "--target-sparsity", "0.8"]))
    assert "--target-sparsity 0.8 contradicts the run" in line
    assert "awd-lm compress --out %s" % out in line
    line = one_error_line(capsys, lambda: program.main(
        ["--out", str(out), "--resume", "--lr", "3"]))
    assert "--lr 3.0 contradicts the run" in line
    assert "awd-lm compress" not in line


def test_resume_refuses_a_flag_contradicting_the_plan(tmp_path, capsys):
    """A recorded plan binds: a --quant-delay other than the one planned
    is refused in one line naming it, nothing written; --quant-epochs
    extends (documented)."""
    from tf1_awd_sparse.awd_lm.programs import train as program
    from support.lm import one_error_line
    params = presets.params_for("demo", "awd", {"quant": True,
                                                "quant_delay": 2,
                                                "quant_epochs": 1})
    out = _planned_run(tmp_path, params)
    before = sorted(os.listdir(str(out / "awd")))
    line = one_error_line(capsys, lambda: program.main(
        ["--out", str(out), "--resume", "--quant-delay", "5"]))
    assert "--quant-delay 5 contradicts the run" in line
    assert "--quant-delay 2" in line
    assert sorted(os.listdir(str(out / "awd"))) == before
    # No flag: the planned phase, as planned (its float phase unfinished,
    # no awd_quant/ yet).
    plan = plan_run(str(out), {}, resume=True)
    _, quant = plan.phases[0]
    assert quant is not None and quant.stopping.max_epochs == 1
    plan = plan_run(str(out), {"quant_epochs": 4}, resume=True)
    _, quant = plan.phases[0]
    assert quant.quantization.quant_delay == 2
    assert quant.stopping.max_epochs == 4


def test_resume_may_change_the_shipping_target(tmp_path, capsys):
    """--ship-ppl-target only picks among the files made: a resumed run
    takes a new one (it reaches the compression's parameters), while a
    flag of the planned training is still refused."""
    from tf1_awd_sparse.awd_lm.programs import train as program
    from support.lm import one_error_line
    params = presets.params_for("demo", "awd", {
        "compress": "magnitude", "ship_ppl_target": 1.05,
        "target_sparsity": 0.9})
    out = _planned_run(tmp_path, params)
    plan = plan_run(str(out), {"ship_ppl_target": 1.2}, resume=True)
    assert plan.configs[0].compression.ship_ppl_target == 1.2
    line = one_error_line(capsys, lambda: program.main(
        ["--out", str(out), "--resume", "--target-sparsity", "0.8"]))
    assert "--target-sparsity 0.8 contradicts the run" in line


def _write_0_3_0_run(out, name):
    """An ``awd/`` directory as release 0.3.0 left it after training on
    the embedded corpus: config.json with its parameters (0.3.0's keys)
    and a ``produced_by`` that names only the corpus, vocab.txt, and a
    state.json of an unfinished run."""
    with open(RELEASE_PARAMS) as f:
        params = json.load(f)["awd/awd"]
    run_dir = os.path.join(out, "awd")
    os.makedirs(run_dir)
    corpus, _ = synthetic.hmm_corpus(
        seed=params["hmm_seed"], n_train=params["hmm_train"],
        n_valid=params["hmm_valid"], n_test=params["hmm_test"],
        n_states=params["hmm_states"], vocab_size=params["hmm_vocab"])
    assert corpus.name == name
    # 0.3.0's produced_by of a finished float run: no data_dir, no plan.
    produced = {"stage": "float", "technique": None, "model": "awd",
                "sparsity": None, "valid_ppl": 100.0, "test_ppl": 100.0,
                "init_from": None, "epochs_run": 2, "best_epoch": 2,
                "corpus": corpus.name}
    modeldir.write_config(run_dir, as_params(params), list(corpus.vocab),
                          produced, checkpoint="best/model.ckpt")
    # 0.3.0's state.json after two epochs: every key its loop wrote.
    epochs = [{"epoch": e, "model": "awd", "train_loss": 5.0,
               "valid_loss": 4.6, "train_ppl": 148.4, "valid_ppl": 99.5,
               "tokens_per_s": 900.0, "seconds": 3.0, "averaged": False,
               "lr": params["lr"], "best": True, "averaging_started": False}
              for e in (1, 2)]
    with open(os.path.join(run_dir, "state.json"), "w") as f:
        json.dump({"epoch": 2, "best_valid": 4.6, "best_epoch": 2,
                   "since_best": 0, "val_history": [4.6, 4.6],
                   "averaging_epoch": None, "epochs": epochs,
                   "train_seconds": 6.0, "done": False, "params": params,
                   "best_reached": True}, f)
    return params


def test_a_0_3_0_run_on_the_embedded_corpus_resumes_without_data_dir(
        tmp_path):
    """Issue 54, item 10: only the corpus's name was recorded; the run
    continues on the embedded corpus its hmm_* parameters describe, with
    its own parameters, and no --data-dir is asked for."""
    out = str(tmp_path / "old")
    name = "hmm(seed=1234, states=16, vocab=1000)"
    params = _write_0_3_0_run(out, name)
    record = runrecord.read(out, "awd")
    assert record.produced == {k: v for k, v in record.produced.items()}
    assert record.plan == {}   # 0.3.0 recorded no plan
    assert runrecord.corpus_dir(record, None) is None
    plan = plan_run(out, {}, resume=True)
    assert plan.models == ["awd"] and plan.data_dir is None
    assert plan.corpus.name == name
    config = plan.configs[0].to_flat()
    for key in ("emb_size", "hidden_size", "max_epochs", "lr", "hmm_vocab"):
        assert config[key] == params[key], key
    float_params, quant_params = plan.phases[0]
    assert quant_params is None   # 0.3.0's run had no --quant phase
