"""What a training run reports, as records, and the one text format of them.

The training loop (`awd_lm.training.train`) prints nothing: each of its steps
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

Perplexity against sparsity, from several compression summary.json files
(`awd_lm.training.compression`, one per target sparsity)::

  python -m tf1_awd_sparse.awd_lm.training.records --sparsity-plot OUT.png \
      S1.json S2.json ...

prints their table (`sparsity_table`) and draws the PNG (`plot_sparsity`).
"""
from __future__ import absolute_import, division, print_function

import collections

from tf1_awd_sparse.awd_lm.config.runrecord import RunSummary

__all__ = ["header", "epoch_row", "end_lines", "format_record", "TableLog",
           "results_table", "merge_summaries", "plot_curves",
           "sparsity_series", "sparsity_table", "plot_sparsity", "reached",
           "target_zeros", "pruned_counts", "reach_scope", "quant_bits", "main"]

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
    and the line saying why it stopped and how its best epoch scores.

    Args:
      summary: a `runrecord.RunSummary` or its JSON dict (the ``'end'``
        record).

    Raises:
      runrecord.RecordError: a dict that is no run's summary (named).
    """
    summary = RunSummary.coerce(summary, "the 'end' record")
    lines = []
    if summary.sparsity_report:
        # Imported here: the report module builds on TensorFlow.
        from tf1_awd_sparse.layers.sparse import report as sparse_report
        lines.append("%s sparsity of the best checkpoint:\n%s" % (
            summary.model,
            sparse_report.format_report(summary.sparsity_report)))
    lines.append(
        "%-7s | stopped after epoch %d (%s); best epoch %d: valid ppl %.2f, "
        "test ppl %.2f" % (summary.model, summary.epochs_run,
                           summary.stop_reason, summary.best_epoch,
                           summary.best_valid_ppl, summary.test_ppl))
    return lines


def _summaries(summaries, what="summaries"):
    """Each of ``summaries`` as a `runrecord.RunSummary` (a dict is read
    as its JSON, named ``what[i]`` in errors)."""
    return [RunSummary.coerce(s, "%s[%d]" % (what, i))
            for i, s in enumerate(summaries)]


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
      summaries: run summaries (`train.run`'s `runrecord.RunSummary`, or
        summary.json's dict).
      floor: the source's test perplexity (embedded corpus), or None.

    Raises:
      runrecord.RecordError: a dict that is no run's summary (named).
    """
    summaries = _summaries(summaries)
    lines = ["%-7s | %8s | %12s | %10s | %6s | %7s" % (
        "model", "test ppl", "gap to floor", "best epoch", "epochs",
        "seconds")]
    if floor is not None:
        lines.append("%-7s | %8.2f | %12s | %10s | %6s | %7s" % (
            "floor", floor, "-", "-", "-", "-"))
    for s in summaries:
        gap = "%+.2f" % (s.test_ppl - floor) if floor is not None else "-"
        lines.append("%-7s | %8.2f | %12s | %10d | %6d | %7.0f" % (
            s.model, s.test_ppl, gap, s.best_epoch, s.epochs_run,
            s.train_seconds))
    by = {s.model: s for s in summaries}
    if "awd" in by and "plain" in by:
        lines.append("awd / plain test perplexity: %.3f" % (
            by["awd"].test_ppl / by["plain"].test_ppl))
    for name in ("plain", "awd"):
        if name in by and name + "+q" in by:
            lines.append("%s fake-quant (%s) / float test perplexity: %.3f"
                         % (name, quant_bits(by[name + "+q"]),
                            by[name + "+q"].test_ppl / by[name].test_ppl))
    return lines


