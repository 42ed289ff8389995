"""`export.tflite_schema`, the one description of TFLite's schema that the
writers and readers of ``export/`` share, against references it does not
write itself: TF 2.x's generated schema module (the operator codes, tensor
types and table slots), its ``schema_util`` (the operator-code rule), the
names TF's interpreter gives the operators of a file, a fused LSTM that
TF's own converter writes from a Keras LSTM of known weights (the LSTM
input slots), and numpy / TF's SCALED quantization (the int8 weights)."""
import inspect
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.versions import IS_TF2
from tf1_awd_sparse.export import (fused_lstm, sparse_format, tflite_file,
                                   tflite_schema)
from tf1_awd_sparse.export.tflite_schema import (
    GATE_BIASES, GATE_INPUT_WEIGHTS, GATE_RECURRENT_WEIGHTS, PEEPHOLES,
    LSTMInput, Op, TensorType)

needs_schema = pytest.mark.skipif(
    not IS_TF2, reason="TF 1.x has no generated schema module (and its "
    "interpreter no _get_ops_details)")


def _generated():
    return sparse_format.schema_modules()[0]


@needs_schema
def test_the_codes_and_types_are_the_generated_schemas():
    schema = _generated()
    for op in Op:
        assert getattr(schema.BuiltinOperator, op.name) == op, op
    for kind in TensorType:
        assert getattr(schema.TensorType, kind.name) == kind, kind


def test_names_of_codes_and_types():
    assert tflite_schema.operator_name(9) == "FULLY_CONNECTED"
    assert tflite_schema.operator_name(Op.DENSIFY) == "DENSIFY"
    assert tflite_schema.operator_name(1) == "BUILTIN_1"   # not listed
    assert tflite_schema.type_name(9) == "int8"
    assert tflite_schema.type_name(TensorType.FLOAT32) == "float32"
    assert tflite_schema.type_name(8) == "type 8"


def _camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


@needs_schema
def test_the_tables_slots_are_the_generated_schemas():
    """Each field of `TABLES` is in the slot where the generated module's
    ``<Table>Add<Field>`` writes it (fields newer than this TensorFlow's
    schema are skipped; every table has at least one field here)."""
    schema = _generated()
    checked = 0
    for table, fields in tflite_schema.TABLES.items():
        for slot, spec in enumerate(fields):
            adder = getattr(schema, "%sAdd%s" % (
                table, _camel(spec.split(":")[0])), None)
            if adder is None:
                continue
            found = re.search(r"Slot\((\d+),", inspect.getsource(adder))
            assert found and int(found.group(1)) == slot, (table, spec)
            checked += 1
    assert checked >= 60


@needs_schema
def test_the_union_codes_are_the_generated_schemas():
    """(Members newer than this TensorFlow's schema are skipped.)"""
    schema = _generated()
    checked = 0
    for union, members in tflite_schema.UNIONS.items():
        for code, member in members.items():
            found = getattr(getattr(schema, union, None), member, None)
            if found is not None:
                assert found == code, (union, member)
                checked += 1
    assert checked >= 8


@needs_schema
def test_opcode_index_registers_a_code_once_as_schema_util_reads_it():
    from tensorflow.lite.python import schema_util
    schema = _generated()
    model = schema.ModelT()
    model.operatorCodes = []
    wide = max(v for k, v in vars(schema.BuiltinOperator).items()
               if not k.startswith("_"))
    assert wide > 127   # a code only the extended field holds
    for builtin in (Op.LSTM, Op.DENSIFY, wide):
        index = tflite_schema.opcode_index(schema, model, builtin)
        assert tflite_schema.opcode_index(schema, model, builtin) == index
        code = model.operatorCodes[index]
        assert schema_util.get_builtin_code_from_operator_code(code) == \
            builtin
        assert tflite_schema.builtin_code(code.deprecatedBuiltinCode,
                                          code.builtinCode) == builtin
    assert len(model.operatorCodes) == 3
    # An old converter's code: only the deprecated byte set.
    old = schema.OperatorCodeT()
    old.deprecatedBuiltinCode, old.builtinCode = Op.GATHER, 0
    model.operatorCodes.append(old)
    assert tflite_schema.opcode_index(schema, model, Op.GATHER) == 3
    assert schema_util.get_builtin_code_from_operator_code(old) == Op.GATHER


