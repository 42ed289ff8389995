"""Compression of a trained language model, every stage scored.

From the float model's best checkpoint:

1. **reference**: the float model fine-tuned for the same budget
   (``finetune_epochs`` at ``finetune_lr``, ``finetune_optimizer``, the
   float model's dropout) without any
   compression, so that a ratio below 1 cannot pass for free compression
   when the float model was merely cut short;
2. **sparsify**, by each technique asked for, in two phases that share the
   budget: (a) the ramp, the first `RAMP_FRACTION` of the epochs
   (`ramp_epochs`): ``variational_dropout`` / ``l0`` (the cells'
   ``sparsity=`` and the sparse embedding / tied decoder, the KL / L0
   weight ramped up over the phase and raised by the controller while the
   sparsity lags the schedule, `sparse_layers.losses.
   controlled_weight_scale`) or ``magnitude``
   (``tf1_awd_sparse.transforms.magnitude_pruning``'s gradual schedule to
   ``target_sparsity`` over the phase); (b) the **exact cut** of the
   phase's last checkpoint to exactly ``round(target * n)`` zeros
   (`cut_checkpoint`: by magnitude, log alpha or the gates' probability of
   being non-zero; per matrix or global, ``cut_scope``), then the
   survivors fine-tuned with the masks fixed for the rest of the budget
   (with ``finetune_optimizer``: plain SGD or NT-ASGD; the ramp runs
   SGD); every dropout rate of both phases (and of QAT) is scaled by
   ``finetune_dropout_scale``;
   with ``distill_weight > 0`` both phases also learn from the float
   model's logits (knowledge distillation at ``distill_temperature``,
   `awd_lm.distill`; the reference does not), or from the reference's
   with ``distill_teacher='reference'`` (the reference then trains first);
3. **prune** the chosen technique's model (`choose`: the lowest validation
   perplexity among those that reached the target; when none did, the
   lowest of all and one line saying so) as plain dense weights with a
   fixed pruning mask ``w != 0`` per weight matrix;
4. **quantization-aware fine-tuning** of the pruned model with the masks
   held (``--quant``'s schedule; its run is labelled ``awd+pruned+q``,
   the float model's ``--quant`` run ``awd+q``): zeros stay exactly zero;
5. **export** the pruned float model and the quantized model as TFLite
   files (`awd_lm.export`) and score both with the TFLite interpreter over
   the whole test stream.

`run_pipeline` returns (and writes to ``summary.json``) one row per stage
and technique: test perplexity, ratios to the float model and to the
reference, the target and whether it was reached, non-zero / total
weights of the embedding and the LSTM kernels, bytes and gzip bytes (the
``.tflite`` file; for the TF stages the weights as float32 ``.npy``
arrays), and the TFLite models' per-token latency. Every stage is resumable:
``resume=True`` skips what finished and resumes a killed training stage.

The pipeline's jobs live in modules of their own, whose names this module
re-exports: `compress_stages` (each stage's parameters), `compress_cuts`
(the numpy work on checkpoints: the exact cut, the pruned model, the
weights counted), `compress_pipeline` (the stages in order, on threads,
resumable), `compress_rows` (the rows and the table), `compress_tflite`
(the TFLite files scored and timed) and `compress_plot` (the curves); the
directories are `rundir.RunDir`'s.
"""
from tf1_awd_sparse.awd_lm.training import rundir
from tf1_awd_sparse.awd_lm.training.compress_cuts import (
    CUT_SCOPES, cut_checkpoint, dense_survivors, effective_weights,
    mask_name, prune_checkpoint, weight_names)
from tf1_awd_sparse.awd_lm.training.compress_pipeline import (
    Pipeline, run_pipeline, sparsify)
from tf1_awd_sparse.awd_lm.training.compress_rows import (
    STAGES, best_reference, choose, format_table)
from tf1_awd_sparse.awd_lm.training.compress_stages import (
    DROPOUT_KEYS, RAMP_FRACTION, finetune_params, ramp_epochs,
    reference_params, survivors_epochs, survivors_params)
from tf1_awd_sparse.awd_lm.training.compress_tflite import EXPORT_STEPS

__all__ = ["run_pipeline", "finetune_params", "survivors_params",
           "reference_params", "ramp_epochs", "survivors_epochs",
           "prune_checkpoint", "cut_checkpoint", "choose", "weight_names",
           "STAGES", "effective_weights", "format_table", "best_reference"]

#: The pipeline's summary and its record of finished stages, in its
#: directory (`rundir.RunDir`; the programs' check of --out reads them).
SUMMARY_FILE = rundir.SUMMARY_FILE
STATE_FILE = rundir.PIPELINE_FILE

# The names the pipeline's parts had here before they moved, which tests
# of the cut and of distillation still reach.
_Pipeline = Pipeline
_sparsify = sparsify
_dense_survivors = dense_survivors
_mask_name = mask_name
