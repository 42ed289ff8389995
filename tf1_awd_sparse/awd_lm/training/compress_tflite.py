"""The compression pipeline's last stages (`awd_lm.training.compress`):
the pruned and the quantized model exported as TFLite files, each scored
with the interpreter over the whole test stream and timed per token.
"""
import os

import numpy as np

from tf1_awd_sparse.export import sparse_storage
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.inference import export
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.training.compress_cuts import made_from
from tf1_awd_sparse.awd_lm.training.compress_rows import (file_bytes,
                                                          tflite_row)

__all__ = ["EXPORT_STEPS", "tflite_rows", "time_rows"]

#: Steps per call of the exported TFLite models.
EXPORT_STEPS = 10


def tflite_rows(pipeline, technique, pruned, quant, progress=None):
    """Stages 5 to 7: exports the TFLite models (unless done) and scores
    them with the interpreter over the whole test stream: float, uint8 and
    (TF 2.x) the QAT model's int8 weights stored sparse.

    Args:
      pipeline: the run (`compress_pipeline.Pipeline`): its corpus, its
        directory, the float model's perplexity and what finished.
      technique: the chosen technique (recorded with each file).
      pruned, quant: (parameters, checkpoint prefix) of the pruned model
        and of its quantization-aware fine-tuning.
      progress: None or a tqdm-like class.

    Returns:
      the rows (`compress_rows.tflite_row`), each with ``ms_per_token``.
    """
    params = as_params(pruned[0])
    # A short window keeps the unrolled graph (each step adds its ops to
    # the file) small beside the weights; the state carries across.
    batch = params.optimization.eval_batch_size
    steps = min(params.optimization.bptt, EXPORT_STEPS)
    test = data.batchify(pipeline.corpus.test, batch)
    rows, runners = [], {}
    files = [("tflite_float", pruned, {}), ("tflite_uint8", quant, {})]
    if sparse_storage.available():
        files.append(("tflite_int8", quant,
                      {"weights": "int8", "storage": "sparse"}))
    for stage, (stage_params, checkpoint), formats in files:
        path = pipeline.dir.tflite_file(stage)
        source = made_from(technique, checkpoint)
        if pipeline.done.get(stage) != source or not os.path.exists(path):
            export.export_lm(stage_params, checkpoint, path, batch, steps,
                             **formats)
            pipeline.record(stage, source)
        ppl, _, tokens = export.tflite_perplexity(path, test, progress)
        shapes = export.weight_shapes(stage_params)
        zeros, total = export.weight_sparsity_of_tflite(path, shapes)
        size, gz = file_bytes(path)
        modeldir.write_tflite_sidecar(
            path, stage_params, pipeline.corpus.vocab,
            modeldir.produced_by(stage_params, stage=stage,
                                 technique=technique, test_ppl=ppl,
                                 sparsity=zeros / float(total)))
        runners[stage] = export.LMRunner(path)
        rows.append(tflite_row(stage, technique, ppl, pipeline.float_ppl,
                               (zeros, total), shapes,
                               {"bytes": size, "gzip_bytes": gz,
                                "tokens_scored": tokens}))
    return time_rows(rows, runners)


def time_rows(rows, runners, rounds=5, repeats=4):
    """Adds ``ms_per_token`` to each row: the median of ``rounds`` timings
    (`LMRunner.time_per_token` of ``repeats`` calls) of its stage's runner
    in ``runners`` ({stage: runner}), the models timed in turn so that
    they share the machine's load alike. Returns ``rows``."""
    times = {stage: [] for stage in runners}
    for _ in range(rounds):
        for stage, runner in runners.items():
            times[stage].append(runner.time_per_token(repeats=repeats))
    for r in rows:
        r["ms_per_token"] = 1e3 * float(np.median(times[r["stage"]]))
    return rows
