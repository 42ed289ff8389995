"""`awd_lm.inference.fused_export`: the fused file's format named from
`export_lm`'s arguments (each refusal named), and the weights it writes
read from the evaluation graph: for the session's tiny float model, the
checkpoint's own values (numpy), every option of the format checked."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.inference import fused_export, model_files
from tf1_awd_sparse.export import sparse_format

needs_schema = pytest.mark.skipif(
    not sparse_format.available(),
    reason="the fused file is written with TF 2.x's schema module")


@needs_schema
@pytest.mark.parametrize("weights,storage,layout,expected", [
    ("float", "dense", "auto", "float"),
    ("int8", "dense", "auto", "int8"),
    ("int8", "dense", "csr", "int8"),   # a dense file has no layout
    ("int8", "sparse", "auto", "int8-sparse"),
    ("int8", "sparse", "fast", "int8-sparse"),
    ("int8", "sparse", "1x16", "int8-sparse"),
])
def test_the_format_of_the_arguments(weights, storage, layout, expected):
    assert fused_export.fused_format(weights, storage, layout, 1) == expected


@needs_schema
@pytest.mark.parametrize("weights,storage,layout,steps,message", [
    ("float", "dense", "auto", 4, "num_steps must be 1, got 4"),
    ("uint8", "dense", "auto", 1, "has no uint8 kernel"),
    ("float", "sparse", "auto", 1, "storage='sparse' needs weights='int8'"),
    ("int8", "sparse", "csr", 1, "layout must be 'auto', 'fast' or "
     "'1x16', got 'csr'"),
])
def test_what_the_fused_op_cannot_write_is_named(weights, storage, layout,
                                                 steps, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        fused_export.fused_format(weights, storage, layout, steps)


@pytest.mark.skipif(sparse_format.available(), reason="TF 1.x only")
def test_tf1_is_refused_for_want_of_the_schema():
    with pytest.raises(sparse_format.SparseStorageError):
        fused_export.fused_format("float", "dense", "auto", 1)


def test_the_arrays_are_the_checkpoints(lm_models):
    config = modeldir.read_config(model_files.resolve(
        lm_models["float_dir"])[0])
    prefix = "%s/%s" % (config["directory"], config["checkpoint"])
    table, layers, bias, cell_clip, low_rank = fused_export.lm_arrays(
        config["params"], prefix)
    reader = tf.train.NewCheckpointReader(prefix)
    np.testing.assert_array_equal(table, reader.get_tensor("lm/embedding"))
    np.testing.assert_array_equal(bias, reader.get_tensor("lm/softmax_bias"))
    assert len(layers) == 2
    for i, layer in enumerate(layers):
        scope = "lm/layer_%d/lstm_%d/" % (i, i)
        np.testing.assert_array_equal(layer.kernel,
                                      reader.get_tensor(scope + "kernel"))
        np.testing.assert_array_equal(layer.bias,
                                      reader.get_tensor(scope + "bias"))
        assert layer.forget_bias == 1.0
    assert cell_clip is None and low_rank is None
