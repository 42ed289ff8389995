"""The compression pipeline's rows and table (`awd_lm.training.compression`):
one row per stage and technique (perplexity, ratios, weights counted and
sized), the reference the compressed rows are measured against, the
choice of the technique carried on, and the table printed.
"""
import gzip
import io

import numpy as np

from tf1_awd_sparse.awd_lm.training import records
from tf1_awd_sparse.awd_lm.training.compression.cuts import (
    LOW_RANK_NAMES, nonzero)

__all__ = ["STAGES", "FASTEST_DENSE", "weights_bytes", "file_bytes", "row",
           "tflite_row", "low_rank_counts",
           "mark", "choose", "best_reference", "format_table", "ASKED"]

#: Stage names of the rows, in order (``tflite_int8``: the QAT model's
#: int8 weights stored sparse, ``tflite_int8_fused`` the same in 1 x 16
#: blocks with one builtin LSTM op per layer, ``tflite_int8_fused_pruned``
#: that layout of the pruned model's weights, on TensorFlow 2.x only,
#: which writes and runs such files; docs/sparse_tflite.md).
STAGES = ("float", "reference", "sparse", "qat", "tflite_float",
          "tflite_uint8", "tflite_int8", "tflite_int8_fused",
          "tflite_int8_fused_pruned")


def weights_bytes(weights):
    """(bytes, gzip bytes) of the weight matrices as float32 .npy data."""
    buf = io.BytesIO()
    for name in sorted(weights):
        np.save(buf, weights[name].astype(np.float32))
    raw = buf.getvalue()
    return len(raw), len(gzip.compress(raw, 9))


def file_bytes(path):
    """(bytes, gzip bytes) of a file."""
    with open(path, "rb") as handle:
        raw = handle.read()
    return len(raw), len(gzip.compress(raw, 9))


def row(stage, technique, summary, float_ppl, weights, extra=None):
    """One TF stage's row from its run's ``summary`` (a
    `runrecord.RunSummary`, `train.run`'s) and its weight
    matrices ``weights`` ({name: array}, `effective_weights`): test and
    validation perplexity, the ratio to the float model's ``float_ppl``,
    non-zero / total weights, each matrix's size and fraction of zeros
    (in name order), bytes and gzip bytes
    of the weights as float32 .npy data, the training seconds and epochs;
    ``extra``'s keys added. The table's dense low-rank part
    (`cuts.LOW_RANK_NAMES`) counts in the non-zero / total
    weights and the bytes, and apart (`low_rank_counts`) for the target,
    not among the matrices."""
    count, total = nonzero(weights)
    size, gz = weights_bytes(weights)
    dense = [weights.pop(name) for name in LOW_RANK_NAMES
             if name in weights]
    result = {"stage": stage, "technique": technique,
              "test_ppl": summary.test_ppl,
              "valid_ppl": summary.best_valid_ppl,
              "ratio_to_float": summary.test_ppl / float_ppl,
              "nonzero_weights": count, "total_weights": total,
              "matrix_sizes": [int(np.size(w)) for _, w in
                               sorted(weights.items())],
              "matrix_sparsity": [1.0 - np.count_nonzero(w) / float(np.size(w))
                                  for _, w in sorted(weights.items())],
              "sparsity": 1.0 - count / float(total),
              "bytes": size, "gzip_bytes": gz,
              "seconds": summary.train_seconds,
              "epochs": summary.epochs_run}
    result.update(low_rank_counts(dense))
    result.update(extra or {})
    return result


def low_rank_counts(parts):
    """The row keys of the table's dense low-rank part ``parts`` (arrays;
    none: no keys): ``low_rank_weights`` and ``low_rank_nonzero``, which
    `records.pruned_counts` takes out of a row's counts for the target."""
    if not parts:
        return {}
    return {"low_rank_weights": sum(int(np.size(p)) for p in parts),
            "low_rank_nonzero": sum(int(np.count_nonzero(p))
                                    for p in parts)}


