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
"""
import concurrent.futures
import gzip
import hashlib
import io
import json
import os
import threading

import numpy as np
from tf1_awd_sparse.base.checkpoints import check_checkpoint
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.ops.sparse import common as sparse_common
from tf1_awd_sparse.export import sparse_storage
from tf1_awd_sparse.export import strip as sparse_strip
from tf1_awd_sparse.transforms import techniques as sparse_techniques
from tf1_awd_sparse import transforms
from tf1_awd_sparse.transforms import magnitude_pruning
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.inference import export
from tf1_awd_sparse.awd_lm.graph import model, ntasgd
from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.training import records, train

__all__ = ["run_pipeline", "finetune_params", "survivors_params",
           "reference_params", "ramp_epochs", "survivors_epochs",
           "prune_checkpoint", "cut_checkpoint", "choose", "weight_names",
           "STAGES", "effective_weights", "format_table", "best_reference"]

SUMMARY_FILE = "summary.json"
STATE_FILE = "pipeline.json"
#: Stage names of the rows, in order (``tflite_int8``: the QAT model's
#: int8 weights stored sparse, on TensorFlow 2.x only, which writes and
#: runs such files; docs/sparse_tflite.md).
STAGES = ("float", "reference", "sparse", "qat", "tflite_float",
          "tflite_uint8", "tflite_int8")
#: Scopes of the exact cut: each weight matrix, or all of them at once.
CUT_SCOPES = ("matrix", "global")
_SHORT = {"variational_dropout": "vd", "l0": "l0", "magnitude": "mag"}
#: Fraction of the fine-tuning budget over which the sparsity loss ramps up
#: and magnitude pruning's schedule runs.
RAMP_FRACTION = 0.4
#: Steps per call of the exported TFLite models.
EXPORT_STEPS = 10
# The auxiliary variables' learning rate as a multiple of the weights'
# (measured on the demo preset: at 1 L0's gates never close within the
# budget; at 1000 they pass the target within it).
_AUX_LR_SCALE = {"variational_dropout": 1.0, "l0": 1000.0}


def weight_names(params):
    """Checkpoint names of the weight matrices compression counts: the
    embedding and each cell's kernel."""
    return ["lm/embedding"] + [
        "lm/layer_%d/lstm_%d/kernel" % (i, i)
        for i in range(len(model.layer_sizes(params)))]


def _mask_name(weight):
    return transforms.pruning_variable_names(weight)[0]


def _threshold_name(weight):
    return transforms.pruning_variable_names(weight)[1]


def ramp_epochs(float_params):
    """Epochs of a technique's first phase (the ramp / schedule up to the
    exact cut): `RAMP_FRACTION` of ``finetune_epochs``, at least 1 and
    leaving at least 1 epoch to fine-tune the survivors (a budget of 1
    epoch runs one epoch of each phase)."""
    epochs = int(float_params["finetune_epochs"])
    return max(1, min(epochs - 1, int(round(RAMP_FRACTION * epochs))))


def _finetune_base(float_params, epochs, optimizer="sgd"):
    """The float model's parameters for a fine-tuning of ``epochs`` epochs
    at ``finetune_lr`` (default lr / 4) with ``optimizer``: plain SGD for
    a ramp (NT-ASGD would validate, and keep, averages of masks and gates
    that lag the ones being pruned), ``finetune_optimizer`` where nothing
    is pruned any more (the survivors, the reference)."""
    lr = float_params.get("finetune_lr") or float_params["lr"] / 4.0
    params, _ = presets.split_quant(dict(float_params, quant=False))
    params.update(max_epochs=epochs, lr=lr, optimizer=optimizer)
    return params


#: The model's dropout rates, scaled by ``finetune_dropout_scale`` in the
#: compressed model's fine-tunings.
DROPOUT_KEYS = ("dropout", "dropouth", "dropouti", "dropoute", "wdrop")


def _compressed_dropout(params, float_params):
    """``params`` with every rate of `DROPOUT_KEYS` times the float
    model's ``finetune_dropout_scale`` (default 0.5): a model with a
    twentieth of its weights underfits under the float model's rates
    (ptb-small at 95 %: training perplexity with dropout above
    validation's)."""
    scale = float(float_params.get("finetune_dropout_scale",
                                   presets.DEFAULTS["finetune_dropout_scale"]))
    params.update({key: params[key] * scale for key in DROPOUT_KEYS
                   if key in params})
    return params