def _interpreter_op_names(data):
    interpreter = tf.lite.Interpreter(model_content=data)
    return [op["op_name"] for op in interpreter._get_ops_details()]


def _file_op_names(data):
    """The operators' names as `tflite_schema` reads them (the standard
    library reader, which TF 1.x uses too)."""
    buf = tflite_file.verify(data)
    model = tflite_file.root(buf)
    codes = [tflite_schema.builtin_code(
        tflite_file.scalar(buf, c, "OperatorCode", "deprecated_builtin_code"),
        tflite_file.scalar(buf, c, "OperatorCode", "builtin_code"))
        for c in tflite_file.tables(buf, model, "Model", "operator_codes")]
    graph = tflite_file.tables(buf, model, "Model", "subgraphs")[0]
    return [tflite_schema.operator_name(codes[tflite_file.scalar(
        buf, op, "Operator", "opcode_index")])
        for op in tflite_file.tables(buf, graph, "SubGraph", "operators")]


def _tiny_lm(seed=0):
    rng = np.random.RandomState(seed)
    table = rng.randn(12, 16).astype(np.float32)
    kernel = (rng.randn(32, 64) * (rng.rand(32, 64) > 0.5)).astype(
        np.float32)
    layer = fused_lstm.LSTMLayer(kernel, rng.randn(64).astype(np.float32),
                                 1.0)
    low_rank = (rng.randn(12, 2).astype(np.float32),
                rng.randn(16, 2).astype(np.float32))
    return table, [layer], low_rank


@needs_schema
@pytest.mark.parametrize("weights", list(fused_lstm.FORMATS))
def test_the_codes_a_writer_uses_are_the_interpreters_op_names(weights):
    table, layers, low_rank = _tiny_lm()
    data = fused_lstm.fused_lm(table, layers, None, weights,
                               low_rank=low_rank)
    names = _file_op_names(data)
    assert names == _interpreter_op_names(data)
    assert "LSTM" in names and "FULLY_CONNECTED" in names
    assert ("DENSIFY" in names) == (weights == "int8-sparse")


#: Writes a Keras LSTM of given weights converted by TF's converter (one
#: fused UNIDIRECTIONAL_SEQUENCE_LSTM op), in a process of its own: the
#: converter of Keras models needs TF 2.x behaviour, which the tests
#: disable.
_CONVERT = """
import sys
import numpy as np
import tensorflow as tf
path, inputs, units, steps = sys.argv[1], *map(int, sys.argv[2:])
weights = dict(np.load(path + ".npz"))
layer = tf.keras.layers.LSTM(units, return_sequences=True)
model = tf.keras.Sequential([tf.keras.Input((steps, inputs), batch_size=1),
                             layer])
layer.set_weights([weights["kernel"], weights["recurrent"],
                   weights["bias"]])
with open(path, "wb") as handle:
    handle.write(tf.lite.TFLiteConverter.from_keras_model(model).convert())
"""


