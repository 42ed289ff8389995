"""examples/awd_lm.py --quant end to end on a tiny corpus: the float model,
then its quantization-aware fine-tuning from the float best checkpoint,
scored beside it; range variables in the checkpoint and in TensorBoard; an
extended (resumed) quantized run equal to an uninterrupted one."""
import json
import os
import shutil

import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.training import train
from tf1_awd_sparse.ops.quantized_lstm import range_names
from support.lm import TINY, script, write_ptb

# The plain model learns the patterned corpus within 5 epochs at lr 10
# (validation perplexity ~4 against ~10 for an untrained model).
ARGS = TINY + ["--model", "plain", "--lr", "10", "--max-epochs", "5",
               "--quant", "--quant-delay", "3"]


def _summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return {m["model"]: m for m in json.load(f)["models"]}


@pytest.fixture(scope="module")
def quant_run(tmpdir_factory):
    """(data dir, out dir, printed lines) of a 5 + 2 epoch --quant run."""
    root = tmpdir_factory.mktemp("quant")
    data_dir = str(root.mkdir("ptb"))
    write_ptb(data_dir)
    out = str(root.join("out"))
    rc = script.main(ARGS + ["--data-dir", data_dir, "--out", out,
                             "--quant-epochs", "2"])
    assert rc == 0
    with open(os.path.join(out, "summary.json")) as f:
        lines = json.load(f)["table"]
    return data_dir, out, lines


def _events(run_dir):
    """{tag: {step: value}} of the scalar summaries in run_dir."""
    found = {}
    for name in os.listdir(run_dir):
        if name.startswith("events.out"):
            for event in tf.train.summary_iterator(os.path.join(run_dir,
                                                                name)):
                for v in event.summary.value:
                    found.setdefault(v.tag, {})[event.step] = v.simple_value
    return found


def test_quant_run_scores_fake_quant_beside_float(quant_run):
    _, out, lines = quant_run
    models = _summary(out)
    assert list(models) == ["plain", "plain+q"]
    fl, q = models["plain"], models["plain+q"]
    assert not fl["quant"] and q["quant"]
    assert q["epochs_run"] == 2 and q["stop_reason"] == "max epochs (2)"
    assert q["init_from"] == train.best_checkpoint(os.path.join(out,
                                                                "plain"))
    # Warm start: the first fine-tuning epoch is far better than the float
    # model's first epoch from its random initialization.
    assert q["epochs"][0]["valid_ppl"] < 0.7 * fl["epochs"][0]["valid_ppl"]
    # The 8-bit model is finite and within a sane factor of the float one
    # (below 1 here: the float model was still improving, and fine-tuning
    # trains it on; a broken quantization would send it towards ~10).
    ratio = q["test_ppl"] / fl["test_ppl"]
    assert 0.3 < ratio < 1.5, (q["test_ppl"], fl["test_ppl"])
    assert fl["test_ppl"] < 0.6 * fl["epochs"][0]["valid_ppl"]  # it learned
    assert any(l.startswith("plain+q ") for l in lines)
    assert ("plain fake-quant (8-bit cells) / float test perplexity: %.3f"
            % ratio) in lines


def test_ranges_in_checkpoint_and_tensorboard(quant_run):
    _, out, _ = quant_run
    float_vars = dict(tf.train.list_variables(
        train.best_checkpoint(os.path.join(out, "plain"))))
    assert not any("/quant/" in n for n in float_vars)
    run_dir = os.path.join(out, "plain_quant")
    last = os.path.join(run_dir, "last", "model.ckpt-2")
    reader = tf.train.load_checkpoint(last)
    q_vars = dict(tf.train.list_variables(last))
    assert "global_step" in q_vars
    # Same model variables as the float checkpoint, plus ranges.
    assert set(n for n in float_vars if n.startswith("lm/")
               and "NTASGD" not in n) <= set(q_vars)
    events = _events(run_dir)
    for layer in (0, 1):
        for name in range_names(False, False):
            prefix = "lm/layer_%d/lstm_%d/quant/%s/" % (layer, layer, name)
            lo, hi = (reader.get_tensor(prefix + end)
                      for end in ("min", "max"))
            # Learned: moved away from the initial [-6, 6], min < max.
            assert lo < hi and (lo, hi) != (-6.0, 6.0)
            tag = "quant_range/layer_%d/lstm_%d/%s/" % (layer, layer, name)
            assert events[tag + "min"][2] == pytest.approx(lo)
            assert events[tag + "max"][2] == pytest.approx(hi)
    assert reader.get_tensor("global_step") > 3  # past quant_delay


def test_extended_quant_run_equals_uninterrupted(quant_run, tmpdir):
    """One fine-tuning epoch, then --resume with two: the same epochs and
    test perplexity as the two-epoch run (the float phase is reused)."""
    data_dir, out, _ = quant_run
    cut = str(tmpdir.join("cut"))
    shutil.copytree(os.path.join(out, "plain"), os.path.join(cut, "plain"))
    args = ARGS + ["--data-dir", data_dir, "--out", cut, "--resume"]
    assert script.main(args + ["--quant-epochs", "1"]) == 0
    assert _summary(cut)["plain+q"]["epochs_run"] == 1
    assert script.main(args + ["--quant-epochs", "2"]) == 0
    want, got = _summary(out)["plain+q"], _summary(cut)["plain+q"]
    keys = ("train_loss", "valid_loss")
    assert ([r[k] for r in got["epochs"] for k in keys]
            == pytest.approx([r[k] for r in want["epochs"] for k in keys],
                             rel=1e-6))
    assert got["test_ppl"] == pytest.approx(want["test_ppl"], rel=1e-6)
    assert got["quant_ranges"] == pytest.approx(want["quant_ranges"],
                                                rel=1e-6)