def quant_bits(summary):
    """What a quantization-aware run's model fake-quantized, from the
    parameters its graph was built with (its `runrecord.RunSummary`'s
    ``params``; the line once said "8-bit cells" whatever
    ``--weight-bits`` / ``--activation-bits`` were): ``"8-bit cells"``
    when both are 8, ``"W-bit weights, A-bit activations"`` otherwise,
    ``"bits not recorded"`` for a summary with empty ones."""
    params = RunSummary.coerce(summary).params
    if not params:
        return "bits not recorded"
    # Imported here: the module's other readers need no configuration.
    from tf1_awd_sparse.awd_lm.config import presets
    # The summary's flat record (summary.json's): a key it does not hold
    # was its default (`presets.DEFAULTS`).
    recorded = dict(presets.DEFAULTS, **params)
    weight, activation = (recorded["weight_bits"],
                          recorded["activation_bits"])
    if int(weight) == int(activation) == 8:
        return "8-bit cells"
    return "%d-bit weights, %d-bit activations" % (int(weight),
                                                  int(activation))


def merge_summaries(previous, summaries, dropped=()):
    """A run's model summaries after a command ran some of its models
    again: ``previous`` (those of --out's summary.json) with each model
    in ``summaries`` replaced in place, the new ones appended, and no
    other row lost (``awd-lm compress`` without --quant keeps ``awd+q``).

    Args:
      previous: the summaries already recorded, in order
        (`runrecord.RunSummary` or its dict).
      summaries: this command's, in order (alike).
      dropped: float models retrained from scratch (--overwrite): the
        previous rows of their phases (``awd``, ``awd+q``, ...) that this
        command did not make again are dropped, being of the deleted run.

    Returns:
      list of `runrecord.RunSummary`.

    Raises:
      runrecord.RecordError: a dict that is no run's summary (named).
    """
    new = collections.OrderedDict((s.model, s) for s in _summaries(
        summaries))
    merged = []
    for s in _summaries(previous, "previous"):
        label = s.model
        if label in new:
            merged.append(new.pop(label))
        elif label.split("+")[0] not in dropped:
            merged.append(s)
    return merged + list(new.values())


