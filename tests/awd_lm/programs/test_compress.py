"""``awd-lm compress`` and ``train --resume`` on a run trained with its own
flags (issue 42, item 3): the run is read back as it was made (corpus
directory, sizes, epochs, its --quant phase), never on the embedded demo
corpus; a flag that contradicts it is refused, nothing deleted; no refusal
suggests deleting a trained model; --out's summary.json keeps its rows;
the float model's files are never written."""
import json
import os
import shutil

import pytest

from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.config.runrecord import RunSummary
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm import savedmodel
from tf1_awd_sparse.awd_lm.programs import compress as compress_program
from tf1_awd_sparse.awd_lm.programs import export as export_program
from tf1_awd_sparse.awd_lm.programs import train as train_program
from tf1_awd_sparse.awd_lm.training import records, train
from tf1_awd_sparse.awd_lm.training.compression import pipeline
from support.lm import one_error_line, write_ptb
from support.lm_api import summary_json, tree_bytes

#: A run with non-default sizes on a --data-dir, and its --quant phase
#: (one epoch: the pipeline's QAT then takes the run's --quant-epochs).
#: The seed is the preset's (1111), recorded with the run.
TRAIN = ["--model", "awd", "--emb-size", "16", "--hidden-size", "24",
         "--num-layers", "2", "--max-epochs", "1", "--batch-size", "4",
         "--eval-batch-size", "4", "--bptt", "8", "--threads", "1",
         "--no-progress", "--quant", "--quant-epochs", "1",
         "--quant-delay", "0"]
