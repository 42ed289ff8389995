"""`awd_lm.inference.tflite_weights`: the weight matrices a TFLite
language model holds, read back from its file, against the checkpoint it
was exported from (numpy): their shapes (the kernels transposed) and
their zeros, of a copy of the session's tiny model with 40 % of each
matrix zeroed, dense and (where TensorFlow writes it) sparse storage."""
import numpy as np
import pytest

from support import lm_api
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.inference import model_files, tflite_weights
from tf1_awd_sparse.export import sparse_storage


@pytest.fixture(scope="module")
def pruned(lm_models, tmp_path_factory):
    """(params, {name: value} of the checkpoint, {storage: .tflite})."""
    folder = str(tmp_path_factory.mktemp("pruned"))
    model_dir, values = lm_api.pruned_copy(lm_models["float_dir"], folder)
    files = {}
    for storage in ("dense", "sparse") if sparse_storage.available() \
            else ("dense",):
        files[storage] = "%s/%s.tflite" % (folder, storage)
        model_files.export_model(model_dir, files[storage], batch_size=2,
                                 num_steps=3, storage=storage)
    params = modeldir.read_config(model_files.resolve(model_dir)[0])[
        "params"]
    return params, values, files


def _matrices(values):
    """The checkpoint's weight matrices, as TFLite stores them: the
    embedding table, and each kernel [input + units, 4 units]
    transposed."""
    tables = [v for n, v in sorted(values.items())
              if v.ndim == 2 and "kernel" not in n]
    kernels = [values[n].T for n in sorted(values) if values[n].ndim == 2
               and "kernel" in n]
    assert len(tables) == 1 and kernels, sorted(values)
    return tables + kernels


def test_the_shapes_are_the_checkpoints_matrices(pruned):
    params, values, _ = pruned
    assert tflite_weights.weight_shapes(params) == [
        m.shape for m in _matrices(values)]


@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_the_zeros_are_the_checkpoints(pruned, storage):
    params, values, files = pruned
    if storage not in files:
        pytest.skip("this TensorFlow writes no sparse storage")
    matrices = _matrices(values)
    expected = (sum(int(np.sum(m == 0)) for m in matrices),
                sum(m.size for m in matrices))
    assert 0.3 < expected[0] / float(expected[1]) < 0.5
    assert tflite_weights.weight_sparsity_of_tflite(
        files[storage], tflite_weights.weight_shapes(params)) == expected
    # An unrolled file has no low-rank table.
    assert tflite_weights.low_rank_of_tflite(files[storage]) is None


def test_a_shape_the_file_lacks_is_named(pruned):
    params, _, files = pruned
    shapes = tflite_weights.weight_shapes(params) + [(5, 3)]
    with pytest.raises(ValueError, match=r"has no tensor of shape \(5, 3\)"):
        tflite_weights.weight_sparsity_of_tflite(files["dense"], shapes)
