"""benchmarks/bench_stream.py in its tiny configuration: the module runs
end to end and prints every row, its magnitude-sparse copy zeroes the
smallest entries of each matrix, and its decoder-alone model computes the
tied decoder (numpy reference)."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support import BENCHMARKS, load_program
from support.tolerances import matmul_atol

bench_stream = load_program(os.path.join(BENCHMARKS, "bench_stream.py"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("bench_stream"))
    return bench_stream.train_runs(root, **bench_stream.TINY), root


def _variables(run_dir):
    from tf1_awd_sparse.awd_lm.config import modeldir
    config = modeldir.read_config(os.path.join(run_dir, "config.json"))
    reader = tf.train.load_checkpoint(os.path.join(run_dir,
                                                   config["checkpoint"]))
    return {n: reader.get_tensor(n)
            for n in reader.get_variable_to_shape_map()}


def test_sparse_copy_zeroes_smallest_of_each_matrix(runs):
    dirs, root = runs
    out = bench_stream.sparse_copy(dirs["float"], os.path.join(root, "sp"),
                                   0.75)
    before, after = _variables(dirs["float"]), _variables(out)
    assert sorted(before) == sorted(after)
    matrices = 0
    for name, value in before.items():
        if value.ndim != 2:
            np.testing.assert_array_equal(after[name], value)
            continue
        matrices += 1
        kept = np.sort(np.abs(value).ravel())[-int(round(0.25 * value.size)):]
        np.testing.assert_array_equal(np.sort(np.abs(after[name][
            after[name] != 0])), kept)
        nonzero = after[name] != 0
        np.testing.assert_array_equal(after[name][nonzero], value[nonzero])
    assert matrices == 3  # the embedding and two kernels


def test_decoder_alone_is_the_tied_decoder(runs):
    dirs, root = runs
    path = os.path.join(root, "decoder.tflite")
    bench_stream.part_file(dirs["float"], path, "decoder")
    values = _variables(dirs["float"])
    h = np.random.RandomState(0).randn(1, bench_stream.TINY["units"]).astype(
        np.float32)
    interpreter = tf.lite.Interpreter(model_path=path)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], h)
    interpreter.invoke()
    logits = interpreter.get_tensor(
        interpreter.get_output_details()[0]["index"])
    expected = h.dot(values["lm/embedding"].T) + values["lm/softmax_bias"]
    # TFLite's and numpy's float32 dot products plus bias, each summed in
    # its own order: matmul_atol of [h, 1] @ [embedding.T; bias] per side
    # (was rtol 1e-4 + atol 1e-5: a wrong logit within 1e-4 of relative
    # size passed).
    ones = np.ones((1, 1), np.float32)
    atol = 2 * matmul_atol(np.concatenate([h, ones], 1), np.concatenate(
        [values["lm/embedding"].T, values["lm/softmax_bias"][None]], 0))
    np.testing.assert_allclose(logits, expected, rtol=0, atol=atol)


def test_tiny_run_prints_every_row(capsys):
    bench_stream.main(["--tiny", "--rounds", "1", "--tokens", "1"])
    out = capsys.readouterr().out
    for row in ("TF graph step", "float step", "uint8 step",
                "float, tf.lite", "uint8, tf.lite",
                "float decoder alone, tf.lite", "uint8 gather alone, tf.lite",
                "sparse float, tf.lite", "sparse uint8, tf.lite",
                "uint8/float, tf.lite", "share of the whole model's invoke"):
        assert row in out, row
    line = [l for l in out.splitlines() if l.strip().startswith(
        "float, tf.lite ")][0]
    ms, cpu, ratio = [float(x.rstrip("x")) for x in line.split()[2:5]]
    assert ms > 0 and cpu >= 0 and ratio > 0
    if bench_stream.sparsity_available():
        assert "sparse float decoder alone sparse-format" in out


def test_run_update_replaces_only_the_named_section():
    import run
    page = run.page("`c`", "E", [("bench_sparse", "S.", "one\n"),
                                 ("bench_quant", "Q.", "two\n")])
    updated = run.updated_page(page, "`u`", "F", [
        ("bench_stream", "T.", "three\n"), ("bench_quant", "Q.", "four\n")])
    head, sections = run._sections_of(updated)  # pylint: disable=W0212
    assert head == run._sections_of(page)[0]  # pylint: disable=W0212
    assert list(sections) == ["bench_sparse", "bench_stream", "bench_quant"]
    assert "one" in sections["bench_sparse"]
    assert "four" in sections["bench_quant"] and "two" not in updated
    assert "Updated by `u`; environment: F." in sections["bench_stream"]
    assert run.updated_page(page, "`u`", "F", []) == page
