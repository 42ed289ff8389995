"""A trained model's files: where a path's configuration is
(`resolve`: a model directory's config.json or a ``.tflite`` file's
sidecar), and a model directory written as a TFLite file with its sidecar
and its own vocabulary (`export_model`, public as `lm.export_model`), and
a written file copied with both (`copy_model_file`).
"""
import json
import os
import shutil

from tf1_awd_sparse.export import sparse_storage
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.inference import export, tflite_weights

__all__ = ["resolve", "export_model", "copy_model_file"]


def resolve(path):
    """Where a model's configuration is, and which backend reads it.

    Args:
      path: a run / stage directory (with config.json) or a ``.tflite``
        file (with its ``<file>.json`` sidecar).

    Returns:
      ``(config path, kind)``: the config.json or the sidecar, and 'tf'
      (a checkpoint) or 'tflite'.

    Raises:
      modeldir.ConfigError: neither, or its config is missing.
    """
    if not isinstance(path, str) or not path:
        raise modeldir.ConfigError("path must name a model directory or a "
                                   ".tflite file, got %r" % (path,))
    if os.path.isdir(path):
        config = os.path.join(path, modeldir.CONFIG_FILE)
        if not os.path.isfile(config):
            inside = modeldir.model_dirs_in(path)
            if inside:  # a run's --out: name its model directories
                raise modeldir.ConfigError(
                    "%s: a run directory, not a model directory (no %s); "
                    "its model directories: %s"
                    % (path, modeldir.CONFIG_FILE, ", ".join(inside)))
            raise modeldir.ConfigError(
                "%s: not a model directory (no %s; a run writes one when "
                "it starts)" % (path, modeldir.CONFIG_FILE))
        return config, "tf"
    if os.path.isfile(path) and path.endswith(".tflite"):
        sidecar = modeldir.sidecar_path(path)
        if not os.path.isfile(sidecar):
            raise modeldir.ConfigError("%s: no sidecar %s beside it"
                                       % (path, os.path.basename(sidecar)))
        return sidecar, "tflite"
    raise modeldir.ConfigError("%s: neither a model directory nor a "
                               ".tflite file" % (path,))


def export_model(model_dir, path, batch_size=1, num_steps=10, weights=None,
                 storage="dense", layout="auto", lstm="unrolled"):
    """Exports a run / stage directory's model as a TFLite file with its
    sidecar (``<path>.json``) and its vocabulary (``<path>.vocab.txt``,
    its hash in the sidecar) beside it: a second export into the folder
    changes nothing of the first. The sidecar's ``produced_by`` records
    the file's ``storage`` (``sparse`` when it stores a tensor sparse) and
    ``sparsity`` (its weights' zeros), read from the file.

    Args:
      model_dir: a directory with config.json (`LanguageModel.load`'s).
      path: the ``.tflite`` file to write.
      batch_size, num_steps: the file's fixed batch and window.
      weights, storage, layout, lstm: the file's weight format, storage,
        sparse layout and LSTM ops (`export.export_lm`: None is the
        model's own format, float or uint8; ``lstm="fused"``: one builtin
        LSTM op per layer, ``num_steps`` 1).

    Returns:
      the sidecar's path.

    Raises:
      modeldir.ConfigError: a bad model directory; see `export.export_lm`.
    """
    config = modeldir.read_config(resolve(model_dir)[0])
    checkpoint = os.path.join(config["directory"], config["checkpoint"])
    params = config["params"]
    # None resolved (the sidecar names the format), refused before work.
    weights = export.check_formats(weights, storage, params, lstm=lstm,
                                   layout=layout)
    export.export_lm(params, checkpoint, path, batch_size, num_steps,
                     weights=weights, storage=storage, layout=layout,
                     lstm=lstm)
    # The file's storage and zeros, read from it: --storage sparse leaves
    # weights with too few zeros dense, and a uint8 file has the zeros of
    # its quantized weights, not the checkpoint's recorded sparsity.
    zeros, total = tflite_weights.weight_sparsity_of_tflite(
        path, tflite_weights.weight_shapes(params))
    produced = dict(config.get("produced_by", {}),
                    stage="tflite_" + weights, storage="sparse" if
                    sparse_storage.stores_sparse(path) else "dense",
                    sparsity=zeros / float(total),
                    source=os.path.abspath(model_dir))
    if lstm == "fused":   # the sidecars of 0.3.0 files stay as they were
        produced["lstm"] = lstm
    return modeldir.write_tflite_sidecar(path, params, config["words"],
                                         produced)


def copy_model_file(source, path):
    """Copies a ``.tflite`` file with its sidecar and its vocabulary to
    ``path`` (``<path>.json``, ``<path>.vocab.txt``): the same bytes, the
    sidecar naming the copies (``tflite.file``, ``vocab``) and the file
    copied (``produced_by.source``). Each is written beside its place
    and renamed over it once all three are whole, so a failure leaves
    none. Reads no TensorFlow interpreter: a file that only TensorFlow
    2.x runs copies on 1.x.

    Args:
      source: a ``.tflite`` file with its sidecar (`resolve`).
      path: the copy.

    Returns:
      the copy's sidecar path.

    Raises:
      modeldir.ConfigError: ``source`` has no sidecar, or a bad one.
      ValueError: ``path`` is ``source`` itself.
      OSError: a file cannot be read or written.
    """
    config = modeldir.read_config(resolve(source)[0])
    if os.path.exists(path) and os.path.samefile(source, path):
        raise ValueError("--out %s: is the file to copy itself" % path)
    with open(modeldir.sidecar_path(source), encoding="utf-8") as handle:
        sidecar = json.load(handle)
    sidecar["tflite"]["file"] = os.path.basename(path)
    sidecar["vocab"] = os.path.basename(modeldir.vocab_path(path))
    sidecar.setdefault("produced_by", {})["source"] = os.path.abspath(source)
    places = [(os.path.join(config["directory"], config["vocab"]),
               modeldir.vocab_path(path)), (None, modeldir.sidecar_path(path)),
              (source, path)]
    written = []
    try:
        for origin, place in places:
            tmp = place + ".copy.tmp"
            written.append(tmp)
            if origin is None:
                with open(tmp, "w", encoding="utf-8") as handle:
                    json.dump(sidecar, handle, indent=1, sort_keys=True)
            else:
                shutil.copyfile(origin, tmp)
        for (_, place), tmp in zip(places, written):
            os.replace(tmp, place)
    finally:
        for tmp in written:
            if os.path.exists(tmp):
                os.remove(tmp)
    return modeldir.sidecar_path(path)
