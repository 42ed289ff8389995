"""Hyper-parameter sets of the language-model example.

`params_for(preset, model, overrides)` merges DEFAULTS, the preset, the
model's own settings and explicit overrides, in that order.
"""
DEFAULTS = {
    # model
    "emb_size": 400, "hidden_size": 1150, "num_layers": 3,
    # regularization (used by model 'awd' only)
    "dropout": 0.4, "dropouth": 0.25, "dropouti": 0.4, "dropoute": 0.1,
    "wdrop": 0.5, "alpha": 2.0, "beta": 1.0, "wdecay": 1.2e-6,
    # optimization
    "batch_size": 20, "eval_batch_size": 10, "bptt": 70,
    "variable_bptt": True, "lr": 30.0, "clip": 0.25, "optimizer": "ntasgd",
    "nonmono": 5,
    # stopping rule, identical for every model of a run
    "max_epochs": 500, "patience": 10,
    "seed": 1111,
    # sparse embedding and cells (sparse_layers); weight None: 1 / tokens
    "sparsity": None, "sparsity_weight": None,
    # quantization-aware fine-tuning of the trained float model (--quant):
    # quant_epochs epochs from its best checkpoint at learning rate quant_lr
    # (None: lr / 4, a fine-tuning rate), fake quantization from global step quant_delay of the
    # fine-tuning on (ranges are learned from its first step).
    "quant": False, "quant_epochs": 3, "quant_delay": 20, "quant_lr": None,
    "weight_bits": 8, "activation_bits": 8,
    # embedded corpus (used when no --data-dir is given)
    "hmm_seed": 1234, "hmm_states": 32, "hmm_vocab": 2000,
    "hmm_train": 200000, "hmm_valid": 20000, "hmm_test": 20000,
}

PRESETS = {
    # The paper's PTB settings (Merity et al. 2017, table 1 / appendix).
    "awd-ptb": {},
    # Minutes on 2 cores: a small model on a small sample of a smaller
    # source (16 states, 1000 words, 20k training tokens), so that the
    # plain LSTM overfits within a few epochs and regularization shows.
    "demo": {
        "emb_size": 128, "hidden_size": 256, "num_layers": 2,
        "batch_size": 10, "eval_batch_size": 20, "bptt": 35, "lr": 20.0,
        "wdrop": 0.6, "dropouth": 0.35, "dropoute": 0.2,
        "nonmono": 2, "max_epochs": 40, "patience": 4,
        "hmm_states": 16, "hmm_vocab": 1000, "hmm_train": 20000,
        "hmm_valid": 8000, "hmm_test": 8000,
    },
}

# The plain baseline: no regularization of any kind, plain SGD.
MODEL_OVERRIDES = {
    "awd": {},
    "plain": {"optimizer": "sgd"},
}


#: Parameters of the quantization-aware phase only; the float phase of a
#: run never sees them, so adding --quant to a finished float run resumes it.
QUANT_KEYS = ("quant", "quant_epochs", "quant_delay", "quant_lr",
              "weight_bits", "activation_bits")


def split_quant(params):
    """(float phase params, quantization-aware phase params or None).

    The float phase is the model without any quantization parameter. The
    quantization-aware phase (only when params['quant']) is the same model
    with quantized cells, trained for quant_epochs epochs (its max_epochs)
    at quant_lr (default: lr / 4); the same stopping rule otherwise.

    Args:
      params: dict from `params_for`.
    Returns:
      (dict, dict or None).
    Raises:
      ValueError: quant_epochs < 1 or quant_lr <= 0 with quant.
    """
    float_params = {k: v for k, v in params.items() if k not in QUANT_KEYS}
    if not params.get("quant"):
        return float_params, None
    if int(params["quant_epochs"]) < 1:
        raise ValueError("quant_epochs: expected an int >= 1, got %r"
                         % (params["quant_epochs"],))
    lr = (params["lr"] / 4.0 if params.get("quant_lr") is None
          else params["quant_lr"])
    if not lr > 0:
        raise ValueError("quant_lr: expected a learning rate > 0, got %r"
                         % (lr,))
    quant = dict(params, max_epochs=int(params["quant_epochs"]), lr=lr,
                 quant_lr=lr)
    return float_params, quant


def params_for(preset, model, overrides=None):
    """The full parameter dict for one model of a run.

    Args:
      preset: a key of PRESETS.
      model: 'awd' or 'plain'.
      overrides: dict of explicit values (None values are ignored).
    Returns:
      dict.
    Raises:
      ValueError: unknown preset, model or override key.
    """
    if preset not in PRESETS:
        raise ValueError("preset: expected one of %s, got %r"
                         % (sorted(PRESETS), preset))
    if model not in MODEL_OVERRIDES:
        raise ValueError("model: expected one of %s, got %r"
                         % (sorted(MODEL_OVERRIDES), model))
    params = dict(DEFAULTS)
    params.update(PRESETS[preset])
    params.update(MODEL_OVERRIDES[model])
    for key, value in (overrides or {}).items():
        if key not in DEFAULTS:
            raise ValueError("override %r: not a parameter (known: %s)"
                             % (key, ", ".join(sorted(DEFAULTS))))
        if value is not None:
            params[key] = value
    params["model"] = model
    params["preset"] = preset
    return params