#: The documented command, and nothing else.
COMPRESS = ["--compress", "magnitude", "--target-sparsity", "0.5",
            "--finetune-epochs", "1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(data dir, --out) of the run, trained once for the module; each
    test that may write works on a copy (`_copy`)."""
    root = tmp_path_factory.mktemp("compress_command")
    data_dir = str(root / "ptb")
    os.makedirs(data_dir)
    write_ptb(data_dir)
    out = str(root / "run")
    assert train_program.main(TRAIN + ["--data-dir", data_dir,
                                       "--out", out]) == 0
    return data_dir, out


def _copy(trained, tmp_path):
    """A copy of the trained run's --out."""
    out = str(tmp_path / "run")
    shutil.copytree(trained[1], out)
    return out


def _models(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["models"]


def _phases(out):
    """{path: bytes} of every file of the float model and its --quant
    phase (checkpoints, state, summaries, config, events)."""
    return {run: tree_bytes(os.path.join(out, run))
            for run in ("awd", "awd_quant")}


def test_compress_reads_the_recorded_run(trained, tmp_path, monkeypatch,
                                         capsys):
    """The documented command alone: the pipeline gets the run's corpus
    (its --data-dir, not the embedded one), sizes and --quant-epochs, and
    the float model's summary; the float and --quant files are not
    written, and summary.json keeps both rows (the pipeline itself is
    stubbed: `test_the_documented_command_compresses` runs it)."""
    data_dir, _ = trained
    out = _copy(trained, tmp_path)
    before, rows = _phases(out), _models(out)
    assert [r["model"] for r in rows] == ["awd", "awd+q"]
    calls = []
    monkeypatch.setattr(pipeline, "run_pipeline", lambda *args, **kwargs: (
        calls.append((args, kwargs)), {"table": ["(table)"]})[1])
    assert compress_program.main(["--out", out] + COMPRESS) == 0
    (corpus, params, float_summary, float_dir, out_dir, techniques), \
        options = calls[0]
    assert len(calls) == 1 and options["resume"] is True
    assert list(corpus.vocab) == data.read_ptb(data_dir).vocab
    assert (params["emb_size"], params["hidden_size"], params["num_layers"],
            params["batch_size"], params["bptt"], params["max_epochs"]) == (
                16, 24, 2, 4, 8, 1)
    assert (params["quant_epochs"], params["target_sparsity"],
            params["finetune_epochs"], techniques) == (1, 0.5, 1,
                                                       ["magnitude"])
    assert float_dir == os.path.join(out, "awd")
    assert out_dir == os.path.join(out, "awd") + "_compress"
    assert float_summary.to_json() == rows[0]
    assert _phases(out) == before
    assert _models(out) == rows
    printed = capsys.readouterr().out
    assert "corpus %s:" % os.path.abspath(data_dir) in printed


def test_a_flag_contradicting_the_run_is_refused_nothing_deleted(
        trained, tmp_path, capsys):
    """The corpus and sizes given again with --max-epochs 3 continued the
    float training; other sizes said to start over (--overwrite). Now one
    line naming the flag, exit 2, nothing changed."""
    data_dir, _ = trained
    out = _copy(trained, tmp_path)
    before = tree_bytes(out)
    for main, argv, named in (
            (compress_program.main, TRAIN + ["--data-dir", data_dir,
                                             "--out", out, "--max-epochs",
                                             "3"] + COMPRESS,
             "--max-epochs 3 contradicts the run in %s (made with "
             "--max-epochs 1)" % os.path.join(out, "awd")),
            (compress_program.main, ["--out", out, "--emb-size", "32"]
             + COMPRESS, "--emb-size 32 contradicts"),
            (compress_program.main, ["--out", out, "--data-dir", str(
                tmp_path)] + COMPRESS, "--data-dir %s contradicts" % tmp_path),
            (train_program.main, ["--out", out, "--resume", "--hidden-size",
                                  "32", "--lr", "3"],
             "--hidden-size 32, --lr 3.0 contradict the run")):
        line = one_error_line(capsys, lambda: main(argv))
        assert named in line, line
        assert "--overwrite" not in line, line
        assert tree_bytes(out) == before


def _suggests_deleting(line):
    """Whether an error line invites a step that deletes the run (saying
    to leave it out is not inviting it)."""
    for way in ("--overwrite", "overwrite=True"):
        line = line.replace("leave %s out" % way, "")
    return any(way in line for way in ("--overwrite", "overwrite=True",
                                       "resume=False"))


def test_no_refusal_suggests_deleting_a_trained_model(trained, tmp_path,
                                                      capsys):
    """Every refusal on a directory holding a trained model (a new run over
    it, other parameters on resume, compress or train with --overwrite,
    an export's --out on the run's files, the library's checks) names a
    way that keeps it."""
    data_dir, _ = trained
    out = _copy(trained, tmp_path)
    before = tree_bytes(out)
    lines = []
    for main, argv in (
            (train_program.main, TRAIN + ["--data-dir", data_dir, "--out",
                                          out]),
            (train_program.main, ["--out", out, "--resume", "--lr", "3"]),
            (train_program.main, ["--out", out, "--resume", "--overwrite"]),
            (compress_program.main, ["--out", out, "--overwrite"]
             + COMPRESS),
            # The exports' --out, pointed at the run's files.
            (savedmodel.main, ["--model", os.path.join(out, "awd"),
                               "--out", os.path.join(out, "awd")]),
            (export_program.main, ["--model", os.path.join(out, "awd"),
                                   "--format", "float", "--out",
                                   os.path.join(out, "awd", "vocab.txt")])):
        lines.append(one_error_line(capsys, lambda: main(argv)))
    run_dir = os.path.join(out, "awd")
    config = modeldir.read_config(os.path.join(run_dir, "config.json"))
    for call in (
            lambda: train.check_run_dir(run_dir),
            lambda: train.check_run_dir(run_dir, resume=True,
                                        overwrite=True),
            lambda: train.run(data.read_ptb(data_dir),
                              config["params"].replace(lr=3.0), run_dir,
                              resume=True),
            lambda: savedmodel.export_saved_model(run_dir, run_dir)):
        with pytest.raises(ValueError) as error:
            call()
        lines.append(str(error.value))
    assert lines[0].endswith("continue it with --resume, or give a new "
                             "--out for a new run"), lines[0]
    assert [line for line in lines if _suggests_deleting(line)] == []
    assert tree_bytes(out) == before


def test_the_summary_keeps_the_rows_of_models_not_run_again():
    """compress without --quant after a --quant run rewrote summary.json
    with the float row only; rows are merged now, replaced in place."""
    old = [summary_json("awd", 1.0), summary_json("awd+q", 2.0)]
    new = [RunSummary.from_json(summary_json("awd", 1.5)),
           RunSummary.from_json(summary_json("plain", 3.0))]
    old_records = [RunSummary.from_json(s) for s in old]
    assert records.merge_summaries(old, new[:1]) == [new[0], old_records[1]]
    assert records.merge_summaries(old, new) == [new[0], old_records[1],
                                                 new[1]]
    # --overwrite retrained awd: its old quantized row was of the
    # deleted run.
    assert records.merge_summaries(old, new[:1], dropped=["awd"]) == [
        new[0]]


# Slow (about 25 s: the whole pipeline, then TFLite exports): runs on the
# default version (docs/testing.md). The pipeline runs on every version
# (compression/test_pipeline.py); reading the run back is Python, and runs
# on every version in test_compress_reads_the_recorded_run.
@pytest.mark.slow
def test_the_documented_command_compresses(trained, tmp_path, capsys):
    """``awd-lm compress --out RUN --compress magnitude --target-sparsity
    0.5 --finetune-epochs 1`` on the run: exit 0, the pipeline on the
    run's corpus and sizes, the float model's checkpoint files (and every
    other file of it and of its --quant phase) byte-identical, and
    summary.json's awd and awd+q rows kept."""
    data_dir, _ = trained
    out = _copy(trained, tmp_path)
    before, rows = _phases(out), _models(out)
    assert compress_program.main(["--out", out] + COMPRESS) == 0
    assert _phases(out) == before
    assert any(name.startswith(("best", "last")) for name in before["awd"])
    assert _models(out) == rows
    qat = modeldir.read_config(os.path.join(out, "awd_compress", "qat",
                                            "config.json"))
    assert qat["words"] == data.read_ptb(data_dir).vocab
    shape = qat["params"].model
    assert (shape.emb_size, shape.hidden_size) == (16, 24)
    with open(os.path.join(out, "awd_compress", "summary.json")) as f:
        result = json.load(f)
    assert result["chosen"] == "magnitude"
    assert result["target_sparsity"] == 0.5
    assert "tflite_uint8" in capsys.readouterr().out


@pytest.mark.parametrize("flags, small_dense", [([], False),
                                                (["--small-dense"], True)])
def test_small_dense_reaches_the_pipeline(trained, tmp_path, monkeypatch,
                                          flags, small_dense):
    """--small-dense (issue 55, item 3): the pipeline's parameters say
    whether to train the small-dense model (off by default; the pipeline
    itself is stubbed, tests/awd_lm/training/compression/test_pipeline.py
    runs it)."""
    out = _copy(trained, tmp_path)
    calls = []
    monkeypatch.setattr(pipeline, "run_pipeline", lambda *args, **kwargs: (
        calls.append(args), {"table": ["(table)"]})[1])
    assert compress_program.main(["--out", out] + COMPRESS + flags) == 0
    assert calls[0][1]["small_dense"] is small_dense
