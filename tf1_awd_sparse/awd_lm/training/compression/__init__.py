"""Compression of a trained language model, every stage scored.

From the float model's best checkpoint:

1. **reference**: the float model fine-tuned for the same budget
   (``finetune_epochs`` at ``finetune_lr``, ``finetune_optimizer``, the
   float model's dropout) without any
   compression, so that a ratio below 1 cannot pass for free compression
   when the float model was merely cut short;
2. **sparsify**, by each technique asked for, in two phases that share the
   budget: (a) the ramp, the first `stages.RAMP_FRACTION` of the epochs
   (`stages.ramp_epochs`): ``variational_dropout`` / ``l0`` (the cells'
   ``sparsity=`` and the sparse embedding / tied decoder, the KL / L0
   weight ramped up over the phase and raised by the controller while the
   sparsity lags the schedule, `sparse_layers.losses.
   controlled_weight_scale`) or ``magnitude``
   (``tf1_awd_sparse.transforms.magnitude_pruning``'s gradual schedule to
   ``target_sparsity`` over the phase); (b) the **exact cut** of the
   phase's last checkpoint to exactly ``round(target * n)`` zeros
   (`cuts.cut_checkpoint`: by magnitude, log alpha or the gates'
   probability of being non-zero; per matrix or global, ``cut_scope``),
   then the survivors fine-tuned with the masks fixed for the rest of the
   budget (with ``finetune_optimizer``: plain SGD or NT-ASGD; the ramp
   runs SGD); every dropout rate of both phases (and of QAT) is scaled by
   ``finetune_dropout_scale``;
   with ``distill_weight > 0`` both phases also learn from the float
   model's logits (knowledge distillation at ``distill_temperature``,
   `graph.distill`; the reference does not), or from the reference's
   with ``distill_teacher='reference'`` (the reference then trains first);
3. **prune** the chosen technique's model (`rows.choose`: the lowest
   validation perplexity among those that reached the target; when none
   did, the lowest of all and one line saying so) as plain dense weights with a
   fixed pruning mask ``w != 0`` per weight matrix;
4. **quantization-aware fine-tuning** of the pruned model with the masks
   held (``--quant``'s schedule; its run is labelled ``awd+pruned+q``,
   the float model's ``--quant`` run ``awd+q``): zeros stay exactly zero;
5. **export** the pruned float model and the quantized model as TFLite
   files (`inference.export`) and score both with the TFLite interpreter
   over the whole test stream.

`pipeline.run_pipeline` returns (and writes to ``summary.json``) one row
per stage and technique: test perplexity, ratios to the float model and to the
reference, the target and whether it was reached, non-zero / total
weights of the embedding and the LSTM kernels, bytes and gzip bytes (the
``.tflite`` file; for the TF stages the weights as float32 ``.npy``
arrays), and the TFLite models' per-token latency. Every stage is resumable:
``resume=True`` skips what finished and resumes a killed training stage.

Its modules, one job each:

  pipeline     -- `run_pipeline`: the stages in order, the fine-tunings
                  side by side on threads, resume, summary.json.
  stages       -- each stage's parameters, made from the float model's.
  cuts         -- the exact cuts and the pruned model (numpy, on
                  checkpoints), the weights a model uses counted.
  rows         -- the rows of the stages and their table.
  tflite       -- the TFLite files of the last stages written, scored
                  and timed.
  small_dense  -- the small dense model of the same file size
                  (``--small-dense``).
  ship         -- the file to ship: the rule that picks it from the rows,
                  its line, and a run's pipelines read back.
  plot         -- the validation curves.

The directories are `config.rundir.RunDir`'s; the graph ops that
pruning, the sparse techniques and quantization add to a model are
`graph.compression_ops` (the graph floor builds them, below training).
The package has no names of its own: the public ones are in
`tf1_awd_sparse.awd_lm.training`'s table (docs/api.md).
"""
