"""`awd_lm.training.compression.plot`: the pipeline's validation curves -
each fine-tuning continues the float model's curve from its best epoch
(a technique's survivors after its ramp, QAT after the chosen technique's
best) - the offsets computed here from that rule for other budgets, and
the PNG written."""
import types

import pytest

from support.lm_api import summary_json
from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.awd_lm.config.runrecord import RunSummary
from tf1_awd_sparse.awd_lm.training import records
from tf1_awd_sparse.awd_lm.training.compression import plot


def _summary(model, epochs, best, **changes):
    """A `RunSummary` of ``epochs`` epochs, the best ``best``."""
    epoch = summary_json()["epochs"][0]
    return RunSummary.from_json(summary_json(
        model, best_epoch=best, epochs_run=epochs,
        epochs=[dict(epoch, epoch=e, valid_ppl=200.0 - e)
                for e in range(1, epochs + 1)], **changes))


def _pipeline(tmp_path, finetune_epochs, ramp_fraction, lines):
    params = Params.from_flat({"finetune_epochs": finetune_epochs,
                               "ramp_fraction": ramp_fraction})
    return types.SimpleNamespace(
        float_summary=_summary("awd", 6, 4, floor_ppl=90.0),
        params=params, run_options={"log": lines.append},
        dir=types.SimpleNamespace(plot_file=str(tmp_path / "valid_ppl.png")))


#: (finetune_epochs, ramp_fraction, the ramp's epochs: round(fraction x
#: epochs), at least 1, leaving at least 1).
@pytest.mark.parametrize("epochs,fraction,ramp", [(5, 0.4, 2), (10, 0.75, 8),
                                                  (2, 0.9, 1), (1, 0.4, 1)])
@pytest.mark.parametrize("chosen", ["magnitude", "l0"])
def test_each_run_continues_the_float_curve(tmp_path, monkeypatch, epochs,
                                            fraction, ramp, chosen):
    drawn = []
    monkeypatch.setattr(records, "plot_curves",
                        lambda *args, **kwargs: drawn.append((args, kwargs)))
    lines = []
    pipeline = _pipeline(tmp_path, epochs, fraction, lines)
    runs = [{"technique": "-", "summary": _summary("ref", 3, 3)},
            {"technique": "magnitude", "summary": _summary("m", 3, 2)},
            {"technique": "l0", "summary": _summary("l", 3, 3)}]
    quant = _summary("q", 1, 1)
    plot.plot(pipeline, runs, chosen, quant)
    (summaries, path, floor, offsets), kwargs = drawn[0]
    best = {"magnitude": 2, "l0": 3}[chosen]
    assert offsets == [0, 4, 4 + ramp, 4 + ramp, 4 + ramp + best]
    assert [s.model for s in summaries] == [
        "awd", "awd+reference", "awd+mag", "awd+l0", "q"]
    assert summaries[1].epochs == runs[0]["summary"].epochs
    assert (path, floor) == (pipeline.dir.plot_file, 90.0)
    kwargs["log"]("a line")
    assert lines == ["a line"]


def test_the_png_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    pipeline = _pipeline(tmp_path, 5, 0.4, [])
    plot.plot(pipeline, [{"technique": "magnitude",
                          "summary": _summary("m", 2, 2)}],
              "magnitude", _summary("q", 1, 1))
    with open(pipeline.dir.plot_file, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
