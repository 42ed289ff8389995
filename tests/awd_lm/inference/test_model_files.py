"""`awd_lm.inference.model_files`: where a model's configuration is
(`resolve`), a model directory exported with its sidecar and vocabulary
(`export_model`: the sidecar's figures against the checkpoint's and the
files' bytes), and a file copied with both (`copy_model_file`: the same
bytes, the sidecar naming the copies). On the session's tiny model."""
import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from support import lm_api
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.inference import model_files


def _read(path, mode="rb"):
    with open(path, mode) as handle:
        return handle.read()


def test_a_directory_and_a_file_resolve_to_their_configs(lm_models):
    assert model_files.resolve(lm_models["float_dir"]) == (
        os.path.join(lm_models["float_dir"], "config.json"), "tf")
    assert model_files.resolve(lm_models["uint8_tflite"]) == (
        lm_models["uint8_tflite"] + ".json", "tflite")


def test_what_is_no_model_is_named(lm_models, tmp_path):
    # A run's --out names its model directories.
    with pytest.raises(modeldir.ConfigError) as error:
        model_files.resolve(lm_models["root"])
    assert str(error.value) == (
        "%s: a run directory, not a model directory (no config.json); its "
        "model directories: %s, %s" % (lm_models["root"],
                                       lm_models["float_dir"],
                                       lm_models["quant_dir"]))
    bare = tmp_path / "model.tflite"
    shutil.copyfile(lm_models["float_tflite"], str(bare))
    cases = [("", "path must name a model directory"),
             (str(tmp_path), "not a model directory (no config.json"),
             (str(bare), "no sidecar model.tflite.json beside it"),
             (lm_models["float_tflite"] + ".json",
              "neither a model directory nor a .tflite file")]
    for path, message in cases:
        with pytest.raises(modeldir.ConfigError, match=message.replace(
                "(", r"\(")):
            model_files.resolve(path)


def test_an_export_records_its_file_its_zeros_and_its_vocabulary(
        lm_models, tmp_path):
    model_dir, values = lm_api.pruned_copy(lm_models["float_dir"],
                                           str(tmp_path), fraction=0.25)
    path = str(tmp_path / "out" / "m.tflite")
    os.makedirs(os.path.dirname(path))
    sidecar = model_files.export_model(model_dir, path, batch_size=3,
                                       num_steps=2)
    assert sidecar == path + ".json"
    with open(sidecar) as handle:
        written = json.load(handle)
    matrices = [v for v in values.values()
                if v.ndim == 2 and v.dtype == np.float32]
    zeros = sum(int(np.sum(m == 0)) for m in matrices)
    produced = written["produced_by"]
    assert produced["sparsity"] == pytest.approx(
        zeros / float(sum(m.size for m in matrices)), abs=1e-12)
    assert (produced["stage"], produced["storage"], produced["source"]) == (
        "tflite_float", "dense", os.path.abspath(model_dir))
    assert "lstm" not in produced
    assert (written["tflite"]["batch"], written["tflite"]["window"]) == (3, 2)
    vocab = _read(modeldir.vocab_path(path))
    assert vocab == _read(os.path.join(model_dir, "vocab.txt"))
    assert written["tflite"]["vocab_sha256"] == hashlib.sha256(
        vocab).hexdigest()


def test_a_copy_is_the_same_bytes_its_sidecar_naming_the_copies(
        lm_models, tmp_path):
    source = lm_models["uint8_tflite"]
    path = str(tmp_path / "copy.tflite")
    assert model_files.copy_model_file(source, path) == path + ".json"
    assert _read(path) == _read(source)
    assert _read(path + ".vocab.txt") == _read(source + ".vocab.txt")
    original = json.loads(_read(source + ".json", "r"))
    copied = json.loads(_read(path + ".json", "r"))
    assert copied["tflite"]["file"] == "copy.tflite"
    assert copied["vocab"] == "copy.tflite.vocab.txt"
    assert copied["produced_by"]["source"] == os.path.abspath(source)
    # Nothing else of the sidecar changes, and no temporary file is left.
    for config in (original, copied):
        del config["tflite"]["file"], config["vocab"]
        config["produced_by"].pop("source", None)
    assert copied == original
    assert sorted(os.listdir(str(tmp_path))) == [
        "copy.tflite", "copy.tflite.json", "copy.tflite.vocab.txt"]
    with pytest.raises(ValueError, match="is the file to copy itself"):
        model_files.copy_model_file(path, path)
