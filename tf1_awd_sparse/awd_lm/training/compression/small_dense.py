"""The small-dense model of the compression pipeline (``--small-dense``,
issue 55): what a user would do instead of compressing. A dense model of
the same architecture, narrower (``emb_size = hidden_size``, the
vocabulary and ``num_layers`` the model's), whose uint8 TFLite file has
the bytes of the compressed model's smallest file, trained from scratch
on the run's corpus with the float model's recipe for the float model's
number of epochs, then fine-tuned quantization-aware and exported as the
compressed model's files are (Zhu & Gupta 2017 found large-sparse beats
small-dense; the table shows whether it does here).

The width is a pure function of the byte budget (`width_for_bytes`): a
uint8 file holds one byte per weight entry and four per LSTM bias (int32)
beside what does not depend on the width (the graph, the decoder's bias,
the tensors' descriptions), which the compressed model's own uint8 file
measures (`file_overhead`).
"""
from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.training.compression import (
    rows as rows_, stages, tflite)
from tf1_awd_sparse.awd_lm.training.compression.cuts import effective_weights
from tf1_awd_sparse.export import sparse_storage

__all__ = ["STAGES", "uint8_payload", "file_overhead", "width_for_bytes",
           "budget_of", "small_dense_params", "small_dense_quant_params",
           "small_dense_rows", "summary_of", "verdict_line"]

#: The small-dense model's rows: its float run, its quantization-aware
#: run, its uint8 file and (TensorFlow 2.x) its int8 weights dense.
STAGES = ("small_dense", "small_dense_qat", "small_dense_uint8",
          "small_dense_int8")
#: The compressed model's files the budget is taken from (the smallest).
BUDGET_STAGES = ("tflite_float", "tflite_uint8", "tflite_int8",
                 "tflite_int8_fused", "tflite_int8_fused_pruned")


def _layer_sizes(emb_size, hidden_size, num_layers):
    """Units of each LSTM layer (`model.layer_sizes`: the last one is
    ``emb_size``, tied to the decoder)."""
    return [hidden_size] * (num_layers - 1) + [emb_size]


def uint8_payload(vocab_size, emb_size, hidden_size, num_layers):
    """Bytes of a uint8 file that grow with the model's sizes: one per
    weight entry (the table ``vocab x emb``, each layer's kernel ``4 units
    x (input + units)``) and four per LSTM bias entry (int32, ``4 units``
    a layer). The decoder's bias (``vocab`` int32) and the graph do not
    depend on the widths (`file_overhead`)."""
    total, depth = vocab_size * emb_size, emb_size
    for units in _layer_sizes(emb_size, hidden_size, num_layers):
        total += 4 * units * (depth + units) + 4 * 4 * units
        depth = units
    return total


def file_overhead(file_bytes, params):
    """What a uint8 file of the model of ``params`` holds beyond
    `uint8_payload`: ``file_bytes - uint8_payload(...)``, the same for
    every width at the model's vocabulary, layers, batch and window."""
    model = params.model
    return file_bytes - uint8_payload(model.vocab_size, model.emb_size,
                                      model.hidden_size, model.num_layers)


def width_for_bytes(budget, vocab_size, num_layers, overhead):
    """The small-dense model's ``emb_size = hidden_size``: the widest
    whose uint8 file (``overhead + uint8_payload``) is at most ``budget``
    bytes, at least 1 (a budget below a width-1 file still gets one).

    Args:
      budget: bytes.
      vocab_size, num_layers: the model's.
      overhead: bytes that do not depend on the width (`file_overhead`).

    Returns:
      int >= 1.
    """
    def size(width):
        return overhead + uint8_payload(vocab_size, width, width, num_layers)

    low, high = 1, 2
    while size(high) <= budget:
        low, high = high, 2 * high
    while high - low > 1:   # size(low) <= budget < size(high), or low 1
        middle = (low + high) // 2
        if size(middle) <= budget:
            low = middle
        else:
            high = middle
    return low


def budget_of(rows, budget=None):
    """(bytes, stage): the byte budget, by default the smallest of the
    compressed model's files (`BUDGET_STAGES`' rows of ``rows``), or
    ``budget`` bytes given (stage None).

    Raises:
      ValueError: no such row and no budget."""
    if budget is not None:
        return int(budget), None
    files = [r for r in rows if r["stage"] in BUDGET_STAGES]
    if not files:
        raise ValueError("small-dense: no compressed file to take the byte "
                         "budget from")
    smallest = min(files, key=lambda r: r["bytes"])
    return smallest["bytes"], smallest["stage"]


def small_dense_params(float_params, width, epochs):
    """The small-dense model's float phase: the float model's recipe
    (`stages.model_params`: no quantization or compression key)
    at ``emb_size = hidden_size = width`` for ``epochs`` epochs (its
    ``max_epochs``; the stopping rule as the float model's).

    Returns:
      Params."""
    return stages.model_params(float_params, emb_size=width,
                               hidden_size=width,
                               max_epochs=epochs)


def small_dense_quant_params(float_params, width):
    """Its quantization-aware fine-tuning: ``--quant``'s phase of the
    float model (`presets.split_quant`: ``quant_epochs`` at ``quant_lr``,
    the float model's dropout) at ``emb_size = hidden_size = width``.

    Returns:
      Params."""
    _, quant = presets.split_quant(float_params.replace(
        quant=True, emb_size=width, hidden_size=width))
    return quant


