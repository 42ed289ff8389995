"""Self-describing model directories: ``config.json`` and ``vocab.txt``.

Every training run directory (`awd_lm.training.train.run`), every
compression stage (`awd_lm.training.compression`) and every TFLite export
writes, beside its checkpoint or file, what is needed to open the model
again without the command line that made it:

``config.json`` (a run or stage directory)::

    {"format": "tf1_awd_sparse.awd_lm/1",
     "params": {...},            # the complete parameter dict
     "checkpoint": "best/model.ckpt",   # relative to the directory
     "vocab": "vocab.txt",
     "produced_by": {"stage": "float", "technique": null, "model": "awd",
                     "sparsity": null, "valid_ppl": ..., "test_ppl": ...}}

``<file>.tflite.json`` (beside a ``.tflite`` file): the same keys with
``"tflite"`` instead of ``"checkpoint"``: the file name, its batch and
window (steps per call), dtype (``float32`` or ``uint8``), every
input / output tensor's name, shape, dtype and quantization
``[scale, zero_point]``, and ``vocab_sha256``, the hash of its vocabulary,
which is the file's own ``<file>.tflite.vocab.txt`` (so that a second
export into the same folder changes nothing of the first; sidecars
written before name the folder's shared ``vocab.txt`` and no hash).

A SavedModel directory (`awd_lm.savedmodel`) holds a ``config.json``
whose ``checkpoint`` is ``variables/variables`` (the SavedModel's own
variables) and whose ``produced_by.stage`` is ``saved_model``.

``vocab.txt``: one word per line in id order (``<eos>`` / ``<unk>`` as
`awd_lm.corpus.data` spells them). `read_config` is the one reader: unknown or
misspelt keys are refused with one line naming the closest known key.
"""
import difflib
import hashlib
import json
import os

from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
# The names of a model directory's files are the run tree's (rundir).
from tf1_awd_sparse.awd_lm.config.rundir import (
    BEST_CHECKPOINT, CONFIG_FILE, VOCAB_FILE)
from tf1_awd_sparse.base.errors import Error

__all__ = ["ConfigError", "CONFIG_FILE", "VOCAB_FILE", "FORMAT",
           "write_config", "write_vocab", "read_vocab", "read_config",
           "sidecar_path", "write_tflite_sidecar", "produced_by",
           "write_run_dir", "vocab_has_specials", "model_dirs_in",
           "vocab_path", "vocab_sha256"]

FORMAT = "tf1_awd_sparse.awd_lm/1"

_TOP_KEYS = ("format", "params", "checkpoint", "tflite", "vocab",
             "produced_by")
_PRODUCED_KEYS = ("stage", "technique", "model", "sparsity", "valid_ppl",
                  "test_ppl", "init_from", "epochs_run", "best_epoch",
                  "corpus", "source", "data_dir", "training", "storage",
                  "lstm", "plan")
_TFLITE_KEYS = ("file", "batch", "window", "dtype", "inputs", "outputs",
                "log_softmax", "storage", "vocab_sha256")
_TENSOR_KEYS = ("name", "shape", "dtype", "quantization")
#: Parameters a config may hold: the presets', the model's own and a
#: distilled run's teacher checkpoint.
PARAM_KEYS = tuple(sorted(set(presets.DEFAULTS) | {"model", "preset",
                                                   "vocab_size",
                                                   "distill_from"}))


class ConfigError(ValueError, Error):
    """A config.json / sidecar that cannot be used; one line naming the
    file and the key."""


def _check_keys(mapping, known, where, path):
    """Refuses a key not in ``known``, naming the closest one."""
    if not isinstance(mapping, dict):
        raise ConfigError("%s: %s must be a JSON object, got %r"
                          % (path, where, type(mapping).__name__))
    for key in sorted(mapping):
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = ("did you mean %r?" % close[0] if close
                    else "known: %s" % ", ".join(known))
            raise ConfigError("%s: unknown key %r in %s (%s)"
                              % (path, key, where, hint))