def tflite_row(stage, technique, ppl, float_ppl, counts, shapes, extra):
    """One TFLite stage's row. ``counts`` is (zeros, total) read back from
    the file, plus the low-rank part's where ``extra`` has its keys
    (`low_rank_counts`), ``shapes`` its weight matrices' shapes: their
    sizes go into ``matrix_sizes`` so `mark` applies the same per-matrix
    rule (`records.target_zeros`) as to the TF rows; without them the row fell
    back to the global rounding and a model that reached the target as
    ``sparse`` was marked NO as ``tflite_float``."""
    zeros, total = counts
    dense = extra.get("low_rank_weights", 0)
    zeros += dense - extra.get("low_rank_nonzero", 0)
    total += dense
    result = {"stage": stage, "technique": technique,
              "test_ppl": ppl, "valid_ppl": None,
              "ratio_to_float": ppl / float_ppl,
              "nonzero_weights": total - zeros, "total_weights": total,
              "matrix_sizes": [int(np.prod(s)) for s in shapes],
              "sparsity": zeros / float(total)}
    result.update(extra)
    return result


def mark(rows, target, reference_ppl, scope="matrix"):
    """Adds ``target_sparsity``, ``reached_target`` (`records.reached`;
    None for the float and reference rows and the small-dense model's,
    ``small_dense*``: dense models) and ``ratio_to_reference`` to each
    row."""
    for r in rows:
        compressed = r["stage"] not in ("float", "reference") and \
            not r["stage"].startswith("small_dense")
        r["target_sparsity"] = target
        r["reached_target"] = records.reached(r, target, scope) \
            if compressed else None
        r["ratio_to_reference"] = r["test_ppl"] / reference_ppl
    return rows


def choose(rows, target, log=print, scope="matrix"):
    """The sparse row to carry on: the lowest validation perplexity among
    the rows that reached ``target`` (`records.reached`); when none did, the
    sparsest (ties: the lowest validation perplexity), with one line
    through ``log`` saying so.

    Args:
      rows: the sparse stage's rows (technique, valid_ppl, sparsity,
        nonzero_weights, total_weights, matrix_sizes).
      target: the target fraction of zeros.
      log: callable printing one line.
      scope: the cut's scope (`records.target_zeros`).

    Returns:
      (row, reached): the row chosen and whether it reached the target.

    Raises:
      ValueError: no rows.
    """
    if not rows:
        raise ValueError("choose: no sparse rows to choose from")
    hits = [r for r in rows if records.reached(r, target, scope)]
    if hits:
        return min(hits, key=lambda r: r["valid_ppl"]), True
    chosen = min(rows, key=lambda r: (-r["sparsity"], r["valid_ppl"]))
    log("no technique reached the target sparsity %.4f (%s); carrying on "
        "with %s (%.4f, the sparsest)"
        % (target, ", ".join("%s %.4f" % (r["technique"], r["sparsity"])
                             for r in rows),
           chosen["technique"], chosen["sparsity"]))
    return chosen, False


def best_reference(float_row, reference_row):
    """The dense model the compressed ones are measured against: the
    fine-tuned reference, or the float model when fine-tuning did not
    lower its validation perplexity (a reference worse than its start
    would flatter the compressed rows).

    Args:
      float_row, reference_row: the pipeline's rows (`row`) of the float
        model and of the reference's fine-tuning.

    Returns:
      The reference row to report: ``reference_row`` with ``reference_is
      = 'fine-tuned'``, or the float model's figures under stage
      'reference' with ``reference_is = 'float'`` and the fine-tuning's
      validation perplexity in ``finetuned_valid_ppl``.
    """
    if reference_row["valid_ppl"] < float_row["valid_ppl"]:
        return dict(reference_row, reference_is="fine-tuned")
    return dict(float_row, stage="reference", reference_is="float",
                finetuned_valid_ppl=reference_row["valid_ppl"])