def _trained(pipeline, params, name, init_from, technique):
    """One training run of the small-dense model in ``name``/ of the
    pipeline (resumed with the pipeline), its config.json written.
    Returns (`runrecord.RunSummary`, best checkpoint prefix)."""
    run = pipeline.dir.stage_run(name)
    summary = pipeline.train(params, run, init_from)
    modeldir.write_run_dir(run.path, pipeline.run_params(summary),
                           pipeline.corpus.vocab, summary,
                           stage="small_dense_qat" if init_from else "small_dense",
                           technique=technique)
    return summary, run.best_prefix


def small_dense_rows(pipeline, compressed_rows, progress=None, budget=None):
    """The small-dense stage: its width from the budget, its two training
    runs (``small_dense_e<width>/`` from scratch for the float model's
    epochs, ``small_dense_e<width>_qat/`` from its best checkpoint; each
    resumes with the pipeline, and another width trains in its own
    directories), its files exported and scored as the compressed model's
    are (`tflite.scored_file`; uint8, and on TensorFlow 2.x the
    int8 weights dense).

    Args:
      pipeline: the run (`pipeline.Pipeline`).
      compressed_rows: the compressed model's TFLite rows (the budget).
      progress: None or a tqdm-like class.
      budget: bytes, or None: the smallest compressed file's
        (`budget_of`).

    Returns:
      (rows, {stage: model}): the rows of `STAGES` (each with
      ``emb_size``, ``budget_bytes`` and ``budget_from``) and the files'
      models (`tflite.scored_file`'s), to be timed with the
      others.
    """
    budget, budget_from = budget_of(compressed_rows, budget)
    uint8 = [r for r in compressed_rows if r["stage"] == "tflite_uint8"][0]
    model = pipeline.params.model
    width = width_for_bytes(budget, model.vocab_size, model.num_layers,
                            file_overhead(uint8["bytes"], pipeline.params))
    technique = "small-dense e=%d" % width
    epochs = pipeline.float_summary.epochs_run
    name = "small_dense_e%d" % width
    summary, best = _trained(
        pipeline, small_dense_params(pipeline.params, width, epochs), name,
        None, technique)
    quant, quant_best = _trained(
        pipeline, small_dense_quant_params(pipeline.params, width),
        name + "_qat", best, technique)
    pipeline.record("small_dense", {"emb_size": width, "budget_bytes": budget,
                                    "budget_from": budget_from,
                                    "epochs": epochs})
    facts = {"emb_size": width, "budget_bytes": budget,
             "budget_from": budget_from}
    rows = [rows_.row("small_dense", technique, summary, pipeline.float_ppl,
                      effective_weights(best, pipeline.run_params(summary)), facts),
            rows_.row("small_dense_qat", technique, quant,
                      pipeline.float_ppl,
                      effective_weights(quant_best, pipeline.run_params(quant)), facts)]
    files = [("small_dense_uint8", {})]
    if sparse_storage.available():
        files.append(("small_dense_int8", {"weights": "int8"}))
    models = {}
    for stage, formats in files:
        row, models[stage] = tflite.scored_file(
            pipeline, stage, technique, (pipeline.run_params(quant), quant_best),
            formats, progress)
        row.update(facts)
        rows.append(row)
    return rows, models


def summary_of(rows):
    """summary.json's ``small_dense`` entry, from the rows: the width, the
    budget and the file it came from, the small-dense uint8 file's bytes,
    whether they are within the budget (``within_budget``: a uint8 file's
    unrolled graph alone can outweigh a small compressed file, a fused
    one's, and then no width fits) and its test perplexity, the budget
    file's bytes and test perplexity, and ``compressed_is_better``: the
    budget file's test perplexity is the lower. None without small-dense
    rows."""
    by_stage = dict((r["stage"], r) for r in rows)
    dense = by_stage.get("small_dense_uint8")
    if dense is None:
        return None
    result = {"emb_size": dense["emb_size"],
              "budget_bytes": dense["budget_bytes"],
              "budget_from": dense["budget_from"],
              "bytes": dense["bytes"],
              "within_budget": dense["bytes"] <= dense["budget_bytes"],
              "test_ppl": dense["test_ppl"],
              "epochs": by_stage["small_dense"]["epochs"]}
    compressed = by_stage.get(dense["budget_from"])
    if compressed is not None:
        result.update(
            compressed_bytes=compressed["bytes"],
            compressed_test_ppl=compressed["test_ppl"],
            compressed_is_better=bool(
                compressed["test_ppl"] < dense["test_ppl"]))
    return result


def verdict_line(summary):
    """The table's line under the rows: the small-dense model against the
    compressed file of the same bytes (``summary``: `summary_of`'s)."""
    head = ("small-dense: emb_size = hidden_size = %d, trained from scratch "
            "(%s epochs) then quantization-aware; its uint8 file %d bytes "
            "(budget %d%s)" % (
                summary["emb_size"], summary["epochs"], summary["bytes"],
                summary["budget_bytes"], "" if summary["within_budget"]
                else ": over it, no uint8 file of the model fits"))
    if "compressed_test_ppl" not in summary:
        return head + ", test ppl %.2f" % summary["test_ppl"]
    return ("%s, test ppl %.2f; the compressed %s (%d bytes) %.2f: "
            "large-sparse %s small-dense here" % (
                head, summary["test_ppl"], summary["budget_from"],
                summary["compressed_bytes"], summary["compressed_test_ppl"],
                "beats" if summary["compressed_is_better"]
                else "does not beat"))
