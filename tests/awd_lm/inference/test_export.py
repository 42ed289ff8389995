"""`awd_lm.inference.export`: the weight format a model's export gets
(`check_formats`: the model's own by default, every refusal named, for a
Python call and for the command's flags) and the file `export_lm` writes
of the session's tiny model, read back from its bytes and by the
interpreter (its shape, its weights' type)."""
import os

import numpy as np
import pytest

from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.awd_lm.inference import export, model_files
from tf1_awd_sparse.export import eval_graph, sparse_storage
from tf1_awd_sparse.export.runner import open_interpreter

FLOAT, QUANT = Params.from_flat({}), Params.from_flat({"quant": True})
TF2 = sparse_storage.available()


@pytest.mark.parametrize("params,weights,expected", [
    (FLOAT, None, "float"), (QUANT, None, "uint8"), (FLOAT, "float", "float"),
    (QUANT, "uint8", "uint8")])
def test_none_is_the_models_own_format(params, weights, expected):
    assert export.check_formats(weights, "dense", params) == expected


@pytest.mark.parametrize("params", [FLOAT, QUANT])
def test_int8_and_sparse_storage_need_tf2(params):
    for weights, storage in (("int8", "dense"), ("int8", "sparse")):
        if TF2:
            assert export.check_formats(weights, storage, params) == "int8"
            continue
        with pytest.raises(sparse_storage.SparseStorageError):
            export.check_formats(weights, storage, params)
        with pytest.raises(sparse_storage.SparseStorageError,
                           match="^--format int8: needs TensorFlow 2.x"):
            export.check_formats(weights, storage, params, model_dir="m")


@pytest.mark.parametrize("weights,storage,params,model_dir,message", [
    ("int4", "dense", FLOAT, None, "weights must be None or one of float, "
     "uint8, int8, got 'int4'"),
    ("float", "packed", FLOAT, None, "storage must be one of dense, sparse"),
    ("uint8", "dense", FLOAT, None, "weights='uint8' needs a "
     "quantization-aware model"),
    ("uint8", "dense", FLOAT, "runs/awd", "--format uint8 needs a "
     "quantization-aware model: runs/awd is float"),
    ("float", "dense", QUANT, None, "weights='float' of a "
     "quantization-aware model"),
    ("float", "dense", QUANT, "runs/awd_quant", "--format float: "
     "runs/awd_quant is quantization-aware"),
    ("uint8", "sparse", QUANT, None, "storage='sparse' with uint8 weights"),
    ("uint8", "sparse", QUANT, "q", "--storage sparse --format uint8"),
])
def test_a_format_the_model_cannot_have_is_named(weights, storage, params,
                                                 model_dir, message):
    with pytest.raises(ValueError) as error:
        export.check_formats(weights, storage, params, model_dir=model_dir)
    assert str(error.value).startswith(message)


@pytest.mark.skipif(not TF2, reason="the fused file needs TF 2.x")
def test_the_fused_ops_refusals_come_first():
    with pytest.raises(ValueError, match="storage='sparse' needs "
                       "weights='int8'"):
        export.check_formats("float", "sparse", FLOAT, lstm="fused")
    assert export.check_formats(None, "dense", FLOAT, lstm="fused") == \
        "float"


@pytest.mark.parametrize("weights", ["float", "int8"])
def test_the_file_written_is_the_models(lm_models, tmp_path, weights):
    if weights == "int8" and not TF2:
        pytest.skip("int8 files need TF 2.x")
    config = modeldir.read_config(model_files.resolve(
        lm_models["float_dir"])[0])
    path = str(tmp_path / "m.tflite")
    size = export.export_lm(config["params"], os.path.join(
        config["directory"], config["checkpoint"]), path, 3, 5,
        weights=weights)
    with open(path, "rb") as handle:
        data = handle.read()
    assert size == len(data) and data[4:8] == b"TFL3"
    interpreter = open_interpreter(path)
    inputs = {d["name"]: d for d in interpreter.get_input_details()}
    assert list(inputs[eval_graph.INPUT_NAME]["shape"]) == [3, 5]
    outputs = {d["name"]: list(d["shape"])
               for d in interpreter.get_output_details()}
    vocab = len(config["words"])
    assert outputs[export.LOGITS_NAME] == [3, 5, vocab]
    assert outputs[export.HIDDEN_NAME] == [3, 5, 8]
    types = {np.dtype(d["dtype"]) for d in interpreter.get_tensor_details()}
    assert (np.dtype(np.int8) in types) == (weights == "int8")
    with pytest.raises(ValueError, match="batch_size"):
        export.export_lm(config["params"], "unused", path, 0, 5)
