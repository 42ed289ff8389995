"""TFLite's flatbuffer schema (``schema.fbs``) as this library knows it,
in one place: the file identifier and the tables a file holds (`TABLES`,
`UNIONS`: what `tflite_file` reads and verifies), the builtin operator
codes (`Op`) and tensor types (`TensorType`), the inputs of the builtin
``LSTM`` op (`LSTMInput`), the operator-code rule (`builtin_code`,
`operator_code`, `opcode_index`) and the weight format of TFLite's hybrid kernels
(`symmetric_int8`). Every writer and reader of ``export/`` takes them
from here.

The codes are the schema's numbering, which TFLite only appends to; they
are written here, not read from TF 2.x's generated module
(``tensorflow.lite.python.schema_py_generated``), because the readers run
on TF 1.13 and 1.15 too, which have no schema module, and this module,
like `tflite_file`, imports neither TensorFlow nor ``flatbuffers``.
``tests/export/test_tflite_schema.py`` checks each against the generated
module's ``BuiltinOperator`` / ``TensorType`` and against the names TF's
interpreter gives the operators of a written file.
"""
import enum

import numpy as np

__all__ = ["IDENTIFIER", "SCHEMA_VERSION", "TABLES", "UNIONS", "Op",
           "operator_name", "TensorType", "type_name", "LSTMInput",
           "GATE_INPUT_WEIGHTS", "GATE_RECURRENT_WEIGHTS", "GATE_BIASES",
           "PEEPHOLES", "builtin_code", "operator_code", "opcode_index",
           "symmetric_int8"]

#: The version of the schema a written model declares (``Model.version``).
SCHEMA_VERSION = 3

#: The file identifier of ``schema.fbs`` (bytes 4 to 8 of every file).
IDENTIFIER = b"TFL3"

#: The tables of TFLite's ``schema.fbs`` that a file holds, each field
#: ``name:type`` in slot order: a scalar type, ``string``, a table of this
#: registry, a union of :data:`UNIONS` (right after its ``_type`` byte) or
#: ``[type]``, a vector of one of them. Options tables without a vector are
#: not listed: a union member not listed here is checked as a table whose
#: fields all lie inside it.
TABLES = {
    "Model": ("version:uint", "operator_codes:[OperatorCode]",
              "subgraphs:[SubGraph]", "description:string",
              "buffers:[Buffer]", "metadata_buffer:[int]",
              "metadata:[Metadata]", "signature_defs:[SignatureDef]",
              "external_buffer_groups:[ExternalBufferGroup]",
              "external_buffers:[ExternalBuffer]"),
    "OperatorCode": ("deprecated_builtin_code:byte", "custom_code:string",
                     "version:int", "builtin_code:int"),
    "SubGraph": ("tensors:[Tensor]", "inputs:[int]", "outputs:[int]",
                 "operators:[Operator]", "name:string",
                 "debug_metadata_index:int"),
    "Tensor": ("shape:[int]", "type:byte", "buffer:uint", "name:string",
               "quantization:QuantizationParameters", "is_variable:bool",
               "sparsity:SparsityParameters", "shape_signature:[int]",
               "has_rank:bool", "variant_tensors:[VariantSubType]",
               "external_buffer:uint"),
    "VariantSubType": ("shape:[int]", "type:byte", "has_rank:bool"),
    "QuantizationParameters": ("min:[float]", "max:[float]",
                               "scale:[float]", "zero_point:[long]",
                               "details_type:ubyte",
                               "details:QuantizationDetails",
                               "quantized_dimension:int"),
    "CustomQuantization": ("custom:[ubyte]",),
    "BlockwiseQuantization": ("scales:int", "zero_points:int",
                              "block_size:int"),
    "SparsityParameters": ("traversal_order:[int]", "block_map:[int]",
                           "dim_metadata:[DimensionMetadata]"),
    "DimensionMetadata": ("format:byte", "dense_size:int",
                          "array_segments_type:ubyte",
                          "array_segments:SparseIndexVector",
                          "array_indices_type:ubyte",
                          "array_indices:SparseIndexVector"),
    "Int32Vector": ("values:[int]",),
    "Uint16Vector": ("values:[ushort]",),
    "Uint8Vector": ("values:[ubyte]",),
    "Operator": ("opcode_index:uint", "inputs:[int]", "outputs:[int]",
                 "builtin_options_type:ubyte",
                 "builtin_options:BuiltinOptions", "custom_options:[ubyte]",
                 "custom_options_format:byte",
                 "mutating_variable_inputs:[bool]", "intermediates:[int]",
                 "large_custom_options_offset:ulong",
                 "large_custom_options_size:ulong",
                 "builtin_options_2_type:ubyte",
                 "builtin_options_2:BuiltinOptions2",
                 "debug_metadata_index:int"),
    "Buffer": ("data:[ubyte]", "offset:ulong", "size:ulong"),
    "Metadata": ("name:string", "buffer:uint"),
    "TensorMap": ("name:string", "tensor_index:uint"),
    "SignatureDef": ("inputs:[TensorMap]", "outputs:[TensorMap]",
                     "signature_key:string", "deprecated_tag:string",
                     "subgraph_index:uint"),
    "ExternalBufferGroup": ("name:string",),
    "ExternalBuffer": ("id:uint", "group:uint", "offset:ulong",
                       "length:ulong", "packing:string"),
    # The builtin options that hold a vector.
    "ConcatEmbeddingsOptions": ("num_channels:int",
                                "num_columns_per_channel:[int]",
                                "embedding_dim_per_channel:[int]"),
    "ReshapeOptions": ("new_shape:[int]",),
    "SqueezeOptions": ("squeeze_dims:[int]",),
    "BucketizeOptions": ("boundaries:[float]",),
}

