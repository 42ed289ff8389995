"""`export.tflite_audit`, what a uint8 TFLite file leaves to chance: the
requantizations before concatenations (and their bypass), the products
written on a concatenation's grid, and the float ops.

The references: the TFLite interpreter's own reading of the files (its
operators, tensors and grids; the bypassed file's concatenations against
numpy's one rounding of their inputs). The files: a user's LSTM + GRU
model trained once (the ``exported`` fixture, tests/export/conftest.py)
and a float file of two ops."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.quantized_graph import STATES, step_graph
from tf1_awd_sparse.export import graphdef, tflite_audit


def test_merged_grids_are_the_interpreters_products_on_a_concat_grid(
        exported):
    """`merged_grids` against the interpreter's own reading of the file:
    each ADD / MUL / SUB output read only by CONCATENATION ops whose
    output has the same (scale, zero point)."""
    interpreter = tf.lite.Interpreter(model_path=exported["written"].path)
    if not hasattr(interpreter, "_get_ops_details"):
        pytest.skip("this interpreter lists no operators")
    interpreter.allocate_tensors()
    ops = interpreter._get_ops_details()
    grid = {d["index"]: (d["name"], d["quantization"])
            for d in interpreter.get_tensor_details()}
    expected = []
    for op in ops:
        if op["op_name"] not in ("ADD", "MUL", "SUB"):
            continue
        for out in op["outputs"]:
            readers = [r for r in ops if out in list(r["inputs"])]
            if readers and all(
                    r["op_name"] == "CONCATENATION"
                    and grid[r["outputs"][0]][1] == grid[out][1]
                    for r in readers):
                expected.append(grid[out][0])
    assert sorted(tflite_audit.merged_grids(
        exported["written"].path)) == sorted(expected)


def _converted(exported):
    """The file as the converter wrote it, before the call's bypass: the
    one-step graph converted again by `graphdef.convert` with the grids
    the call used."""
    written = exported["written"]
    with tf.Graph().as_default():
        placeholders, logits, states = step_graph()
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, exported["checkpoint"])
            outs = [logits] + [states[placeholders[n]] for n in STATES]
            quantized = []
            for tensor in outs:
                fq = [op for op in tensor.consumers()
                      if op.type.startswith("FakeQuant")]
                quantized.append(fq[0].outputs[0] if fq else tensor)
            # The converter's (mean, std) of each input's uint8 grid.
            stats = {n: (float(z), 1.0 / s)
                     for n, (s, z) in written.inputs.items()}
            return graphdef.convert(
                sess, [placeholders[n] for n in ("inputs",) + STATES],
                quantized, stats, output_names=["logits"] + [
                    "final" + n[len("state"):] for n in STATES])


def test_bypassed_concatenations_rescale_their_inputs_once(exported):
    """Where the converter put QUANTIZE ops before concatenations (TF
    2.15), the call's file reads the unquantized inputs instead: each
    concatenation's output equals numpy's one rounding of its inputs
    onto its grid, read from the interpreter's own tensors."""
    model = _converted(exported)
    if not tflite_audit.requantizations(model):
        pytest.skip("this converter puts no QUANTIZE before a "
                    "concatenation")
    patched, bypassed = tflite_audit.bypass_requantizations(model)
    assert bypassed and tflite_audit.requantizations(patched) == []
    interpreter = tf.lite.Interpreter(
        model_content=patched, experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    rng = np.random.RandomState(2)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], rng.randint(
            0, 256, detail["shape"]).astype(np.uint8))
    interpreter.invoke()
    grids = {d["index"]: d["quantization"]
             for d in interpreter.get_tensor_details()}
    checked = 0
    for op in interpreter._get_ops_details():
        if op["op_name"] != "CONCATENATION":
            continue
        (out,) = op["outputs"]
        scale, zero = grids[out]
        parts = []
        for index in op["inputs"]:
            s_in, z_in = grids[index]
            codes = interpreter.get_tensor(index).astype(np.float64)
            value = (codes - z_in) * (s_in / scale)
            parts.append(np.clip(np.sign(value) * np.floor(
                np.abs(value) + 0.5) + zero, 0, 255))
        np.testing.assert_array_equal(
            interpreter.get_tensor(out), np.concatenate(parts, axis=-1))
        checked += 1
    assert checked >= 2


def _float_model(folder):
    """A float file: ``x * 2 + 1`` on a placeholder ``x``."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], "x")
        out = tf.identity(x * 2.0 + 1.0, name="out")
        with tf.Session() as sess:
            model = graphdef.convert(sess, [x], [out], None)
    path = os.path.join(folder, "float.tflite")
    with open(path, "wb") as handle:
        handle.write(model)
    return path


def test_float_ops_names_each_op_of_a_float_file(tmp_path):
    path = _float_model(str(tmp_path))
    found = tflite_audit.float_ops(path)
    interpreter = tf.lite.Interpreter(model_path=path)
    interpreter.allocate_tensors()
    names = {d["name"] for d in interpreter.get_tensor_details()
             if d["dtype"] == np.float32}
    assert found and all(set(f.outputs) <= names for f in found)
    assert {f.op for f in found} <= {"MUL", "ADD"}
    assert "out" in {name for f in found for name in f.outputs}


@pytest.mark.parametrize("which", ["uint8", "float"])
def test_tensor_grids_are_the_interpreters(exported, tmp_path, which):
    """Every tensor's (scale, zero point) as the interpreter reads the
    file: the trained uint8 file, and a float one ((0.0, 0) throughout)."""
    path = exported["written"].path if which == "uint8" else \
        _float_model(str(tmp_path))
    interpreter = tf.lite.Interpreter(model_path=path)
    interpreter.allocate_tensors()
    want = {d["name"]: (float(d["quantization"][0]),
                        int(d["quantization"][1]))
            for d in interpreter.get_tensor_details()}
    got = tflite_audit.tensor_grids(path)
    assert {k: got[k] for k in want} == pytest.approx(want)
    if which == "float":
        assert set(got.values()) == {(0.0, 0)}
    else:
        assert sum(scale > 0 for scale, _ in got.values()) > len(got) // 2
