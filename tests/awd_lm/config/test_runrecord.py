"""The typed records of a run's files (config.runrecord, issue 56): the
state.json and summary.json of a real (tiny) run read and given back key
for key, byte for byte; a record of the first version (without the keys
added since) read with their defaults; a damaged record refused naming
the file and the key; and a run's record as `read` gathers it."""
import json
import math
import os

import pytest

from support.lm_api import summary_json, tiny_params, write_corpus
from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.awd_lm.config import runrecord
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.config.rundir import RunDir, write_json
from tf1_awd_sparse.awd_lm.config.runrecord import (
    EpochRecord, RunState, RunSummary)
from tf1_awd_sparse.base.jsonrecord import RecordError

pytestmark = pytest.mark.per_python

#: The keys the first version of the training loop wrote (commit 9eb0e29,
#: 2026-11-30): a record of it holds these and no later one.
FIRST_EPOCH_KEYS = ("epoch", "train_loss", "valid_loss", "train_ppl",
                    "valid_ppl", "tokens_per_s", "seconds", "averaged", "lr")
FIRST_STATE_KEYS = ("epoch", "best_valid", "best_epoch", "since_best",
                    "val_history", "averaging_epoch", "epochs",
                    "train_seconds", "done", "params", "stop_reason",
                    "test_loss", "best_valid_check")
FIRST_SUMMARY_KEYS = ("model", "corpus", "params", "epochs", "epochs_run",
                      "best_epoch", "best_valid_ppl", "test_ppl",
                      "stop_reason", "averaging_epoch", "train_seconds",
                      "unk_counts")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """(run directory, `train.run`'s summary) of a two-epoch run of a
    tiny model, with an ``extra`` key no field declares."""
    from tf1_awd_sparse.awd_lm.corpus import data
    from tf1_awd_sparse.awd_lm.training import train
    root = tmp_path_factory.mktemp("runrecord")
    corpus = data.read_ptb(write_corpus(str(root / "data")))
    params = as_params(tiny_params()).replace(max_epochs=2)
    run_dir = str(root / "plain")
    summary = train.run(corpus, params, run_dir, log=lambda *a: None,
                        threads=1, extra={"floor_ppl": 7.5,
                                          "note": "kept as it is"})
    return run_dir, summary


def _loaded(path):
    with open(path) as handle:
        text = handle.read()
    return text, json.loads(text)


@pytest.mark.parametrize("cls,name", [(RunState, "state.json"),
                                      (RunSummary, "summary.json")])
def test_a_real_runs_file_reads_and_writes_back_byte_for_byte(
        tiny_run, tmp_path, cls, name):
    run_dir, _ = tiny_run
    text, obj = _loaded(os.path.join(run_dir, name))
    record = cls.read(os.path.join(run_dir, name))
    assert record.to_json() == obj
    # Written as the loop writes it (`rundir.write_json`): the same bytes.
    again = str(tmp_path / name)
    write_json(again, record.to_json())
    assert _loaded(again)[0] == text
    # Every declared key reads as the file holds it (lists as tuples).
    for key, field in cls.FIELDS.items():
        value = getattr(record, key)
        if key == "epochs":
            assert [e.to_json() for e in value] == obj[key]
        elif key in obj:
            want = obj[key]
            assert value == (tuple(want) if isinstance(want, list)
                             else want), key
        else:
            assert value == field.default, key


def test_the_summary_train_run_returns_is_its_file(tiny_run):
    run_dir, summary = tiny_run
    text, obj = _loaded(RunDir(run_dir).summary_file)
    assert isinstance(summary, RunSummary)
    assert summary == RunSummary.read(RunDir(run_dir).summary_file)
    assert summary.to_json() == obj
    # The keys in the order the loop made them (--out's summary.json
    # writes them unsorted): the loop's, then ``extra``'s.
    assert list(summary.to_json())[:3] == ["model", "corpus", "params"]
    assert list(summary.to_json())[-2:] == ["floor_ppl", "note"]
    assert summary.extra == {"note": "kept as it is"}
    assert summary.floor_ppl == 7.5
    # The attributes against the state the run kept.
    state = RunState.read(RunDir(run_dir).state_file)
    assert summary.epochs_run == state.epoch == len(summary.epochs) == 2
    assert summary.epochs == state.epochs
    assert summary.best_epoch == state.best_epoch
    assert summary.best_valid_ppl == pytest.approx(math.exp(
        state.best_valid))
    assert summary.test_ppl == pytest.approx(math.exp(state.test_loss))
    assert [e.epoch for e in summary.epochs] == [1, 2]
    best = [e for e in summary.epochs if e.best][-1]
    assert best.epoch == summary.best_epoch
    assert best.valid_ppl == pytest.approx(summary.best_valid_ppl)
    assert summary.params == dict(obj["params"])
    assert state.done and state.stop_reason == summary.stop_reason \
        == "max epochs (2)"


def _first_version(obj, keys, epoch_keys=FIRST_EPOCH_KEYS):
    """``obj`` with only the first version's keys (its epochs' too)."""
    old = {k: v for k, v in obj.items() if k in keys}
    old["epochs"] = [{k: v for k, v in e.items() if k in epoch_keys}
                     for e in obj["epochs"]]
    return old


@pytest.mark.parametrize("cls,name,keys", [
    (RunState, "state.json", FIRST_STATE_KEYS),
    (RunSummary, "summary.json", FIRST_SUMMARY_KEYS)])
