"""The compression pipeline's last stages (`awd_lm.training.compression`):
the pruned and the quantized model exported as TFLite files, each scored
with the interpreter over the whole test stream and timed per token as a
device streams: each file's model exported again at batch 1, one token a
call (`STREAM_SUFFIX`), against the fastest dense file's so exported.
"""
import collections
import os
import shutil
import struct
import tempfile

import numpy as np

from tf1_awd_sparse.export import sparse_storage, tflite_audit, tflite_file
from tf1_awd_sparse.export.tflite_schema import type_name
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.inference import export, lm_runner, tflite_weights
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.training.compression.cuts import made_from
from tf1_awd_sparse.awd_lm.training.compression.rows import (
    FASTEST_DENSE, file_bytes, low_rank_counts, tflite_row)

__all__ = ["EXPORT_STEPS", "FASTEST_DENSE", "STREAM_SUFFIX", "tflite_rows",
           "export_shape", "scored_file", "stored", "streaming_runners",
           "time_rows"]

#: Steps per call of the exported TFLite models.
EXPORT_STEPS = 10
#: The timed twin of ``<stage>.tflite``: ``<stage>.stream.tflite``, batch
#: 1 and one token a call, written in a temporary folder and removed after
#: the timing. A scored file's batch (the evaluation batch) is not how a
#: device runs a language model: at batch 10 XNNPACK's dense products
#: gain from the batch and the sparse hybrid kernels do not (on the
#: converged ptb-small model the fused file was 2.13 x the dense int8
#: file's time at batch 10, 0.47 x streaming).
STREAM_SUFFIX = ".stream.tflite"