#: Union -> {type code: member table of :data:`TABLES`}; codes not listed
#: (the options without a vector, ``BuiltinOptions2``'s StableHLO options)
#: are checked as tables of unknown fields.
UNIONS = {
    "BuiltinOptions": {3: "ConcatEmbeddingsOptions", 17: "ReshapeOptions",
                       30: "SqueezeOptions", 115: "BucketizeOptions"},
    "BuiltinOptions2": {},
    "QuantizationDetails": {1: "CustomQuantization",
                            2: "BlockwiseQuantization"},
    "SparseIndexVector": {1: "Int32Vector", 2: "Uint16Vector",
                          3: "Uint8Vector"},
}


#: The builtin operators this library writes or names (``BuiltinOperator``
#: of ``schema.fbs``): ``Op.LSTM == 16``, ``Op(16).name == "LSTM"``.
Op = enum.IntEnum("Op", [
    ("ADD", 0), ("CONCATENATION", 2), ("CONV_2D", 3),
    ("DEPTHWISE_CONV_2D", 4), ("DEQUANTIZE", 6), ("EMBEDDING_LOOKUP", 7),
    ("FULLY_CONNECTED", 9), ("LOGISTIC", 14), ("LSTM", 16),
    ("MAX_POOL_2D", 17), ("MUL", 18), ("RELU", 19), ("RELU6", 21),
    ("RESHAPE", 22), ("SOFTMAX", 25), ("TANH", 28), ("CUSTOM", 32),
    ("PAD", 34), ("GATHER", 36), ("TRANSPOSE", 39), ("SUB", 41),
    ("SQUEEZE", 43), ("UNIDIRECTIONAL_SEQUENCE_LSTM", 44),
    ("STRIDED_SLICE", 45), ("SPLIT", 49), ("SLICE", 65),
    ("EXPAND_DIMS", 70), ("FAKE_QUANT", 80), ("PACK", 83), ("UNPACK", 88),
    ("SPLIT_V", 102), ("QUANTIZE", 114), ("DENSIFY", 124)],
    module=__name__)


def operator_name(code):
    """The schema's name of builtin operator ``code`` (an int), e.g.
    ``"FULLY_CONNECTED"``; ``"BUILTIN_<code>"`` for an operator `Op` does
    not list."""
    try:
        return Op(code).name
    except ValueError:
        return "BUILTIN_%d" % code


#: The tensor types of ``schema.fbs`` (``TensorType``) a file of this
#: library's holds or reports: ``TensorType.INT8 == 9``.
TensorType = enum.IntEnum("TensorType", [
    ("FLOAT32", 0), ("FLOAT16", 1), ("INT32", 2), ("UINT8", 3),
    ("INT64", 4), ("STRING", 5), ("BOOL", 6), ("INT16", 7), ("INT8", 9),
    ("FLOAT64", 10)], module=__name__)


def type_name(tensor_type):
    """The lower-case name of a tensor type (``"float32"``, ``"int8"``),
    ``"type <N>"`` for one `TensorType` does not list."""
    try:
        return TensorType(tensor_type).name.lower()
    except ValueError:
        return "type %d" % tensor_type