def format_table(rows):
    """The pipeline's table, as lines: the ratios to the float model and
    to the reference (the float model fine-tuned for the same budget),
    and whether each compressed stage reached the target ('yes' / 'NO')."""
    header = ("%-24s | %-19s | %8s | %6s | %6s | %17s | %7s | %9s | %9s | "
              "%8s" % ("stage", "technique", "test ppl", "/float", "/ref",
                       "nonzero / total", "target", "bytes", "gzip",
                       "ms/token"))
    lines = [header, "-" * len(header)]
    for r in rows:
        reached = r.get("reached_target")
        lines.append(
            "%-24s | %-19s | %8.2f | %6.3f | %6s | %8d / %6.2f%% | %7s | "
            "%9d | %9d | %8s" % (
                r["stage"] + ("*" if r.get("reference_is") == "float"
                              else ""), r["technique"], r["test_ppl"],
                r["ratio_to_float"],
                "%.3f" % r["ratio_to_reference"]
                if "ratio_to_reference" in r else "-",
                r["nonzero_weights"],
                100.0 * r["nonzero_weights"] / r["total_weights"],
                "-" if reached is None else ("yes" if reached else "NO"),
                r["bytes"], r["gzip_bytes"],
                "%.4f" % r["ms_per_token"] if "ms_per_token" in r
                else "-"))
    lines += [_reference_line(r) for r in rows if r.get("reference_is")]
    timed = [r for r in rows if "x_fastest_dense" in r]
    if timed:
        lines.append(
            "ms/token: one thread, streaming (each file's model at batch "
            "1, one token a call); against the fastest dense file (%s: "
            "%.4f ms/token): %s" % (
                # (a row of an older version: the int8 dense file)
                _DENSE_NAMES.get(timed[0].get("fastest_dense"),
                                 _DENSE_NAMES[FASTEST_DENSE]),
                timed[0]["fastest_dense_ms"], ", ".join(
                    "%s %.2f x" % (r["stage"], r["x_fastest_dense"])
                    for r in timed)))
    # What each file holds, read from it (`tflite.stored`): the
    # notes once restated the format asked for, and called an int8 file
    # "stored sparse" when its weights had too few zeros to be.
    lines += [_file_line(r) for r in rows if r.get("stored")]
    stages = {r["stage"] for r in rows}
    if "tflite_uint8" in stages and "tflite_int8" not in stages:
        lines.append("tflite_int8 (int8 weights stored sparse): needs "
                     "TensorFlow 2.x to write and run (make demo-tf2)")
    return lines


#: The timing baseline of the rows (TF 2.x, `tflite.time_rows`):
#: the QAT model's int8 weights dense, unrolled, with XNNPACK (the
#: interpreter's default), streaming as the rows are; the rows are timed
#: against the fastest of it and the other dense files (the uint8 one can
#: be faster).
FASTEST_DENSE = "int8 dense, XNNPACK"
#: The timing baseline's files as the ms/token line names them
#: (`tflite.DENSE_STAGES`).
_DENSE_NAMES = {FASTEST_DENSE: "the qat model's int8 weights dense, "
                               "XNNPACK",
                "tflite_uint8": "tflite_uint8, XNNPACK",
                "tflite_float": "tflite_float, XNNPACK"}


#: What each TFLite stage's export is asked for (docs/sparse_tflite.md).
ASKED = {"tflite_float": "the pruned model, float",
         "tflite_uint8": "the qat model, fully 8-bit (uint8)",
         "tflite_int8": "the qat model's int8 weights (float activations) "
                        "stored sparse",
         "tflite_int8_fused": "the same in 1 x 16 blocks, one builtin LSTM "
                              "op per layer, one token a call",
         "tflite_int8_fused_pruned": "the pruned model's int8 weights in "
                                     "the same layout (no quantization-"
                                     "aware training)",
         "small_dense_uint8": "the small-dense model's qat run, fully "
                              "8-bit (uint8)",
         "small_dense_int8": "the small-dense model's qat run's int8 "
                             "weights (float activations), dense"}


def _file_line(r):
    """A TFLite row's note: what its export was asked for, then what the
    file holds (its ``stored`` entry, read from the file)."""
    facts = r["stored"]
    constants = ", ".join("%s %d" % item
                          for item in sorted(facts["constants"].items()))
    sparse = facts["sparse_tensors"]
    return ("%s: asked for %s; the file holds constants %s, %s, %d of %d "
            "operators in float" % (
                r["stage"], ASKED.get(r["stage"], r["stage"]),
                constants or "none",
                "%d stored sparse" % sparse if sparse else
                "none stored sparse", facts["float_ops"],
                facts["operators"]))


def _reference_line(r):
    """What the ``/ref`` column divides by."""
    if r["reference_is"] == "float":
        return ("* /ref is the float model itself: its fine-tuning for the "
                "same budget validated worse (%.2f against %.2f)"
                % (r["finetuned_valid_ppl"], r["valid_ppl"]))
    return ("/ref: the float model fine-tuned for the same budget, "
            "averaging from its first step (validation %.2f)"
            % r["valid_ppl"])
