"""What a training run reports, as records, and the one text format of them.

The training loop (`awd_lm.train`) prints nothing: each of its steps
returns a record, a JSON-ready dict with an ``'event'``, and `train.run`
hands every record to a callback. `TableLog` is the default callback: it
turns records into the lines of the training table. Programs that need the
numbers read the records (or the run's ``state.json`` / ``summary.json``,
which hold the same epoch records), never the printed text.

Events:
  ``'start'``  a fresh run begins. Keys: model.
  ``'resume'`` a run continues. Keys: model, run_dir, epoch (the last
               finished one).
  ``'epoch'``  an epoch finished. Keys: model, epoch, train_loss,
               valid_loss (nats/token), train_ppl, valid_ppl,
               tokens_per_s, seconds, averaged (validated with NT-ASGD's
               averaged weights), lr, best (a new best validation loss:
               the best checkpoint was written), averaging_started (NT-ASGD
               switched to averaging after this epoch), and sparsity (the
               global fraction of zero weights) with sparsity.
  ``'end'``    the run's summary (see `train.run`), scored at its best
               checkpoint.

This module needs neither TensorFlow nor a session (the demo driver formats
its child processes' JSON with it).
"""
from __future__ import absolute_import, division, print_function

__all__ = ["header", "epoch_row", "end_lines", "format_record", "TableLog",
           "results_table", "plot_curves"]

_COLUMNS = "%-7s | %5s | %9s | %9s | %6s | %7s | %s"
_ROW = "%-7s | %5d | %9.2f | %9.2f | %6.0f | %7.1f | %s"


def header(model):
    """The training table's column header, headed by the model's label."""
    return _COLUMNS % (model, "epoch", "train ppl", "valid ppl", "tok/s",
                       "seconds", "note")


def epoch_row(record):
    """The table row of an ``'epoch'`` record (or a stored epoch record
    with a 'model' key)."""
    note = (["best"] if record.get("best") else []) + (
        ["averaging starts"] if record.get("averaging_started") else [])
    return _ROW % (record["model"], record["epoch"], record["train_ppl"],
                   record["valid_ppl"], record["tokens_per_s"],
                   record["seconds"], ", ".join(note))


def end_lines(summary):
    """The closing lines of one run: its sparsity report (sparse models)
    and the line saying why it stopped and how its best epoch scores."""
    lines = []
    if summary.get("sparsity_report"):
        # Imported here: the report module builds on TensorFlow.
        from tf1_awd_sparse.layers.sparse import report as sparse_report
        lines.append("%s sparsity of the best checkpoint:\n%s" % (
            summary["model"],
            sparse_report.format_report(summary["sparsity_report"])))
    lines.append(
        "%-7s | stopped after epoch %d (%s); best epoch %d: valid ppl %.2f, "
        "test ppl %.2f" % (summary["model"], summary["epochs_run"],
                           summary["stop_reason"], summary["best_epoch"],
                           summary["best_valid_ppl"], summary["test_ppl"]))
    return lines


def format_record(record):
    """The text lines of one record (see the module docstring).

    Raises:
      ValueError: an unknown event.
    """
    event = record.get("event")
    if event == "start":
        return [header(record["model"])]
    if event == "resume":
        return ["resuming %s after epoch %d" % (record["run_dir"],
                                                record["epoch"])]
    if event == "epoch":
        return [epoch_row(record)]
    if event == "end":
        return end_lines(record)
    raise ValueError("record: unknown event %r" % (event,))


class TableLog(object):
    """A record callback that prints each record as table lines.

    Args:
      log: callable printing one line (default ``print``).
    """

    def __init__(self, log=print):
        self._log = log

    def __call__(self, record):
        for line in format_record(record):
            self._log(line)


def results_table(summaries, floor):
    """The results table of several runs, as a list of lines.

    Args:
      summaries: run summaries (`train.run`'s return value / summary.json).
      floor: the source's test perplexity (embedded corpus), or None.
    """
    lines = ["%-7s | %8s | %12s | %10s | %6s | %7s" % (
        "model", "test ppl", "gap to floor", "best epoch", "epochs",
        "seconds")]
    if floor is not None:
        lines.append("%-7s | %8.2f | %12s | %10s | %6s | %7s" % (
            "floor", floor, "-", "-", "-", "-"))
    for s in summaries:
        gap = "%+.2f" % (s["test_ppl"] - floor) if floor is not None else "-"
        lines.append("%-7s | %8.2f | %12s | %10d | %6d | %7.0f" % (
            s["model"], s["test_ppl"], gap, s["best_epoch"], s["epochs_run"],
            s["train_seconds"]))
    by = {s["model"]: s for s in summaries}
    if "awd" in by and "plain" in by:
        lines.append("awd / plain test perplexity: %.3f" % (
            by["awd"]["test_ppl"] / by["plain"]["test_ppl"]))
    for name in ("plain", "awd"):
        if name in by and name + "+q" in by:
            lines.append("%s fake-quant (8-bit cells) / float test perplexity:"
                         " %.3f" % (name, by[name + "+q"]["test_ppl"]
                                    / by[name]["test_ppl"]))
    return lines


def plot_curves(summaries, path, floor=None, offsets=None):
    """PNG of validation perplexity per epoch, one line per model.

    Args:
      summaries: list of run summaries.
      path: output .png path.
      floor: optional float, the source's perplexity, drawn as a line.
      offsets: optional list (one per summary) of epochs to add to a
        run's epochs, e.g. a fine-tuning's starting epoch, so that it
        continues the curve it started from.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for s, offset in zip(summaries, offsets or [0] * len(summaries)):
        ep = [r["epoch"] + offset for r in s["epochs"]]
        ax.plot(ep, [r["valid_ppl"] for r in s["epochs"]], marker=".",
                label="%s (test %.1f)" % (s["model"], s["test_ppl"]))
    if floor:
        ax.axhline(floor, color="gray", linestyle="--",
                   label="source floor %.1f" % floor)
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation perplexity")
    ax.set_title(summaries[0]["corpus"] if summaries else "")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
