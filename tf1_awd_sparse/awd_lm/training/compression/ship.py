"""The file a user should ship, named by the compression pipeline
(`awd_lm.training.compression`): the rule that picks it from the table's rows
(`recommend`), the line under the table (`recommended_line`), and the
pipelines a folder holds with their recommendations, read from their
summary.json (`pipeline_dirs`, `read_recommendation`: ``awd-lm info``,
``awd-lm export``).

The rule, on the rows of the files the pipeline wrote and scored (a row
with ``tokens_scored``: the interpreter scored ``<stage>.tflite`` over the
whole test stream), for a target ratio ``t`` (``ship_ppl_target``, default
1.05):

1. a file is **within the target** when its test perplexity over the
   ``/ref`` row's (``ratio_to_reference``: the better validated of the
   float model and the reference, as the table's ``/ref``) is at most
   ``t``;
2. among the files within the target, the **fastest** (lowest
   ``ms_per_token``, timed in the same rounds); a row without a time
   comes after every timed one, and equal times (or no times) go to the
   **fewest bytes**, then to the table's order;
3. when no file is within the target: the file of the **lowest test
   perplexity** (ties: the fastest, then the fewest bytes) among the files
   **worth shipping over the dense model**: fewer bytes than the dense
   ``tflite_uint8`` file and, when timed against it, less time than the
   fastest dense file; among all files when none is. It is marked
   ``within_target: false`` and its ``fallback`` says which pool it came
   from; the line says so. (Without the pool, a pipeline whose every file
   missed the target recommended its float file, four times the dense
   uint8 file's bytes and slower.)

So "the smallest file within the perplexity target that is fastest" is
read speed first, bytes second: the files that pass the target differ in
bytes by little beside their times (docs/awd_lm.md#the-file-to-ship).

No numpy, no TensorFlow: ``awd-lm info`` reads it.
"""
import json
import os

from tf1_awd_sparse.awd_lm.config.rundir import PIPELINE_FILE, SUMMARY_FILE

__all__ = ["SHIPPED_KINDS", "MODEL_DIRS", "WORTH_SHIPPING", "ALL_FILES",
           "recommend", "recommended_line",
           "pipeline_dirs", "read_recommendation"]

#: Each file of the compressed model: (format, storage, lstm) as ``awd-lm
#: export`` spells them (docs/sparse_tflite.md).
SHIPPED_KINDS = {"tflite_float": ("float", "dense", "unrolled"),
                 "tflite_uint8": ("uint8", "dense", "unrolled"),
                 "tflite_int8": ("int8", "sparse", "unrolled"),
                 "tflite_int8_fused": ("int8", "sparse", "fused"),
                 "tflite_int8_fused_pruned": ("int8", "sparse", "fused")}
#: The model directory (in the pipeline's folder) each file was exported
#: from: the pruned float model, or its quantization-aware fine-tuning.
#: The fused int8 file is written from both: its hybrid kernels quantize
#: the weights alone, so the pruned model needs no quantization-aware
#: training to run in it, and the fine-tuning can cost more than it wins
#: (docs/results.md, "A dense low-rank part of the table").
MODEL_DIRS = {"tflite_float": "pruned", "tflite_uint8": "qat",
              "tflite_int8": "qat", "tflite_int8_fused": "qat",
              "tflite_int8_fused_pruned": "pruned"}
#: ``fallback`` of a recommendation outside the target: the pool the
#: lowest perplexity was taken from (rule 3).
WORTH_SHIPPING, ALL_FILES = "smaller and faster than dense", "all files"


def _order(row):
    """Fastest first (rows without a time last), then fewest bytes."""
    ms = row.get("ms_per_token")
    return (ms is None, ms if ms is not None else 0.0, row["bytes"])


def _worth_shipping(row, uint8_bytes):
    """Whether a file beats the dense model where compressing is meant to:
    fewer bytes than the dense uint8 file (``uint8_bytes``; None: no such
    row, no condition) and, when timed against the fastest dense file
    (``x_fastest_dense``), less time."""
    faster = row.get("x_fastest_dense")
    return (uint8_bytes is None or row["bytes"] < uint8_bytes) and \
        (faster is None or faster < 1.0)