def _settled_optimizer(float_params):
    """The optimizer of the fine-tunings whose masks no longer move (the
    survivors, the reference): ``finetune_optimizer``, 'sgd' or 'ntasgd'
    (NT-ASGD with the float model's ``nonmono``; its averages are of
    weights under fixed masks)."""
    return (float_params.get("finetune_optimizer")
            or presets.DEFAULTS["finetune_optimizer"])


def _with_teacher(params, float_params, teacher):
    """``params`` with the pipeline's distillation settings: the float
    model's ``distill_weight`` and ``distill_temperature``, and with a
    weight > 0 the teacher checkpoint ``distill_from = teacher``.

    Raises:
      ValueError: a weight > 0 and no teacher."""
    weight = float(float_params.get("distill_weight") or 0.0)
    params.update(distill_weight=weight, distill_temperature=float(
        float_params.get("distill_temperature", 1.0)))
    if weight > 0:
        if not teacher:
            raise ValueError("teacher: distill_weight %r needs the "
                             "teacher's checkpoint prefix, got %r"
                             % (weight, teacher))
        params["distill_from"] = teacher
    return params


def finetune_params(float_params, technique, steps_per_epoch, teacher=None):
    """The parameters of a technique's first phase from the float model:
    the ramp to the target, ended by the exact cut (`cut_checkpoint`).

    Args:
      float_params: the model's parameters with the compression settings
        (``finetune_epochs``, ``finetune_lr``, ``target_sparsity``,
        ``compress_controller``, ``distill_weight``,
        ``distill_temperature``).
      technique: one of ``presets.COMPRESS_TECHNIQUES``.
      steps_per_epoch: training windows per epoch (for the schedules).
      teacher: the checkpoint prefix of the distillation's teacher (the
        float model's, or the reference's with ``distill_teacher=
        'reference'``; ``distill_from``, needed when ``distill_weight >
        0``).

    Returns:
      dict: ``max_epochs = ramp_epochs(...)`` at ``finetune_lr``, plain
      SGD, the dropout rates scaled (`_compressed_dropout`), the
      ``pruning_block`` of the ramp's pruning and cut; magnitude: the gradual schedule over all of it; VD / L0: the KL
      / L0 weight ramped over all of it, the controller's factor
      ``sparsity_controller`` and the auxiliary learning-rate scale; only
      the last epoch selectable (the cut reads the last checkpoint); the
      distillation settings (``distill_weight``, ``distill_temperature``,
      ``distill_from`` with a weight > 0).

    Raises:
      ValueError: an unknown technique; ``distill_weight > 0`` without a
        teacher.
    """
    epochs = ramp_epochs(float_params)
    params = _finetune_base(float_params, epochs)
    steps = max(1, epochs * steps_per_epoch)
    # The ramp's pruning and the exact cut read the block from these
    # parameters; `split_quant` strips it with the other compression keys.
    params["pruning_block"] = int(float_params.get("pruning_block", 1))
    if technique == "magnitude":
        params.update(pruning="magnitude", pruning_begin_step=0,
                      pruning_end_step=steps,
                      pruning_frequency=max(1, steps // 40))
    elif technique in ("variational_dropout", "l0"):
        params.update(sparsity=technique, sparsity_ramp_steps=steps,
                      sparsity_controller=float(
                          float_params.get("compress_controller", 1.0)))
        if float_params.get("compress_sparsity_weight") is not None:
            params["sparsity_weight"] = float_params[
                "compress_sparsity_weight"]
        # SGD at the weights' rate barely moves log_sigma2 / log_alpha.
        params["aux_lr_scale"] = _AUX_LR_SCALE[technique]
    else:
        raise ValueError("technique must be one of %s, got %r"
                         % (", ".join(presets.COMPRESS_TECHNIQUES),
                            technique))
    params["target_sparsity"] = float_params["target_sparsity"]
    params["select_from_epoch"] = epochs
    _compressed_dropout(params, float_params)
    return _with_teacher(params, float_params, teacher)


def survivors_epochs(float_params):
    """Epochs of a technique's second phase: the rest of the budget,
    ``finetune_epochs - ramp_epochs``, at least 1."""
    return max(1, int(float_params["finetune_epochs"])
               - ramp_epochs(float_params))


def survivors_params(float_params, teacher=None):
    """The parameters of a technique's second phase: the cut model's
    survivors fine-tuned (masks fixed, ``pruning='fixed'``) for
    `survivors_epochs` at ``finetune_lr`` with ``finetune_optimizer``
    (`_settled_optimizer`), dropout scaled as the first phase's and
    distilled from ``teacher`` as it is (see `finetune_params`).

    Raises:
      ValueError: ``distill_weight > 0`` without a teacher."""
    params = _finetune_base(float_params, survivors_epochs(float_params),
                            _settled_optimizer(float_params))
    params.update(pruning="fixed",
                  select_min_sparsity=float_params["target_sparsity"])
    _compressed_dropout(params, float_params)
    return _with_teacher(params, float_params, teacher)


def reference_params(float_params):
    """The honest reference: the float model fine-tuned for as many epochs
    as a technique's two phases take together (``finetune_epochs``; 2 for
    a budget of 1, which runs one epoch of each phase) at ``finetune_lr``
    with ``finetune_optimizer`` and, with NT-ASGD, averaging from the
    first step (``average_from_start``: it starts from the float model's
    averaged weights, whose gain plain SGD throws away before the trigger
    fires again); the float model's dropout (the compressed model's
    half dropout made the dense one worse on the demo: validation 113.79
    against 113.24); no compression, no distillation (``distill_weight``
    0). `run_pipeline` reports the float model itself as the reference
    when this one validates worse."""
    params = _finetune_base(float_params, ramp_epochs(float_params)
                            + survivors_epochs(float_params),
                            _settled_optimizer(float_params))
    params["distill_weight"] = 0.0
    params["average_from_start"] = params["optimizer"] == "ntasgd"
    return params


def best_reference(float_row, reference_row):
    """The dense model the compressed ones are measured against: the
    fine-tuned reference, or the float model when fine-tuning did not
    lower its validation perplexity (a reference worse than its start
    would flatter the compressed rows).

    Args:
      float_row, reference_row: the pipeline's rows (`_row`) of the float
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


def _read(checkpoint):
    reader = check_checkpoint(checkpoint, "checkpoint")
    return {name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()}


def _model_values(checkpoint, params):
    """{name: array} of a checkpoint, sparse pairs as evaluation weights
    (their auxiliary variables dropped)."""
    if params.get("sparsity"):
        return sparse_strip.strip_values_of_checkpoint(checkpoint)
    return _read(checkpoint)


def _effective(values, params):
    result = {}
    for name in weight_names(params):
        weight = values[name]
        mask = values.get(_mask_name(name))
        result[name] = weight if mask is None else weight * mask
    return result


def effective_weights(checkpoint, params):
    """{name: array} of the weight matrices as the model uses them in
    evaluation: sparse techniques' evaluation weights (stripped), or the
    weights times their pruning masks."""
    return _effective(_model_values(checkpoint, params), params)


def prune_checkpoint(checkpoint, params, output_prefix):
    """Writes the model of ``checkpoint`` (a fine-tuning run) as plain
    dense weights with fixed pruning masks: each weight matrix's evaluation
    weights (see `effective_weights`) and a mask ``weights != 0`` (with a
    zero threshold), the other model variables unchanged, no optimizer
    state (NT-ASGD's slots of an averaged run are not the model).

    Returns:
      the prefix written.
    """
    values = _model_values(checkpoint, params)
    out = {name: value for name, value in values.items()
           if name.startswith("lm/") and not ntasgd.is_slot_name(name)}
    for name, weight in _effective(values, params).items():
        out[name] = weight.astype(np.float32)
        out[_mask_name(name)] = (weight != 0).astype(np.float32)
        out[_threshold_name(name)] = np.zeros([], np.float32)
    return sparse_strip.write_checkpoint(out, output_prefix)


def _dense_survivors(values, params, target, scope):
    """{name: array} of the weight matrices after the exact cut (see
    `cut_checkpoint`) from a checkpoint's raw ``values``."""
    names = weight_names(params)
    if params.get("sparsity"):
        tech = sparse_techniques.get(params["sparsity"])
        pairs = {n: (values[n], values[tech.aux_variable_name(n)])
                 for n in names}
        scores = {n: tech.keep_score(theta, aux, sparse_common.NUMPY_MATH)
                  for n, (theta, aux) in pairs.items()}
        # Survivors keep their evaluation weights (theta where those are 0).
        kept = {}
        for n, (theta, aux) in pairs.items():
            evaluation = tech.numpy_eval_weights(theta, aux)
            kept[n] = np.where(evaluation != 0, evaluation, theta)
    else:
        kept = _effective(values, params)
        scores = {n: np.abs(w) for n, w in kept.items()}
    k = int(params.get("pruning_block", 1))
    blocks = {n: model.pruning_block(n, kept[n].shape, k) for n in names}
    if scope == "global":
        masks = magnitude_pruning.exact_block_keep_masks(scores, target,
                                                         blocks)
    else:
        masks = {n: magnitude_pruning.exact_block_keep_masks(
            scores[n], target, blocks[n]) for n in names}
    return {n: (kept[n] * masks[n]).astype(np.float32) for n in names}


def cut_checkpoint(checkpoint, params, target, output_prefix,
                   scope="matrix"):
    """The exact final cut of a technique's first phase: writes the model
    of ``checkpoint`` as dense weights with fixed pruning masks holding
    exactly ``round(target * n)`` zeros (up to ties, `magnitude_pruning.
    exact_keep_masks`) of each weight matrix (``scope='matrix'``) or of
    all of them together (``'global'``, one threshold); with
    ``params['pruning_block']`` k > 1, whole 1 x k blocks along each
    matrix's input dimension (`model.pruning_block`), ranked by their mean
    score.

    What is cut: magnitude pruning, the smallest ``|w * mask|``; variational
    dropout, the largest log alpha; L0, the gates of lowest probability
    of being non-zero (`sparse_layers.techniques` ``keep_score``). The
    survivors keep their evaluation weights (theta where those are zero,
    so that the cut, not the technique's own zero rule, sets the count).

    Args:
      checkpoint: a first-phase checkpoint (`finetune_params`).
      params: that run's parameters.
      target: the fraction of zeros, in ``[0, 1)``.
      output_prefix: the checkpoint prefix to write.
      scope: 'matrix' or 'global'.

    Returns:
      the prefix written.

    Raises:
      ValueError: a bad scope or target.
    """
    if scope not in CUT_SCOPES:
        raise ValueError("scope must be one of %s, got %r"
                         % (", ".join(CUT_SCOPES), scope))
    values = _read(checkpoint)
    out = {name: value for name, value in
           _model_values(checkpoint, params).items()
           if name.startswith("lm/")}
    for name, weight in _dense_survivors(values, params, target,
                                         scope).items():
        out[name] = weight
        out[_mask_name(name)] = (weight != 0).astype(np.float32)
        out[_threshold_name(name)] = np.zeros([], np.float32)
    return sparse_strip.write_checkpoint(out, output_prefix)


def _nonzero(weights):
    nonzero = sum(int(np.count_nonzero(w)) for w in weights.values())
    return nonzero, sum(int(w.size) for w in weights.values())


def _weights_bytes(weights):
    """(bytes, gzip bytes) of the weight matrices as float32 .npy data."""
    buf = io.BytesIO()
    for name in sorted(weights):
        np.save(buf, weights[name].astype(np.float32))
    raw = buf.getvalue()
    return len(raw), len(gzip.compress(raw, 9))


def _file_bytes(path):
    with open(path, "rb") as handle:
        raw = handle.read()
    return len(raw), len(gzip.compress(raw, 9))


def _row(stage, technique, summary, float_ppl, weights, extra=None):
    nonzero, total = _nonzero(weights)
    size, gz = _weights_bytes(weights)
    row = {"stage": stage, "technique": technique,
           "test_ppl": summary["test_ppl"],
           "valid_ppl": summary["best_valid_ppl"],
           "ratio_to_float": summary["test_ppl"] / float_ppl,
           "nonzero_weights": nonzero, "total_weights": total,
           "matrix_sizes": [int(np.size(w)) for _, w in
                            sorted(weights.items())],
           "sparsity": 1.0 - nonzero / float(total),
           "bytes": size, "gzip_bytes": gz,
           "seconds": summary.get("train_seconds"),
           "epochs": summary.get("epochs_run")}
    row.update(extra or {})
    return row


def _mark(rows, target, reference_ppl, scope="matrix"):
    """Adds ``target_sparsity``, ``reached_target`` (`records.reached`; None for
    the float and reference rows) and ``ratio_to_reference`` to each row."""
    for row in rows:
        compressed = row["stage"] not in ("float", "reference")
        row["target_sparsity"] = target
        row["reached_target"] = records.reached(row, target, scope) if compressed \
            else None
        row["ratio_to_reference"] = row["test_ppl"] / reference_ppl
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
    row = min(rows, key=lambda r: (-r["sparsity"], r["valid_ppl"]))
    log("no technique reached the target sparsity %.4f (%s); carrying on "
        "with %s (%.4f, the sparsest)"
        % (target, ", ".join("%s %.4f" % (r["technique"], r["sparsity"])
                             for r in rows),
           row["technique"], row["sparsity"]))
    return row, False


class _Pipeline(object):
    """One pipeline run in ``out_dir``: its settings, the stages' shared
    inputs and what finished (pipeline.json, for resume)."""

    def __init__(self, corpus, params, float_summary, float_dir, out_dir,
                 run_options):
        self.corpus, self.out_dir = corpus, out_dir
        self.params = dict(params, vocab_size=len(corpus.vocab))
        self.float_summary = float_summary
        self.float_best = train.best_checkpoint(float_dir)
        # The distillation's teacher (`teacher_is_reference`: the
        # reference's best checkpoint once it has trained).
        self.teacher = self.float_best
        self.float_ppl = float_summary["test_ppl"]
        self.run_options = run_options  # resume, log, progress, threads
        self.extra = {"floor_ppl": float_summary.get("floor_ppl")}
        stream = data.batchify(corpus.train, self.params["batch_size"])
        self.steps_per_epoch = max(1, (stream.shape[1] - 1)
                                   // self.params["bptt"])
        self.path = os.path.join(out_dir, STATE_FILE)
        self.lock = threading.Lock()
        self.done = {}
        if run_options["resume"] and os.path.exists(self.path):
            with open(self.path) as handle:
                self.done = json.load(handle)
        os.makedirs(out_dir, exist_ok=True)

    def teacher_is_reference(self):
        """Whether the techniques distil from the reference (which then
        trains before them): ``distill_weight > 0`` and ``distill_teacher
        = 'reference'``."""
        return (float(self.params.get("distill_weight") or 0.0) > 0.0
                and self.params.get("distill_teacher") == "reference")

    def record(self, key, value):
        """Notes a finished stage (written atomically)."""
        with self.lock:
            self.done[key] = value
            tmp = self.path + ".tmp"
            with open(tmp, "w") as handle:
                json.dump(self.done, handle, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        return value

    def train(self, params, run_dir, init_from):
        """`train.run` of one stage (resumable)."""
        # A stage without resume starts over in its own folder of out_dir
        # (the pipeline, or its command line, decided to redo it).
        options = dict(self.run_options)
        options.setdefault("overwrite", not options.get("resume"))
        return train.run(self.corpus, params, run_dir, extra=self.extra,
                         init_from=init_from, **options)

    def model_params(self, **changes):
        """The model's parameters without the pipeline's own."""
        params, _ = presets.split_quant(dict(self.params, quant=False))
        params.update(changes)
        return params


def run_pipeline(corpus, params, float_summary, float_dir, out_dir,
                 techniques, resume=False, log=print, threads=1,
                 progress=None, parallel=2):
    """Runs the compression pipeline on a trained float model.

    Args:
      corpus: the `data.Corpus` the float model was trained on.
      params: the full parameters (`presets.params_for`): the model's, the
        compression settings (`presets.COMPRESS_KEYS`) and the
        quantization-aware schedule (`presets.QUANT_KEYS`).
      float_summary: the float run's summary (`train.run`'s).
      float_dir: the float run's directory (its best checkpoint is used).
      out_dir: the pipeline's directory (one run directory per stage,
        the pruned checkpoint, the .tflite files, summary.json).
      techniques: list of ``presets.COMPRESS_TECHNIQUES``.
      resume: skip finished stages and resume a killed training stage.
      log: callable printing one line.
      threads: intra-op threads of each training run.
      progress: None or a tqdm-like class.
      parallel: fine-tuning runs at once (each on its own thread).

    Returns:
      ``{"stages": [row, ...], "table": [lines], "chosen": technique,
      "target_sparsity": float}`` (also summary.json).

    Raises:
      ValueError: no technique, or an unknown one.
    """
    if not techniques:
        raise ValueError("techniques: give at least one of %s"
                         % ", ".join(presets.COMPRESS_TECHNIQUES))
    pipeline = _Pipeline(corpus, params, float_summary, float_dir, out_dir,
                         {"resume": resume, "log": log, "progress": progress,
                          "threads": threads})
    target = pipeline.params["target_sparsity"]
    rows = [_row("float", "-", float_summary, pipeline.float_ppl,
                 effective_weights(pipeline.float_best, pipeline.params))]
    runs = _sparsify(pipeline, ["reference"] + list(techniques), parallel)
    reference, sparse_runs = runs[0], runs[1:]
    reference["row"] = best_reference(rows[0], reference["row"])
    rows += [run["row"] for run in runs]
    scope = pipeline.params.get("cut_scope", "matrix")
    chosen_row, chosen_reached = choose(
        [run["row"] for run in sparse_runs], target, log, scope)
    chosen = chosen_row["technique"]
    pruned = _prune(pipeline, chosen)
    quant, quant_best = _quantize(pipeline, pruned)
    # The QAT run's config.json, with the technique its model came from.
    modeldir.write_run_dir(os.path.join(out_dir, "qat"), quant["params"],
                           corpus.vocab, quant, technique=chosen)
    rows.append(_row("qat", chosen, quant, pipeline.float_ppl,
                     effective_weights(quant_best, quant["params"])))
    rows += _tflite_rows(pipeline, chosen,
                         (pipeline.model_params(pruning="fixed"), pruned),
                         (quant["params"], quant_best), progress)
    _mark(rows, target, reference["row"]["test_ppl"], scope)
    result = {"stages": rows, "table": format_table(rows), "chosen": chosen,
              "chosen_reached_target": chosen_reached,
              "target_sparsity": target, "cut_scope": scope}
    with open(os.path.join(out_dir, SUMMARY_FILE), "w") as handle:
        json.dump(result, handle, indent=1)
    _plot(pipeline, [reference] + sparse_runs, chosen, quant)
    return result


def _sparsify(pipeline, techniques, parallel):
    """Stage 2: the reference's fine-tuning and each technique's (ramp,
    exact cut, survivors' fine-tuning) from the float model, up to
    ``parallel`` at once. Returns ``[{technique, summary, row}]``."""
    def finetune(technique):
        if technique == "reference":
            run_dir = os.path.join(pipeline.out_dir, "reference")
            summary = pipeline.train(reference_params(pipeline.params),
                                     run_dir, pipeline.float_best)
            modeldir.write_run_dir(run_dir, summary["params"],
                                   pipeline.corpus.vocab, summary,
                                   stage="reference")
            return {"technique": "-", "summary": summary,
                    "row": _row("reference", "-", summary, pipeline.float_ppl,
                                effective_weights(
                                    train.best_checkpoint(run_dir),
                                    summary["params"]))}
        cut, remade = _ramp_and_cut(pipeline, technique)
        run_dir = os.path.join(pipeline.out_dir, _SHORT[technique] + "_ft")
        if remade:   # survivors of an older cut: not to be resumed
            train._clear_run(run_dir)  # pylint: disable=protected-access
        summary = pipeline.train(
            survivors_params(pipeline.params, pipeline.teacher), run_dir,
            cut)
        # Its config.json names the technique its survivors came from.
        modeldir.write_run_dir(run_dir, summary["params"],
                               pipeline.corpus.vocab, summary,
                               stage="sparse", technique=technique)
        return {"technique": technique, "summary": summary,
                "row": _row("sparse", technique, summary, pipeline.float_ppl,
                            effective_weights(train.best_checkpoint(run_dir),
                                              summary["params"]))}

    with concurrent.futures.ThreadPoolExecutor(max(1, parallel)) as pool:
        if pipeline.teacher_is_reference():
            # The techniques' teacher is the reference: it trains first.
            first = finetune(techniques[0])
            # The teacher is the reference `best_reference` reports.
            float_row = {"valid_ppl": pipeline.float_summary["best_valid_ppl"]}
            if best_reference(float_row, first["row"])[
                    "reference_is"] == "fine-tuned":
                pipeline.teacher = train.best_checkpoint(
                    os.path.join(pipeline.out_dir, "reference"))
            return [first] + list(pool.map(finetune, techniques[1:]))
        return list(pool.map(finetune, techniques))


def _ramp_and_cut(pipeline, technique):
    """A technique's first phase and its exact cut (redone when the phase's
    last checkpoint or the cut's scope changed). Returns ``(prefix, remade)``:
    the cut checkpoint's prefix and whether it was (re)written now."""
    params = finetune_params(pipeline.params, technique,
                             pipeline.steps_per_epoch, pipeline.teacher)
    run_dir = os.path.join(pipeline.out_dir, _SHORT[technique])
    pipeline.train(params, run_dir, pipeline.float_best)
    last = tf.train.latest_checkpoint(os.path.join(run_dir, "last"))
    cut = os.path.join(pipeline.out_dir, _SHORT[technique] + "_cut",
                       "model.ckpt")
    scope = pipeline.params.get("cut_scope", "matrix")
    made_from = _made_from("%s:%s" % (technique, scope), last)
    key = "cut_" + _SHORT[technique]
    remade = pipeline.done.get(key) != made_from
    if remade:
        cut_checkpoint(last, params, pipeline.params["target_sparsity"], cut,
                       scope)
        pipeline.record(key, made_from)
    return cut, remade


def _made_from(technique, checkpoint):
    """What a derived file was made from: the technique and a digest of the
    source checkpoint's index (it holds every tensor's checksum), so a
    resume redoes a stage whose source changed (e.g. a longer QAT run)."""
    with open(checkpoint + ".index", "rb") as handle:
        digest = hashlib.sha1(handle.read()).hexdigest()[:16]
    return "%s:%s" % (technique, digest)


def _prune(pipeline, technique):
    """Stage 3: the chosen model as dense weights with fixed masks (once).
    Returns the pruned checkpoint's prefix."""
    pruned = os.path.join(pipeline.out_dir, "pruned", "model.ckpt")
    source = train.best_checkpoint(os.path.join(
        pipeline.out_dir, _SHORT[technique] + "_ft"))
    made_from = _made_from(technique, source)
    if pipeline.done.get("pruned") != made_from:
        prune_checkpoint(source, survivors_params(
            pipeline.params, pipeline.teacher), pruned)
        pipeline.record("pruned", made_from)
    _describe_pruned(pipeline, technique, pruned)
    return pruned


def _describe_pruned(pipeline, technique, pruned):
    """config.json and vocab.txt of the pruned checkpoint's directory."""
    params = pipeline.model_params(pruning="fixed")
    nonzero, total = _nonzero(effective_weights(pruned, params))
    modeldir.write_config(
        os.path.dirname(pruned), params, pipeline.corpus.vocab,
        modeldir.produced_by(params, stage="pruned", technique=technique,
                             sparsity=1.0 - nonzero / float(total)),
        checkpoint=os.path.basename(pruned))


def _quantize(pipeline, pruned):
    """Stage 4: quantization-aware fine-tuning of the pruned model with its
    masks held. Returns (summary, best checkpoint)."""
    _, params = presets.split_quant(dict(pipeline.params, quant=True))
    params.update(pruning="fixed")
    _compressed_dropout(params, pipeline.params)
    quant_dir = os.path.join(pipeline.out_dir, "qat")
    summary = pipeline.train(params, quant_dir, pruned)
    return summary, train.best_checkpoint(quant_dir)


def _plot(pipeline, runs, chosen, quant):
    """valid_ppl.png: the fine-tunings continue the float curve from its
    best epoch (a technique's survivors after its ramp, QAT after the
    chosen technique's best)."""
    float_summary = pipeline.float_summary
    start = float_summary["best_epoch"]
    ramp = ramp_epochs(pipeline.params)
    summaries, offsets = [float_summary], [0]
    for run in runs:
        name = _SHORT.get(run["technique"], "reference")
        summaries.append(dict(run["summary"], model="%s+%s" % (
            float_summary["model"], name)))
        offsets.append(start + (0 if name == "reference" else ramp))
        if run["technique"] == chosen:
            qat_offset = offsets[-1] + run["summary"]["best_epoch"]
    summaries.append(quant)
    offsets.append(qat_offset)
    records.plot_curves(summaries, os.path.join(pipeline.out_dir,
                                                "valid_ppl.png"),
                        float_summary.get("floor_ppl"), offsets,
                        log=pipeline.run_options.get("log", print))


def _tflite_row(stage, technique, ppl, float_ppl, counts, shapes, extra):
    """One TFLite stage's row. ``counts`` is (zeros, total) read back from
    the file, ``shapes`` its weight matrices' shapes: their sizes go into
    ``matrix_sizes`` so `_mark` applies the same per-matrix rule
    (`records.target_zeros`) as to the TF rows; without them the row fell
    back to the global rounding and a model that reached the target as
    ``sparse`` was marked NO as ``tflite_float``."""
    zeros, total = counts
    row = {"stage": stage, "technique": technique,
           "test_ppl": ppl, "valid_ppl": None,
           "ratio_to_float": ppl / float_ppl,
           "nonzero_weights": total - zeros, "total_weights": total,
           "matrix_sizes": [int(np.prod(s)) for s in shapes],
           "sparsity": zeros / float(total)}
    row.update(extra)
    return row


def _tflite_rows(pipeline, technique, pruned, quant, progress=None):
    """Stages 5 to 7: exports the TFLite models (unless done) and scores
    them with the interpreter over the whole test stream: float, uint8 and
    (TF 2.x) the QAT model's int8 weights stored sparse."""
    params = pruned[0]
    # A short window keeps the unrolled graph (each step adds its ops to
    # the file) small beside the weights; the state carries across.
    batch, steps = params["eval_batch_size"], min(params["bptt"],
                                                   EXPORT_STEPS)
    test = data.batchify(pipeline.corpus.test, batch)
    rows, runners = [], {}
    files = [("tflite_float", pruned, {}), ("tflite_uint8", quant, {})]
    if sparse_storage.available():
        files.append(("tflite_int8", quant,
                      {"weights": "int8", "storage": "sparse"}))
    for stage, (stage_params, checkpoint), formats in files:
        path = os.path.join(pipeline.out_dir, "%s.tflite" % stage)
        made_from = _made_from(technique, checkpoint)
        if pipeline.done.get(stage) != made_from or not os.path.exists(path):
            export.export_lm(stage_params, checkpoint, path, batch, steps,
                             **formats)
            pipeline.record(stage, made_from)
        ppl, _, tokens = export.tflite_perplexity(path, test, progress)
        shapes = export.weight_shapes(stage_params)
        zeros, total = export.weight_sparsity_of_tflite(path, shapes)
        size, gz = _file_bytes(path)
        modeldir.write_tflite_sidecar(
            path, stage_params, pipeline.corpus.vocab,
            modeldir.produced_by(stage_params, stage=stage,
                                 technique=technique, test_ppl=ppl,
                                 sparsity=zeros / float(total)))
        runners[stage] = export.LMRunner(path)
        rows.append(_tflite_row(stage, technique, ppl, pipeline.float_ppl,
                                (zeros, total), shapes,
                                {"bytes": size, "gzip_bytes": gz,
                                 "tokens_scored": tokens}))
    # Latency side by side: alternate the two models' timings.
    times = {stage: [] for stage in runners}
    for _ in range(5):
        for stage, runner in runners.items():
            times[stage].append(runner.time_per_token(repeats=4))
    for row in rows:
        row["ms_per_token"] = 1e3 * float(np.median(times[row["stage"]]))
    return rows


def format_table(rows):
    """The pipeline's table, as lines: the ratios to the float model and
    to the reference (the float model fine-tuned for the same budget),
    and whether each compressed stage reached the target ('yes' / 'NO')."""
    header = ("%-12s | %-19s | %8s | %6s | %6s | %17s | %7s | %9s | %9s | "
              "%8s" % ("stage", "technique", "test ppl", "/float", "/ref",
                       "nonzero / total", "target", "bytes", "gzip",
                       "ms/token"))
    lines = [header, "-" * len(header)]
    for r in rows:
        reached = r.get("reached_target")
        lines.append(
            "%-12s | %-19s | %8.2f | %6.3f | %6s | %8d / %6.2f%% | %7s | "
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
    stages = {r["stage"] for r in rows}
    if "tflite_int8" in stages:
        lines.append("tflite_int8: the qat model's int8 weights (float "
                     "activations) stored sparse (docs/sparse_tflite.md)")
    elif "tflite_uint8" in stages:
        lines.append("tflite_int8 (int8 weights stored sparse): needs "
                     "TensorFlow 2.x to write and run (make demo-tf2)")
    return lines


def _reference_line(row):
    """What the ``/ref`` column divides by."""
    if row["reference_is"] == "float":
        return ("* /ref is the float model itself: its fine-tuning for the "
                "same budget validated worse (%.2f against %.2f)"
                % (row["finetuned_valid_ppl"], row["valid_ppl"]))
    return ("/ref: the float model fine-tuned for the same budget, "
            "averaging from its first step (validation %.2f)"
            % row["valid_ppl"])