def _keras_lstm_file(folder, kernel, recurrent, bias, steps=3):
    """The bytes `_CONVERT` writes for these weights."""
    path = str(folder / "keras_lstm.tflite")
    np.savez(path + ".npz", kernel=kernel, recurrent=recurrent, bias=bias)
    inputs, units = kernel.shape[0], recurrent.shape[0]
    proc = subprocess.run(
        [sys.executable, "-c", _CONVERT, path, str(inputs), str(units),
         str(steps)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(path, "rb") as handle:
        return handle.read()


@needs_schema
def test_the_lstm_slots_are_where_tfs_converter_puts_each_input(tmp_path):
    """The reference: TF's converter places the weights of a Keras LSTM
    (gates i, f, c, o in its kernel's columns, the op's order) in the
    fused op's inputs; each slot of `LSTMInput` holds the matrix or vector
    its name says, the state slots variable tensors, the unused ones
    absent."""
    inputs, units = 3, 4
    rng = np.random.RandomState(0)
    kernel = rng.randn(inputs, 4 * units).astype(np.float32)
    recurrent = rng.randn(units, 4 * units).astype(np.float32)
    bias = rng.randn(4 * units).astype(np.float32)
    data = _keras_lstm_file(tmp_path, kernel, recurrent, bias)
    schema = _generated()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    graph = model.subgraphs[0]
    fused = [op for op in graph.operators if model.operatorCodes[
        op.opcodeIndex].builtinCode == Op.UNIDIRECTIONAL_SEQUENCE_LSTM]
    assert len(fused) == 1
    slots = list(fused[0].inputs)
    assert len(slots) == len(LSTMInput) == 24

    def value(slot):
        tensor = graph.tensors[slots[slot]]
        return np.frombuffer(bytes(bytearray(
            model.buffers[tensor.buffer].data)), np.float32).reshape(
                tensor.shape)
    for gate in range(4):
        columns = slice(gate * units, (gate + 1) * units)
        np.testing.assert_array_equal(value(GATE_INPUT_WEIGHTS[gate]),
                                      kernel[:, columns].T)
        np.testing.assert_array_equal(value(GATE_RECURRENT_WEIGHTS[gate]),
                                      recurrent[:, columns].T)
        np.testing.assert_array_equal(value(GATE_BIASES[gate]),
                                      bias[columns])
    for state in (LSTMInput.OUTPUT_STATE, LSTMInput.CELL_STATE):
        assert graph.tensors[slots[state]].isVariable
    absent = set(PEEPHOLES) | {LSTMInput.PROJECTION_WEIGHTS,
                               LSTMInput.PROJECTION_BIAS} | set(
        LSTMInput(i) for i in range(20, 24))
    assert [slots[s] for s in sorted(absent)] == [-1] * len(absent)
    assert graph.tensors[slots[LSTMInput.INPUT]].shape[-1] == inputs


def _reference_int8(values):
    """numpy in float64: codes round(v / s), s = max|v| / 127."""
    values = np.asarray(values, np.float64)
    peak = np.abs(values).max() if values.size else 0.0
    scale = peak / 127 if peak else 1.0
    return np.rint(values / scale), scale


@pytest.mark.parametrize("shape", [(5, 7), (1, 300), (0, 3)])
def test_symmetric_int8_against_numpy(shape):
    values = np.random.RandomState(1).randn(*shape).astype(np.float32)
    values[values > 1.5] = 0.0
    codes, scale = tflite_schema.symmetric_int8(values)
    want, want_scale = _reference_int8(values)
    assert codes.dtype == np.int8 and codes.shape == values.shape
    assert scale == pytest.approx(want_scale, rel=1e-6)
    np.testing.assert_array_equal(codes, want)
    if values.size:
        assert np.abs(codes).max() == 127
        assert np.all(np.abs(codes * scale - values) <= scale / 2 * 1.0001)
        assert np.all(codes[values == 0] == 0)


def test_symmetric_int8_of_zeros_is_zero_on_scale_one():
    codes, scale = tflite_schema.symmetric_int8(np.zeros([2, 3]))
    assert scale == 1.0 and not np.any(codes)


@needs_schema
def test_symmetric_int8_is_tfs_scaled_narrow_range_quantization():
    values = np.random.RandomState(2).randn(6, 40).astype(np.float32)
    codes, _ = tflite_schema.symmetric_int8(values)
    peak = float(np.abs(values).max())
    quantized = tf.quantization.quantize(
        values, -peak, peak, tf.qint8, mode="SCALED",
        round_mode="HALF_TO_EVEN", narrow_range=True)
    with tf.Session() as session:
        out = session.run(quantized.output)
    np.testing.assert_array_equal(codes, np.asarray(out, np.int8))
