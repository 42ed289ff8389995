"""The compression pipeline's validation curves
(`awd_lm.training.compression`): every fine-tuning drawn as the float
model's curve continued."""
from tf1_awd_sparse.awd_lm.training import records
from tf1_awd_sparse.awd_lm.training.compression.stages import ramp_epochs
from tf1_awd_sparse.awd_lm.config.rundir import TECHNIQUE_DIRS

__all__ = ["plot"]


def plot(pipeline, runs, chosen, quant):
    """Writes the pipeline directory's valid_ppl.png: the fine-tunings
    continue the float curve from its best epoch (a technique's survivors
    after its ramp, QAT after the chosen technique's best).

    Args:
      pipeline: the run (`pipeline.Pipeline`): the float model's
        summary and parameters, its directory and log.
      runs: ``[{technique, summary}]`` of the reference ('-') and the
        techniques.
      chosen: the technique QAT continued.
      quant: the QAT run's summary.

    The summaries are `runrecord.RunSummary` objects (`train.run`'s).
    """
    float_summary = pipeline.float_summary
    start = float_summary.best_epoch
    ramp = ramp_epochs(pipeline.params)
    summaries, offsets = [float_summary], [0]
    for run in runs:
        name = TECHNIQUE_DIRS.get(run["technique"], "reference")
        summaries.append(run["summary"].replace(model="%s+%s" % (
            float_summary.model, name)))
        offsets.append(start + (0 if name == "reference" else ramp))
        if run["technique"] == chosen:
            qat_offset = offsets[-1] + run["summary"].best_epoch
    summaries.append(quant)
    offsets.append(qat_offset)
    records.plot_curves(summaries, pipeline.dir.plot_file,
                        float_summary.floor_ppl, offsets,
                        log=pipeline.run_options.get("log", print))