def recommend(rows, target):
    """The file to ship, by the module's rule.

    Args:
      rows: the pipeline's rows (dicts): the candidates are those with
        ``tokens_scored`` (scored TFLite files), each with ``stage``,
        ``technique``, ``test_ppl``, ``ratio_to_reference``, ``bytes``
        and, when timed, ``ms_per_token`` (and ``x_fastest_dense``).
      target: the ratio to the ``/ref`` test perplexity a file must not
        pass (> 0).

    Returns:
      None when no row is a scored file; else ``{stage, technique, path``
      (the file's name in the pipeline's folder), ``bytes, gzip_bytes,
      x_uint8_bytes`` (its bytes over the ``tflite_uint8`` file's, or
      None), ``ms_per_token, x_fastest_dense`` (None when not timed
      against it), ``test_ppl, ratio_to_reference, within_target,
      ship_ppl_target, fallback`` (None within the target, else
      `WORTH_SHIPPING` or `ALL_FILES`: the pool of rule 3)``,
      compressed_model`` (False: a file of another model in the table,
      e.g. the small-dense one), ``format, storage, lstm, model_dir``
      (None for a file of another model)``}``.

    Raises:
      ValueError: ``target`` not a positive number.
    """
    if isinstance(target, bool) or not isinstance(target, (int, float)) \
            or not target > 0:
        raise ValueError("target: expected a ratio > 0, got %r" % (target,))
    files = [r for r in rows if "tokens_scored" in r]
    if not files:
        return None
    order = {id(r): i for i, r in enumerate(files)}
    uint8 = [r for r in files if r["stage"] == "tflite_uint8"]
    within = [r for r in files if r["ratio_to_reference"] <= target]
    fallback = None
    if within:
        best = min(within, key=lambda r: _order(r) + (order[id(r)],))
    else:
        worth = [r for r in files if _worth_shipping(
            r, uint8[0]["bytes"] if uint8 else None)]
        fallback = WORTH_SHIPPING if worth else ALL_FILES
        best = min(worth or files, key=lambda r: (r["test_ppl"],)
                   + _order(r) + (order[id(r)],))
    kind = SHIPPED_KINDS.get(best["stage"], (None, None, None))
    return {"stage": best["stage"], "technique": best["technique"],
            "path": best["stage"] + ".tflite", "bytes": best["bytes"],
            "gzip_bytes": best.get("gzip_bytes"),
            "x_uint8_bytes": best["bytes"] / float(uint8[0]["bytes"])
            if uint8 else None,
            "ms_per_token": best.get("ms_per_token"),
            "x_fastest_dense": best.get("x_fastest_dense"),
            "test_ppl": best["test_ppl"],
            "ratio_to_reference": best["ratio_to_reference"],
            "within_target": bool(within), "ship_ppl_target": target,
            "fallback": fallback,
            "compressed_model": best["stage"] in SHIPPED_KINDS,
            "format": kind[0], "storage": kind[1], "lstm": kind[2],
            "model_dir": MODEL_DIRS.get(best["stage"])}


def recommended_line(entry):
    """The line under the table (and ``awd-lm info``'s) for `recommend`'s
    ``entry``: the file, its bytes (and over the uint8 file's), its speed
    (over the fastest dense file's, or ms/token), its perplexity over
    ``/ref`` and whether it is within the target."""
    if entry is None:
        return "recommended: none (no TFLite file was written and scored)"
    size = "{:,} bytes".format(entry["bytes"])
    if entry.get("x_uint8_bytes") is not None \
            and entry["stage"] != "tflite_uint8":
        size += " (%.2f x uint8)" % entry["x_uint8_bytes"]
    if entry.get("x_fastest_dense") is not None:
        speed = ("%.2f x the fastest dense file's ms/token"
                 % entry["x_fastest_dense"])
    elif entry.get("ms_per_token") is not None:
        speed = "%.4f ms/token" % entry["ms_per_token"]
    else:
        speed = "not timed"
    if entry["within_target"]:
        verdict = ("the fastest within the %s x ref target"
                   % _ratio(entry["ship_ppl_target"]))
    else:
        verdict = ("NO file within the %s x ref target: the lowest "
                   "perplexity" % _ratio(entry["ship_ppl_target"]))
        if entry.get("fallback") == WORTH_SHIPPING:
            verdict += (" of the files smaller than the uint8 file and "
                        "faster than the fastest dense file")
    other = "" if entry.get("compressed_model", True) else (
        "; a file of another model, not the compressed one")
    return ("recommended: %s  %s  %s  ppl %.3f x ref (%.2f; %s%s)" % (
        entry["path"], size, speed, entry["ratio_to_reference"],
        entry["test_ppl"], verdict, other))


def _ratio(value):
    """A target as the line spells it: 1.05, 1.1, 1."""
    return ("%.4f" % value).rstrip("0").rstrip(".")


def _summary(directory):
    """A compression pipeline's summary.json in ``directory`` (a dict with
    ``stages``), or None when it holds none."""
    path = os.path.join(directory, SUMMARY_FILE)
    if not os.path.isfile(path) or not os.path.isfile(
            os.path.join(directory, PIPELINE_FILE)):
        return None
    try:
        with open(path) as handle:
            summary = json.load(handle)
    except (IOError, OSError, ValueError) as e:
        raise ValueError("%s: cannot read the pipeline's summary (%s)"
                         % (path, e))
    return summary if isinstance(summary, dict) and "stages" in summary \
        else None


def pipeline_dirs(path):
    """The compression pipelines' folders (pipeline.json and a summary.json
    of rows) at ``path`` or directly inside it (a run's ``--out``), sorted;
    ``[]`` when none.

    Raises:
      ValueError: a pipeline's summary.json that is not JSON (named).
    """
    if not os.path.isdir(path):
        return []
    if _summary(path) is not None:
        return [path]
    return sorted(os.path.join(path, name) for name in os.listdir(path)
                  if os.path.isdir(os.path.join(path, name))
                  and _summary(os.path.join(path, name)) is not None)


def read_recommendation(directory):
    """The ``recommended`` entry of a pipeline folder's summary.json
    (`recommend`'s), or None when its summary has none (a pipeline of an
    older version: running ``awd-lm compress`` on the run again writes
    one, retraining nothing).

    Raises:
      ValueError: no pipeline summary in ``directory``, or it is not JSON.
    """
    summary = _summary(directory)
    if summary is None:
        raise ValueError("%s: no compression pipeline's summary.json"
                         % directory)
    return summary.get("recommended")