#: The 24 inputs of the builtin ``LSTM`` op by position (TFLite's
#: ``lstm.cc``; ``UNIDIRECTIONAL_SEQUENCE_LSTM`` takes the same): the
#: gates in the op's order input, forget, cell, output; an absent optional
#: input is -1. ``OUTPUT_STATE`` and ``CELL_STATE`` are variable tensors
#: the op reads and writes in place.
LSTMInput = enum.IntEnum("LSTMInput", [
    ("INPUT", 0),
    ("INPUT_TO_INPUT_WEIGHTS", 1), ("INPUT_TO_FORGET_WEIGHTS", 2),
    ("INPUT_TO_CELL_WEIGHTS", 3), ("INPUT_TO_OUTPUT_WEIGHTS", 4),
    ("RECURRENT_TO_INPUT_WEIGHTS", 5), ("RECURRENT_TO_FORGET_WEIGHTS", 6),
    ("RECURRENT_TO_CELL_WEIGHTS", 7), ("RECURRENT_TO_OUTPUT_WEIGHTS", 8),
    ("CELL_TO_INPUT_WEIGHTS", 9), ("CELL_TO_FORGET_WEIGHTS", 10),
    ("CELL_TO_OUTPUT_WEIGHTS", 11),
    ("INPUT_GATE_BIAS", 12), ("FORGET_GATE_BIAS", 13),
    ("CELL_GATE_BIAS", 14), ("OUTPUT_GATE_BIAS", 15),
    ("PROJECTION_WEIGHTS", 16), ("PROJECTION_BIAS", 17),
    ("OUTPUT_STATE", 18), ("CELL_STATE", 19),
    ("INPUT_LAYER_NORM_COEFFICIENTS", 20),
    ("FORGET_LAYER_NORM_COEFFICIENTS", 21),
    ("CELL_LAYER_NORM_COEFFICIENTS", 22),
    ("OUTPUT_LAYER_NORM_COEFFICIENTS", 23)], module=__name__)

#: Per gate, in the op's order (input, forget, cell, output): the slot of
#: its input weights, of its recurrent weights and of its bias.
GATE_INPUT_WEIGHTS = tuple(LSTMInput(i) for i in range(1, 5))
GATE_RECURRENT_WEIGHTS = tuple(LSTMInput(i) for i in range(5, 9))
GATE_BIASES = tuple(LSTMInput(i) for i in range(12, 16))
#: The peephole slots (``LSTMCell``'s ``w_i_diag, w_f_diag, w_o_diag``).
PEEPHOLES = (LSTMInput.CELL_TO_INPUT_WEIGHTS,
             LSTMInput.CELL_TO_FORGET_WEIGHTS,
             LSTMInput.CELL_TO_OUTPUT_WEIGHTS)


def builtin_code(deprecated, builtin):
    """The builtin operator an ``OperatorCode`` names, from its two fields
    (``deprecated_builtin_code``, ``builtin_code``): the larger. Files of
    old converters set only the first (a byte), newer ones both, and codes
    over 127 only the second (the first then holds 127)."""
    return max(deprecated, builtin)


def operator_code(model, operator):
    """The builtin code of ``operator`` (an ``OperatorT`` of ``model``, a
    ``ModelT`` of the generated schema module), by `builtin_code`."""
    code = model.operatorCodes[operator.opcodeIndex]
    return builtin_code(code.deprecatedBuiltinCode, code.builtinCode)


def opcode_index(schema, model, builtin):
    """The index of ``builtin``'s operator code in ``model`` (a ``ModelT``
    of the generated ``schema`` module), appended (version 1) if the model
    has none yet. Returns an int."""
    builtin = int(builtin)
    for index, code in enumerate(model.operatorCodes):
        if builtin_code(code.deprecatedBuiltinCode,
                        code.builtinCode) == builtin:
            return index
    code = schema.OperatorCodeT()
    code.builtinCode = builtin
    code.deprecatedBuiltinCode = min(builtin, 127)
    code.version = 1
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def symmetric_int8(values):
    """Symmetric per-tensor int8 of float ``values`` (any shape; computed
    in their own float dtype): ``(codes, scale)``, ``codes`` int8 in
    [-127, 127] = ``round(values / scale)``, ``scale = max|values| / 127``
    (1.0 where all are 0 or there are none), zero point 0. The weight
    format of TFLite's hybrid kernels; ``codes * scale`` is within
    ``scale / 2`` of each value."""
    values = np.asarray(values)
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    return (np.clip(np.round(values / scale), -127, 127).astype(np.int8),
            scale)