def _pyplot(path, log):
    """matplotlib's pyplot on the Agg backend, or None after one line
    through ``log`` when matplotlib is not installed: a plot is an extra,
    and a run that trained must not fail for it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("plot skipped: matplotlib is not installed (pip install "
            "matplotlib); %s not written" % path)
        return None
    return plt


def _save(fig, plt, path, log):
    """Writes ``fig`` to ``path``; True, or False after one line through
    ``log`` when it cannot be written (the run's results stand)."""
    try:
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        return True
    except (OSError, ValueError, RuntimeError) as e:
        log("plot skipped: %s not written (%s: %s)"
            % (path, type(e).__name__, e))
        return False
    finally:
        plt.close(fig)


def plot_curves(summaries, path, floor=None, offsets=None, log=print):
    """PNG of validation perplexity per epoch, one line per model.

    Args:
      summaries: list of run summaries (`runrecord.RunSummary` or its
        dict).
      path: output .png path.
      floor: optional float, the source's perplexity, drawn as a line.
      offsets: optional list (one per summary) of epochs to add to a
        run's epochs, e.g. a fine-tuning's starting epoch, so that it
        continues the curve it started from.
      log: callable printing one line: why the plot was skipped
        (matplotlib not installed, path not writable).

    Returns:
      True when the PNG was written, False when skipped (never raises for
      a missing matplotlib or an unwritable path).

    Raises:
      runrecord.RecordError: a dict that is no run's summary (named).
    """
    summaries = _summaries(summaries)
    plt = _pyplot(path, log)
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for s, offset in zip(summaries, offsets or [0] * len(summaries)):
        ep = [r.epoch + offset for r in s.epochs]
        ax.plot(ep, [r.valid_ppl for r in s.epochs], marker=".",
                label="%s (test %.1f)" % (s.model, s.test_ppl))
    if floor:
        ax.axhline(floor, color="gray", linestyle="--",
                   label="source floor %.1f" % floor)
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation perplexity")
    ax.set_title(summaries[0].corpus if summaries else "")
    ax.legend()
    return _save(fig, plt, path, log)


def _stage_ppl(summaries, stage):
    """The test perplexities of one stage ('float', 'reference') across
    compression summaries, in order."""
    return [row["test_ppl"] for s in summaries for row in s["stages"]
            if row["stage"] == stage]


def sparsity_series(summaries):
    """The points of perplexity against sparsity, from compression
    summaries of one float model (`compression.pipeline.run_pipeline`'s
    summary.json, e.g. one per target sparsity).

    Args:
      summaries: list of dicts with a "stages" list of rows; the rows used
        are stage 'sparse' (technique, sparsity = fraction of zeros,
        test_ppl, target_sparsity, reached_target, ratio_to_float,
        ratio_to_reference, nonzero_weights, total_weights), 'float' and
        'reference' (test_ppl).

    Returns:
      ``{"techniques": {technique: [row, ...] sorted by sparsity},
      "float_ppl": float, "reference_ppl": [float, ...]}``, each row
      ``{"target", "sparsity", "test_ppl", "ratio_to_float",
      "ratio_to_reference", "reached", "nonzero", "total"}`` (nonzero and
      total: weights of the compressed matrices); reference_ppl holds each
      summary's reference (fine-tuned anew by each pipeline run).

    Raises:
      ValueError: no summaries, a summary without a float row or without
        sparse rows, or summaries of different float models (their float
        test perplexities differ).
    """
    if not summaries:
        raise ValueError("summaries: expected at least one compression "
                         "summary, got none")
    floats = _stage_ppl(summaries, "float")
    if len(floats) != len(summaries):
        raise ValueError("summaries: expected one 'float' row in each "
                         "summary, got %d in %d" % (len(floats),
                                                    len(summaries)))
    if max(floats) - min(floats) > 1e-9 * max(floats):
        raise ValueError("summaries: expected one float model, got float "
                         "test perplexities %s" % sorted(set(floats)))
    techniques = {}
    for i, summary in enumerate(summaries):
        rows = [r for r in summary["stages"] if r["stage"] == "sparse"]
        if not rows:
            raise ValueError("summaries[%d]: expected 'sparse' rows, got "
                             "stages %s" % (i, [r["stage"] for r in
                                                summary["stages"]]))
        for r in rows:
            techniques.setdefault(r["technique"], []).append({
                "target": r["target_sparsity"], "sparsity": r["sparsity"],
                "test_ppl": r["test_ppl"],
                "ratio_to_float": r["ratio_to_float"],
                "ratio_to_reference": r["ratio_to_reference"],
                "reached": r["reached_target"],
                "nonzero": r["nonzero_weights"], "total": r["total_weights"],
                "target_zeros": target_zeros(
                    r, r["target_sparsity"], reach_scope(
                        summary.get("cut_scope", "matrix"),
                        summary.get("table_sparsity")))})
    for points in techniques.values():
        points.sort(key=lambda p: (p["sparsity"], p["target"]))
    return {"techniques": techniques, "float_ppl": floats[0],
            "reference_ppl": _stage_ppl(summaries, "reference")}


def target_zeros(row, target, scope="matrix"):
    """The zeros the exact cut makes for ``target`` in a row's weights:
    ``sum(round(target * n_i))`` over its matrices (``scope='matrix'``, one
    cut per matrix) or ``round(target * total)`` (``'global'``, or a row
    without ``matrix_sizes``). The one rule behind ``reached_target``."""
    sizes = row.get("matrix_sizes")
    if scope == "matrix" and sizes:
        return sum(int(round(target * n)) for n in sizes)
    return int(round(target * pruned_counts(row)[1]))


def pruned_counts(row):
    """(non-zero, total) of a row's pruned weights: its counts without the
    table's dense low-rank part (``low_rank_nonzero`` /
    ``low_rank_weights``, `tables.table_low_rank`), which the target does
    not cover."""
    return (row["nonzero_weights"] - row.get("low_rank_nonzero", 0),
            row["total_weights"] - row.get("low_rank_weights", 0))


def reach_scope(cut_scope, table_sparsity=None):
    """The ``scope`` `target_zeros` counts a run's zeros with: its cut's,
    but the model's (``'global'``) under uneven budgets
    (``table_sparsity``), whose per-matrix targets add up to it."""
    return "global" if table_sparsity is not None else cut_scope


def reached(row, target, scope="matrix"):
    """Whether a row's pruned weights (`pruned_counts`) hold at least
    `target_zeros` zeros."""
    nonzero, total = pruned_counts(row)
    return total - nonzero >= target_zeros(row, target, scope)


def sparsity_table(series):
    """The lines of a `sparsity_series` as a table: one row per technique
    and target (test ppl, / float, / its run's reference, % zeros and
    non-zero weights reached, whether the target's zeros
    (`target_zeros`) were reached and if not by how many weights it fell
    short), then the float and reference perplexities."""
    lines = ["%-19s | %6s | %8s | %7s | %5s | %7s | %8s | %s" % (
        "technique", "target", "test ppl", "/ float", "/ ref", "% zeros",
        "nonzero", "reached")]
    for name in sorted(series["techniques"]):
        for p in series["techniques"][name]:
            short = p["target_zeros"] - (p["total"] - p["nonzero"])
            lines.append("%-19s | %6.2f | %8.2f | %7.3f | %5.3f | %7.2f | "
                         "%8d | %s" % (
                             name, p["target"], p["test_ppl"],
                             p["ratio_to_float"], p["ratio_to_reference"],
                             100 * p["sparsity"], p["nonzero"],
                             "yes" if p["reached"] else
                             "no (%d short)" % short))
    refs = series["reference_ppl"]
    lines.append("float test ppl %.2f; fine-tuned reference %s" % (
        series["float_ppl"], " ".join("%.2f" % r for r in refs) or "-"))
    return lines


def plot_sparsity(summaries, path, log=print):
    """PNG of test perplexity against the percentage of zero weights, one
    line per technique, the float model and the fine-tuned reference (the
    mean of the summaries' references, labelled so when they differ) as
    horizontal lines.

    Args:
      summaries: compression summaries (see `sparsity_series`).
      path: output .png path.
      log: callable printing one line when the plot is skipped
        (matplotlib not installed, path not writable).

    Returns:
      the `sparsity_series` drawn (also when the plot was skipped; then
      with ``"written": False``).

    Raises:
      ValueError: see `sparsity_series`.
    """
    series = sparsity_series(summaries)
    plt = _pyplot(path, log)
    if plt is None:
        return dict(series, written=False)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in sorted(series["techniques"]):
        points = series["techniques"][name]
        ax.plot([100 * p["sparsity"] for p in points],
                [p["test_ppl"] for p in points], marker="o", label=name)
    ax.axhline(series["float_ppl"], color="gray", linestyle="--",
               label="float %.1f" % series["float_ppl"])
    refs = series["reference_ppl"]
    if refs:
        mean = sum(refs) / len(refs)
        ax.axhline(mean, color="black", linestyle=":", label=(
            "fine-tuned reference %.1f" % mean if max(refs) == min(refs)
            else "fine-tuned reference %.1f (mean of %d)" % (mean,
                                                            len(refs))))
    ax.set_xlabel("% zero weights (embedding and LSTM kernels)")
    ax.set_ylabel("test perplexity")
    ax.legend()
    return dict(series, written=_save(fig, plt, path, log))


def main(argv):
    """``--sparsity-plot OUT.png S1.json ...``: prints the summaries'
    `sparsity_table` and draws `plot_sparsity` to OUT.png. Returns 0."""
    import argparse
    import json
    parser = argparse.ArgumentParser(
        prog="python -m tf1_awd_sparse.awd_lm.training.records",
        description="Perplexity against sparsity from compression "
        "summary.json files.")
    parser.add_argument("--sparsity-plot", required=True, metavar="OUT.png",
                        help="the PNG to write")
    parser.add_argument("summaries", nargs="+", metavar="SUMMARY.json",
                        help="compression summary.json files")
    args = parser.parse_args(argv)
    summaries = []
    for name in args.summaries:
        with open(name) as handle:
            summaries.append(json.load(handle))
    series = plot_sparsity(summaries, args.sparsity_plot)
    print("\n".join(sparsity_table(series)))
    if series["written"]:
        print("wrote %s" % args.sparsity_plot)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