def tflite_rows(pipeline, technique, pruned, quant, progress=None,
                more=None):
    """Stages 5 to 8: exports the TFLite models (unless done) and scores
    them with the interpreter over the whole test stream: float, uint8 and
    (TF 2.x) the QAT model's int8 weights stored sparse, unrolled and with
    one fused LSTM op per layer (int8 1 x 16 blocks, one token a call),
    and the pruned model's in the fused layout.

    Args:
      pipeline: the run (`pipeline.Pipeline`): its corpus, its
        directory, the float model's perplexity and what finished.
      technique: the chosen technique (recorded with each file).
      pruned, quant: (parameters, checkpoint prefix) of the pruned model
        and of its quantization-aware fine-tuning.
      progress: None or a tqdm-like class.
      more: None, or a function ``rows -> (rows, {stage: model})`` of
        more files, given these rows before they are timed, whose rows are
        timed with them in the same rounds (`time_rows`; the small-dense
        model's, `small_dense.small_dense_rows`).

    Returns:
      the rows (`rows.tflite_row`), each with ``ms_per_token``
      (streaming: `STREAM_SUFFIX`), then ``more``'s.
    """
    rows, models = [], {}
    files = [("tflite_float", pruned, {}), ("tflite_uint8", quant, {})]
    if sparse_storage.available():
        files.append(("tflite_int8", quant,
                      {"weights": "int8", "storage": "sparse"}))
        fused = {"weights": "int8", "storage": "sparse", "lstm": "fused"}
        files.append(("tflite_int8_fused", quant, fused))
        # The same from the pruned model: the hybrid kernels quantize the
        # weights alone, which needs no quantization-aware training.
        files.append(("tflite_int8_fused_pruned", pruned, fused))
    for stage, (stage_params, checkpoint), formats in files:
        row, models[stage] = scored_file(pipeline, stage, technique,
                                         (stage_params, checkpoint),
                                         formats, progress)
        rows.append(row)
    if more is not None:
        extra_rows, extra_models = more(rows)
        rows += extra_rows
        models.update(extra_models)
    if sparse_storage.available():
        # The baseline: the QAT model's int8 weights dense, unrolled.
        models[FASTEST_DENSE] = (quant[0], quant[1], {"weights": "int8"})
    directory = tempfile.mkdtemp(prefix="awd_lm_stream_")
    try:
        return time_rows(rows, streaming_runners(models, directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def export_shape(params):
    """(batch, steps per call) of the pipeline's unrolled files: the
    evaluation batch, and a short window (each step adds its ops to the
    file), the state carried across."""
    return (params.optimization.eval_batch_size,
            min(params.optimization.bptt, EXPORT_STEPS))


def scored_file(pipeline, stage, technique, model, formats, progress=None):
    """One TFLite file of the pipeline: exported unless done from the same
    checkpoint (`made_from`, recorded under ``stage``), its sidecar
    written, scored with the interpreter over the whole test stream.

    Args:
      pipeline: the run (`pipeline.Pipeline`).
      stage: the row's stage, also the file's name (``<stage>.tflite``).
      technique: recorded with the file and in the row.
      model: (parameters, checkpoint prefix) to export.
      formats: `export.export_lm`'s keyword arguments (``weights``,
        ``storage``, ``lstm``); ``lstm`` files take one token a call.
      progress: None or a tqdm-like class.

    Returns:
      (row, model): `rows.tflite_row` (``bytes``,
      ``gzip_bytes``, ``tokens_scored``, ``stored``) and ``(parameters,
      checkpoint, formats)`` of the file, to be timed streaming
      (`streaming_runners`).
    """
    stage_params, checkpoint = model
    batch, steps = export_shape(stage_params)
    test = data.batchify(pipeline.corpus.test, batch)
    path = pipeline.dir.tflite_file(stage)
    source = made_from(technique, checkpoint)
    if pipeline.done.get(stage) != source or not os.path.exists(path):
        export.export_lm(stage_params, checkpoint, path, batch,
                         1 if formats.get("lstm") else steps, **formats)
        pipeline.record(stage, source)
    ppl, _, tokens = lm_runner.tflite_perplexity(path, test, progress)
    shapes = tflite_weights.weight_shapes(stage_params)
    zeros, total = tflite_weights.weight_sparsity_of_tflite(path, shapes)
    size, gz = file_bytes(path)
    modeldir.write_tflite_sidecar(
        path, stage_params, pipeline.corpus.vocab,
        modeldir.produced_by(stage_params, stage=stage, technique=technique,
                             test_ppl=ppl, sparsity=zeros / float(total)))
    extra = {"bytes": size, "gzip_bytes": gz, "tokens_scored": tokens,
             "stored": stored(path)}
    extra.update(low_rank_counts(tflite_weights.low_rank_of_tflite(path)))
    return (tflite_row(stage, technique, ppl, pipeline.float_ppl,
                       (zeros, total), shapes, extra),
            (stage_params, checkpoint, formats))


def streaming_runners(models, directory):
    """Each model of ``models`` (``{stage: (parameters, checkpoint,
    formats)}``, `scored_file`'s) exported as ``directory/<stage>`` +
    `STREAM_SUFFIX`: batch 1, one token a call, the ``formats`` of its
    scored file. Returns ``{stage: lm_runner.LMRunner}``, each interpreter on
    one thread."""
    runners = {}
    for stage, (params, checkpoint, formats) in models.items():
        path = os.path.join(directory, stage.replace(" ", "_").replace(
            ",", "") + STREAM_SUFFIX)
        export.export_lm(params, checkpoint, path, 1, 1, **formats)
        runners[stage] = lm_runner.LMRunner(path, num_threads=1)
    return runners


def stored(path):
    """What a ``.tflite`` file holds, read from the file (the table's
    notes say this, not the format the export was asked for: an int8
    file "stored sparse" whose weights had too few zeros stores none
    sparse, `sparse_storage.store_sparse`'s ``min_zeros``).

    Returns:
      ``{"constants": {type name: count}`` of the tensors holding data,
      ``"sparse_tensors"``: how many are stored sparse, ``"float_ops"``
      and ``"operators"``: the operators computing in float
      (`tflite_audit.float_ops`) and all of them``}``.

    Raises:
      tflite_file.TFLiteFileError: not a whole TFLite file.
    """
    buf = tflite_file.verify(path)
    model = tflite_file.root(buf)
    buffers = tflite_file.tables(buf, model, "Model", "buffers")
    graph = tflite_file.tables(buf, model, "Model", "subgraphs")[0]
    constants = collections.Counter()
    for tensor in tflite_file.tables(buf, graph, "SubGraph", "tensors"):
        data = tflite_file.subtable(buf, buffers[tflite_file.scalar(
            buf, tensor, "Tensor", "buffer")], "Buffer", "data")
        # The vector's length, not its bytes: a data vector is a count
        # then the bytes.
        if data is not None and struct.unpack_from("<I", buf, data)[0]:
            kind = tflite_file.scalar(buf, tensor, "Tensor", "type")
            constants[type_name(kind)] += 1
    return {"constants": dict(constants),
            "sparse_tensors": len(sparse_storage.sparse_tensors(buf)),
            "float_ops": len(tflite_audit.float_ops(buf)),
            "operators": len(tflite_file.tables(buf, graph, "SubGraph",
                                                "operators"))}


#: The stages whose files are dense, candidates for the timing baseline.
DENSE_STAGES = (FASTEST_DENSE, "tflite_uint8", "tflite_float")


def time_rows(rows, runners, rounds=7, repeats=50):
    """Adds ``ms_per_token`` to each row with a runner (a TF stage's row
    has none and is left as it is): the median of ``rounds`` timings
    (`LMRunner.time_per_token` of ``repeats`` calls) of its stage's runner
    in ``runners`` ({stage: runner}), the models timed in turn so that
    they share the machine's load alike; with a `FASTEST_DENSE` runner,
    also ``fastest_dense`` (the `DENSE_STAGES` runner of the lowest median
    time), ``fastest_dense_ms`` (its ms/token) and ``x_fastest_dense``
    (the median over the rounds of the row's time over its). Returns
    ``rows``."""
    times = {stage: [] for stage in runners}
    for _ in range(rounds):
        for stage, runner in runners.items():
            times[stage].append(runner.time_per_token(repeats=repeats))
    fastest = None
    if FASTEST_DENSE in times:
        fastest = min((s for s in DENSE_STAGES if s in times),
                      key=lambda s: np.median(times[s]))
    for r in (r for r in rows if r["stage"] in times):
        r["ms_per_token"] = 1e3 * float(np.median(times[r["stage"]]))
        if fastest is not None:
            base = np.array(times[fastest])
            r["fastest_dense"] = fastest
            r["fastest_dense_ms"] = 1e3 * float(np.median(base))
            r["x_fastest_dense"] = float(np.median(
                np.array(times[r["stage"]]) / base))
    return rows