def produced_by(params, summary=None, stage=None, **extra):
    """What produced a model, for its config: stage (``float``,
    ``sparse``, ``pruned``, ``qat``, ``tflite_float``, ``tflite_uint8``,
    ``tflite_int8``, ``saved_model``; default from ``params``), technique, model label, sparsity and
    perplexities (from ``summary``, a `train.run` summary, a
    `runrecord.RunSummary`, when given); ``params`` is the model's
    `Params`."""
    pruning = params.prune.pruning
    technique = params.sparse.sparsity or (
        "magnitude" if pruning == "magnitude" else None)
    if stage is None:
        stage = ("qat" if params.quantization.quant else "sparse"
                 if technique else "pruned" if pruning == "fixed"
                 else "float")
    label = presets.label(params)
    result = {"stage": stage, "technique": technique, "model": label,
              "sparsity": None, "valid_ppl": None, "test_ppl": None}
    if summary is not None:
        report = summary.sparsity_report or {}
        result.update(valid_ppl=summary.best_valid_ppl,
                      test_ppl=summary.test_ppl,
                      sparsity=report.get("global"),
                      init_from=summary.init_from,
                      epochs_run=summary.epochs_run,
                      best_epoch=summary.best_epoch, corpus=summary.corpus)
    result.update(extra)
    return result


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(obj, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _vocab_text(vocab):
    """The text of a vocabulary file: one word per line, in id order."""
    return "".join(word + "\n" for word in vocab)


def vocab_sha256(vocab):
    """The hex SHA-256 of a vocabulary's file text (`write_vocab`'s), which
    a sidecar records and `read_config` checks."""
    return hashlib.sha256(_vocab_text(vocab).encode("utf-8")).hexdigest()


def write_vocab(directory, vocab, name=VOCAB_FILE):
    """Writes ``directory/<name>`` (default vocab.txt): one word per line,
    in id order.

    Raises:
      ValueError: an empty vocabulary, or a word that is empty or holds
        white space (it could not be read back one per line).
    """
    if not vocab:
        raise ValueError("vocab must be a non-empty list of words, got %r"
                         % (vocab,))
    for word in vocab:
        if not word or len(word.split()) != 1 or word != word.strip():
            raise ValueError("vocab: word %r is empty or holds white space"
                             % (word,))
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(_vocab_text(vocab))
    os.replace(tmp, path)
    return path


def read_vocab(path):
    """The words of a vocab.txt, in id order.

    Raises:
      ConfigError: a missing or unreadable file, a blank line or a word
        listed twice (named, with its line number).
    """
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (IOError, OSError, UnicodeDecodeError) as e:
        raise ConfigError("%s: cannot read the vocabulary (%s)" % (path, e))
    seen = {}
    for number, word in enumerate(lines, 1):
        if not word.strip() or word != word.strip():
            raise ConfigError("%s: line %d: expected one word, got %r"
                              % (path, number, word))
        if word in seen:
            raise ConfigError("%s: line %d: %r repeats line %d"
                              % (path, number, word, seen[word]))
        seen[word] = number
    if not lines:
        raise ConfigError("%s: empty vocabulary" % path)
    return lines


def write_config(directory, params, vocab, produced, checkpoint=None,
                 tflite=None, name=CONFIG_FILE, vocab_name=VOCAB_FILE):
    """Writes ``directory/<name>`` and ``directory/<vocab_name>``.

    Args:
      directory: an existing directory.
      params: the model's `Params` (its ``to_flat()`` is written).
      vocab: list of words (id order).
      produced: dict (`produced_by`).
      checkpoint: checkpoint prefix relative to ``directory`` (TF models).
      tflite: the ``tflite`` entry (`write_tflite_sidecar`).
      name: the JSON file's name.
      vocab_name: the vocabulary file's name (a sidecar's is its file's
        own, `vocab_path`).

    Returns:
      the JSON file's path.
    """
    config = {"format": FORMAT, "params": dict(params.to_flat()),
              "vocab": vocab_name,
              "produced_by": dict(produced)}
    if checkpoint is not None:
        config["checkpoint"] = checkpoint
    if tflite is not None:
        config["tflite"] = tflite
    write_vocab(directory, vocab, vocab_name)   # before the JSON naming it
    path = os.path.join(directory, name)
    _write_json(path, config)
    return path


def write_run_dir(run_dir, params, vocab, summary=None, stage=None,
                  checkpoint=BEST_CHECKPOINT, **extra):
    """config.json and vocab.txt of a training run or stage directory
    (``params`` its `Params`; ``summary``: its `runrecord.RunSummary`,
    or None; ``extra``: more `produced_by` entries, e.g. ``technique``)."""
    return write_config(run_dir, params, vocab,
                        produced_by(params, summary, stage, **extra),
                        checkpoint)


def _tensor_entry(detail):
    scale, zero_point = detail["quantization"]
    return {"name": detail["name"],
            "shape": [int(d) for d in detail["shape"]],
            "dtype": detail["dtype"].__name__,
            "quantization": [float(scale), int(zero_point)]}


def sidecar_path(tflite_path):
    """``<file>.json`` beside a ``.tflite`` file."""
    return tflite_path + ".json"


def vocab_path(tflite_path):
    """``<file>.vocab.txt`` beside a ``.tflite`` file: its own vocabulary
    (no other file's export writes it)."""
    return tflite_path + ".vocab.txt"


def write_tflite_sidecar(tflite_path, params, vocab, produced):
    """Writes ``<file>.tflite.json`` and ``<file>.tflite.vocab.txt`` beside
    the file: the model's config plus its tensors, read from the file with
    the interpreter, what it stores sparse (``storage``:
    `sparse_storage.describe`, empty for a dense file) and its
    vocabulary's hash (``vocab_sha256``, checked by `read_config`).

    Returns:
      the sidecar's path.
    """
    # Imported here: reading a config loads no TensorFlow and no exporter.
    from tf1_awd_sparse.export import runner, sparse_storage
    interpreter = runner.open_interpreter(tflite_path, "tf")
    inputs = [_tensor_entry(d) for d in interpreter.get_input_details()]
    outputs = [_tensor_entry(d) for d in interpreter.get_output_details()]
    ids = [t for t in inputs if t["name"] == "inputs"][0]
    states = [t for t in inputs if t["name"] != "inputs"]
    entry = {"file": os.path.basename(tflite_path),
             "batch": ids["shape"][0], "window": ids["shape"][1],
             "dtype": states[0]["dtype"] if states else "float32",
             "inputs": inputs, "outputs": outputs,
             "log_softmax": "outside the model, on the dequantized logits",
             "storage": sparse_storage.describe(tflite_path),
             "vocab_sha256": vocab_sha256(vocab)}
    directory = os.path.dirname(os.path.abspath(tflite_path))
    return write_config(directory, params, vocab, produced, tflite=entry,
                        name=os.path.basename(sidecar_path(tflite_path)),
                        vocab_name=os.path.basename(vocab_path(tflite_path)))


def _check_tflite(entry, path):
    _check_keys(entry, _TFLITE_KEYS, "tflite", path)
    for side in ("inputs", "outputs"):
        for tensor in entry.get(side, []):
            _check_keys(tensor, _TENSOR_KEYS, "tflite.%s" % side, path)
    for key in ("file", "batch", "window", "inputs", "outputs"):
        if key not in entry:
            raise ConfigError("%s: tflite lacks %r" % (path, key))


def read_config(path):
    """Reads and checks a config.json or a ``.tflite.json`` sidecar.

    Args:
      path: the JSON file.

    Returns:
      the config dict; ``params`` a checked `Params` (`as_params`: a
      config.json is where parameters enter; then the model's checks,
      `presets.check_model_params`), ``words`` the vocabulary (read from the file ``vocab`` names) and
      ``directory`` the file's directory.

    Raises:
      ConfigError: a missing or unreadable file, an unknown key (named with
        the closest known one), a missing key or an invalid parameter, a
        vocabulary of another size than ``vocab_size`` or (a sidecar that
        records ``vocab_sha256``) another vocabulary than the file's.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (IOError, OSError) as e:
        raise ConfigError("%s: cannot read (%s)" % (path, e.strerror or e))
    except ValueError as e:
        raise ConfigError("%s: not JSON (%s)" % (path, e))
    _check_keys(config, _TOP_KEYS, "the config", path)
    for key in ("params", "vocab"):
        if key not in config:
            raise ConfigError("%s: missing key %r" % (path, key))
    if ("checkpoint" in config) == ("tflite" in config):
        raise ConfigError("%s: expected exactly one of 'checkpoint' and "
                          "'tflite'" % path)
    _check_keys(config["params"], PARAM_KEYS, "params", path)
    _check_keys(config.get("produced_by", {}), _PRODUCED_KEYS,
                "produced_by", path)
    if "tflite" in config:
        _check_tflite(config["tflite"], path)
    try:
        config["params"] = presets.check_model_params(
            as_params(config["params"]))
    except ValueError as e:
        raise ConfigError("%s: %s" % (path, e))
    directory = os.path.dirname(os.path.abspath(path))
    config["directory"] = directory
    config["words"] = read_vocab(os.path.join(directory, config["vocab"]))
    vocab_size = config["params"].model.vocab_size
    if len(config["words"]) != vocab_size:
        raise ConfigError("%s: %s has %d words, params['vocab_size'] is %d"
                          % (path, config["vocab"], len(config["words"]),
                             vocab_size))
    recorded = config.get("tflite", {}).get("vocab_sha256")
    if recorded is not None and recorded != vocab_sha256(config["words"]):
        raise ConfigError("%s: %s is not the vocabulary this file was "
                          "exported with (its sha256 differs from the "
                          "sidecar's vocab_sha256): export the model again"
                          % (path, config["vocab"]))
    return config


def model_dirs_in(path):
    """The model directories (with a config.json) directly inside ``path``
    (a run's ``--out``), sorted; ``[]`` when it is not a directory or holds
    none. The one listing `lm` (an error naming them) and ``awd-lm info``
    use."""
    if not os.path.isdir(path):
        return []
    return sorted(os.path.join(path, name) for name in os.listdir(path)
                  if os.path.isfile(os.path.join(path, name, CONFIG_FILE)))


def vocab_has_specials(words):
    """Whether a vocabulary holds ``<eos>`` (needed) and ``<unk>``."""
    return data.EOS in words, data.UNK in words