def test_a_first_version_record_reads_with_the_newer_keys_defaults(
        tiny_run, cls, name, keys):
    run_dir, _ = tiny_run
    old = _first_version(_loaded(os.path.join(run_dir, name))[1], keys)
    assert len(old) == len(keys)
    record = cls.from_json(old, name)
    # Written back, it gains no key.
    assert record.to_json() == old
    newer = [k for k in cls.FIELDS if k not in keys]
    assert newer   # the test covers keys added since
    for key in newer:
        assert getattr(record, key) == cls.FIELDS[key].default, key
        assert not record.holds(key)
    epoch = record.epochs[0]
    assert (epoch.best, epoch.averaging_started, epoch.model,
            epoch.sparsity) == (False, False, None, None)
    if cls is RunSummary:
        assert (record.quant, record.init_from, record.sparsity_report,
                record.floor_ppl) == (False, None, None, None)
    else:
        assert record.best_reached is True


@pytest.mark.parametrize("damage,key", [
    (lambda s: s.pop("test_ppl"), "'test_ppl'"),
    (lambda s: s.update(epochs_run="2"), "'epochs_run' must be an integer"),
    (lambda s: s.update(epochs_run=True), "'epochs_run' must be an integer"),
    (lambda s: s.update(test_ppl=None), "'test_ppl' must be a number, got "
                                        "None"),
    (lambda s: s.update(params=[1]), "'params' must be an object"),
    (lambda s: s.update(quant="yes"), "'quant' must be true or false"),
    (lambda s: s["epochs"][1].pop("valid_ppl"), "epochs[1]: missing key "
                                                "'valid_ppl'"),
    (lambda s: s["epochs"][0].update(averaged=1), "epochs[0]: key "
                                                  "'averaged'"),
])
def test_a_damaged_summary_is_refused_naming_the_file_and_the_key(
        tiny_run, tmp_path, damage, key):
    run_dir, _ = tiny_run
    obj = _loaded(os.path.join(run_dir, "summary.json"))[1]
    damage(obj)
    path = str(tmp_path / "summary.json")
    with open(path, "w") as handle:
        json.dump(obj, handle)
    with pytest.raises(RecordError) as error:
        RunSummary.read(path)
    message = str(error.value)
    assert message.startswith(path + ": "), message
    assert key in message, message
    assert "\n" not in message
    assert isinstance(error.value, ValueError) and isinstance(error.value,
                                                              Error)


def test_a_file_that_is_no_record_is_refused_naming_it(tmp_path):
    path = str(tmp_path / "state.json")
    for text, said in (("{not json", "unreadable"), ("[1, 2]", "got list")):
        with open(path, "w") as handle:
            handle.write(text)
        with pytest.raises(RecordError, match="^%s: .*%s" % (
                path.replace("\\", "\\\\"), said)):
            RunState.read(path)
    # A finished state without its test loss cannot make a summary.
    with pytest.raises(RecordError, match="'test_loss'"):
        RunState.from_json(dict(_fresh(), done=True), "s.json")


def _fresh():
    from tf1_awd_sparse.awd_lm.training import runstate
    return runstate.fresh_state(as_params(tiny_params())).to_json()


def test_a_record_is_frozen_and_replace_keeps_the_key_order():
    summary = RunSummary.from_json(summary_json("awd", 9.0, floor_ppl=None))
    with pytest.raises(AttributeError, match="replace"):
        summary.test_ppl = 1.0
    changed = summary.replace(test_ppl=8.0, note="new")
    assert (summary.test_ppl, changed.test_ppl) == (9.0, 8.0)
    assert list(changed.to_json()) == list(summary.to_json()) + ["note"]
    assert changed != summary and changed == summary.replace(
        test_ppl=8.0, note="new")
    with pytest.raises(RecordError, match="'test_ppl'"):
        summary.replace(test_ppl="low")
    # to_json is a copy: changing it changes no record.
    summary.to_json()["params"]["lr"] = -1
    summary.to_json()["epochs"].append({})
    assert summary.params["lr"] > 0 and len(summary.epochs) == 1
    # Built from keywords alike.
    epoch = EpochRecord(**summary_json()["epochs"][0])
    assert epoch == summary.epochs[0]


def test_each_field_is_documented_once_in_its_records_docstring():
    for cls in (EpochRecord, RunState, RunSummary):
        if cls.__doc__ is None:   # python -OO
            continue
        for key, field in cls.FIELDS.items():
            assert field.__doc__.strip(), (cls, key)
            assert cls.__doc__.count("\n      %s: " % key) == 1, (cls, key)


def test_read_gathers_the_runs_record(tiny_run, tmp_path):
    run_dir, summary = tiny_run
    out = os.path.dirname(run_dir)
    record = runrecord.read(out, "plain")
    assert record.finished and record.epoch == 2
    assert record.summary() == summary
    assert record.quant_params is None and not record.quant_finished
    # A damaged state.json is named with its key.
    copy = str(tmp_path / "out")
    os.makedirs(os.path.join(copy, "plain"))
    obj = _loaded(os.path.join(run_dir, "state.json"))[1]
    del obj["epoch"]
    state = os.path.join(copy, "plain", "state.json")
    write_json(state, obj)
    with pytest.raises(RecordError, match="state.json: missing key "
                                          "'epoch'"):
        runrecord.read(copy, "plain")
