"""Runs a ``.tflite`` file written by the exporter on float arrays: the
interpreter chosen by `tf1_awd_sparse.base.compat.interpreter_class`,
inputs quantized and outputs dequantized for 8-bit models. Every file is
checked (`tflite_file.verify`) before an interpreter reads it.
"""
import inspect
import json
import os
import re
import sys
import time

import numpy as np

from tf1_awd_sparse.base.compat import interpreter_class
from tf1_awd_sparse.export import sparse_format, sparse_storage, tflite_file
from tf1_awd_sparse.export.fused_lstm import STATE_WIDTHS
from tf1_awd_sparse.export.eval_graph import OUTPUT_NAME

__all__ = ["TFLiteRunner", "open_interpreter", "takes_num_threads",
           "is_state_input"]

#: The exporters' state inputs (`eval_graph.state_inputs`, the language
#: model's): ``state_<layer>_c`` and ``state_<layer>_h``.
_STATE_NAME = re.compile(r"^state_\d+_[ch]$")


def is_state_input(name):
    """Whether a model input named ``name`` is a recurrent state
    (``state_<layer>_c`` / ``state_<layer>_h``, as the exporters name
    them), which `TFLiteRunner.run` feeds zeros when not given; every other
    input is a data input, which it never fills in."""
    return bool(_STATE_NAME.match(name))


def open_interpreter(path, interpreter=None, num_threads=None):
    """An interpreter of the ``.tflite`` file at ``path`` (not allocated),
    the one place the library opens a file.

    The file is checked first (`tflite_file.verify`: every offset, length
    and index of its flatbuffer inside the file), on every interpreter:
    TF 1.x's and TF 2.x's ``tf.lite.Interpreter`` do not verify a file, and
    a truncated or damaged one crashed the process (a segmentation fault).

    A file that stores tensors sparse (`sparse_storage.stores_sparse`) is
    opened with TFLite's built-in kernels only
    (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``): the XNNPACK delegate, applied
    by default, computes NaN from sparse float fully-connected weights and
    refuses or miscomputes sparse int8 ones (measured with LiteRT 2.3 and
    TF 2.15 / 2.21; docs/sparse_tflite.md).

    Args:
      path: the file.
      interpreter: which interpreter class (`base.compat.interpreter_class`).
      num_threads: passed on where given and the interpreter takes it
        (`takes_num_threads`: TF 1.x's ``tf.lite.Interpreter`` does not,
        and runs as it does without it).

    Returns:
      the interpreter instance.

    Raises:
      tflite_file.TFLiteFileError (a ValueError): not a whole TFLite file
        (too short, no ``TFL3`` identifier, truncated or damaged: the
        message names the field and the bytes).
      ValueError: see `base.compat.interpreter_class`, or a file the
        interpreter cannot load (its message included).
      sparse_format.SparseStorageError: a sparse file and an interpreter
        that cannot run one (TF 1.x's ``tf.lite.Interpreter``).
      OSError: a path that cannot be read.
    """
    make = interpreter_class(interpreter)
    kwargs = {} if num_threads is None or not takes_num_threads(make) \
        else {"num_threads": num_threads}
    # sparse_tensors reads the file through tflite_file.verify (one
    # check, one read): a damaged file is refused here, before any
    # interpreter reads it.
    sparse = sparse_storage.sparse_tensors(path)
    if sparse:
        resolver = _builtin_only_resolver(make)
        if resolver is None:
            raise sparse_format.SparseStorageError(
                "%s stores %d tensors sparse (%s, ...), which this "
                "TensorFlow's TFLite interpreter cannot read: run it with "
                "TF 2.x's tf.lite or LiteRT (pip install ai-edge-litert)"
                % (path, len(sparse), sparse[0]))
        kwargs["experimental_op_resolver_type"] = resolver
    try:
        return make(model_path=path, **kwargs)
    except ValueError as error:
        raise ValueError("path %r is not a TFLite model the interpreter "
                         "can load: %s" % (path, error))


def takes_num_threads(make):
    """Whether an interpreter class takes ``num_threads`` (TF 2.x's and
    LiteRT's; not TF 1.13's or 1.15's), read from its signature (or its
    bases' where it only forwards ``**kwargs``)."""
    for klass in getattr(make, "__mro__", (make,)):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            parameters = inspect.signature(init).parameters
        except (TypeError, ValueError):
            return False
        if "num_threads" in parameters:
            return True
        if not any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
            return False
    return False


def _builtin_only_resolver(make):
    """The op resolver type without default delegates of an interpreter
    class (or of the class it derives from), or None where it has none
    (TF 1.x, whose interpreter reads no sparsity)."""
    for klass in getattr(make, "__mro__", (make,)):
        module = sys.modules.get(klass.__module__)
        resolver = getattr(module, "OpResolverType", None)
        if resolver is not None:
            return getattr(resolver, "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
                           None)
    return None


class TFLiteRunner(object):
    """Runs an exported model with a TFLite interpreter on float arrays,
    quantizing inputs and dequantizing outputs of 8-bit models.

    Args:
      path: a ``.tflite`` file: one written by
        `tf1_awd_sparse.export.tflite.export_tflite` or
        ``awd_lm.inference.export.export_lm`` (data input ``inputs``, states
        ``state_<l>_c`` / ``state_<l>_h``), or any other model (e.g. a conv
        net converted with `export.graphdef.convert` whose input is
        ``images``).
      interpreter: which interpreter runs it
        (`tf1_awd_sparse.base.compat.interpreter_class`). The
        default, None or ``"auto"``, is LiteRT's
        ``ai_edge_litert.interpreter.Interpreter`` where ``ai-edge-litert``
        is installed (TF 2.x's Pythons), else ``tf.lite.Interpreter``;
        ``"tf"`` or ``"litert"`` asks for one of them, or pass a class
        with their API.
      num_threads: None (the interpreter's default) or the threads its
        kernels and delegate may use (1 to time one thread: the default
        lets XNNPACK use more, which spends CPU time waiting).

    Raises:
      ValueError: ``path`` is not an existing file, or not a TFLite model
        the interpreter can load (its message included); an unknown or
        uninstalled ``interpreter``.
      tflite_file.TFLiteFileError (a ValueError): a truncated or damaged
        file (`open_interpreter`).

    Attributes:
      interpreter: the allocated interpreter instance.
      inputs, outputs: dict tensor name -> the interpreter's tensor
        details (``shape``, ``dtype``, ``quantization``, ``index``).
      data_inputs: the names of the inputs that are not states
        (`is_state_input`), in the model's order: what ``run``'s
        ``inputs`` feeds.
      state_inputs: the names of the state inputs, in the model's order,
        then those of the state variables.
      state_variables: dict name -> ``(tensor details, shape)`` of the
        states a file keeps in TFLite variable tensors (a fused LSTM op's,
        `export.fused_lstm`): ``run`` sets each like a state input (given,
        or zeros) and returns its ``final_...`` output, read from the
        variable where the file has no such output; ``shape`` is the
        state's, which the file's metadata gives (the variable may be
        wider: zero padding).
      last_invoke_seconds: the process's CPU time of the last ``run``'s
        ``invoke`` alone (None before the first): the file's own time,
        without the checks and conversions of the feeds and outputs.
    """

    def __init__(self, path, interpreter=None, num_threads=None):
        if not isinstance(path, str) or not os.path.isfile(path):
            raise ValueError("path must name an existing .tflite file, got "
                             "%r" % (path,))
        self.interpreter = open_interpreter(path, interpreter, num_threads)
        self.interpreter.allocate_tensors()
        details = self.interpreter.get_input_details()
        self.inputs = {d["name"]: d for d in details}
        self.outputs = {d["name"]: d
                        for d in self.interpreter.get_output_details()}
        self.data_inputs = [d["name"] for d in details
                            if not is_state_input(d["name"])]
        self.state_inputs = [d["name"] for d in details
                             if is_state_input(d["name"])]
        self.state_variables = _state_variables(
            self.interpreter, self.inputs, _state_widths(path))
        self.state_inputs += sorted(self.state_variables)
        self.last_invoke_seconds = None

    def output_quantization(self, name=None):
        """``(scale, zero_point)`` of an output (``(0.0, 0)`` if float).

        Args:
          name: the output's name; None: ``outputs`` (`export_tflite`'s
            output) where the model has it, else the model's only output.

        Raises:
          ValueError: a name that is not an output of the model, or None
            for a model with several outputs and none named ``outputs``
            (the message names them).
        """
        if name is None:
            if OUTPUT_NAME in self.outputs or len(self.outputs) != 1:
                name = OUTPUT_NAME
            else:
                name, = self.outputs
        if name not in self.outputs:
            raise ValueError("name: %r is not an output of the model; its "
                             "outputs: %s" % (name, ", ".join(
                                 sorted(self.outputs))))
        return self.outputs[name]["quantization"]

    def run(self, inputs, state=None):
        """One call of the model.

        Args:
          inputs: the model's data inputs (`data_inputs`: every input that
            is not a state): where it has one, a float array of its fixed
            shape, whatever the input's name (``inputs`` of the exporters,
            ``images``, ...); or a dict naming each data input -> array
            (required where it has several). A data input is never filled
            in.
          state: optional dict state input name (``'state_0_c'``...) ->
            float array of that input's shape; zeros for the states it
            does not name.

        Raises:
          ValueError: ``inputs`` as one array for a model with several data
            inputs (or none), a dict that misses or adds a data input, a
            ``state`` key that is not a state input of the model (each
            message names the model's inputs), or an array (named) that is
            not numeric, of another shape than the model's input or not
            finite (a NaN has no 8-bit code, and a float model would only
            return NaN); an 8-bit input without quantization parameters.

        Returns:
          dict output name -> array: float32 for float and 8-bit outputs
          (dequantized: ``(code - zero_point) * scale``), others as the
          model returns them.
        """
        feeds = self._feeds(inputs, state)
        for name, detail in self.inputs.items():
            value, arg_name = feeds[name]
            value = _input_array(value, detail["shape"], arg_name)
            self.interpreter.set_tensor(detail["index"],
                                        _quantized(value, detail, arg_name))
        for name, (detail, shape) in self.state_variables.items():
            value, arg_name = feeds[name]
            value = _input_array(value, shape, arg_name)
            padded = np.zeros(detail["shape"], np.float32)
            padded[tuple(slice(0, n) for n in shape)] = value
            self.interpreter.set_tensor(detail["index"], padded)
        start = time.process_time()
        self.interpreter.invoke()
        self.last_invoke_seconds = time.process_time() - start
        results = {name: _dequantized(self.interpreter.get_tensor(
            detail["index"]), detail)
            for name, detail in self.outputs.items()}
        for name, (detail, shape) in self.state_variables.items():
            final = "final" + name[len("state"):]
            if final not in results:   # read back from the variable
                value = self.interpreter.get_tensor(detail["index"])
                results[final] = value[tuple(slice(0, n) for n in shape)]
        return results

    def _feeds(self, inputs, state):
        """{input name: (value, argument name for errors)} of every input:
        the data inputs from ``inputs``, the states from ``state`` or
        zeros."""
        if not isinstance(state, (dict, type(None))):
            raise ValueError("state must be a dict input name -> array, got "
                             "%r" % (state,))
        state = state or {}
        unknown = sorted(set(state) - set(self.state_inputs))
        if unknown:
            raise ValueError(
                "state: %s not among the model's state inputs [%s] (its "
                "data inputs [%s] go in inputs)" % (
                    ", ".join(map(repr, unknown)),
                    ", ".join(self.state_inputs),
                    ", ".join(self.data_inputs)))
        if isinstance(inputs, dict):
            names = set(self.data_inputs)
            if set(inputs) != names:
                raise ValueError(
                    "inputs must name each data input of the model [%s] "
                    "(states go in state), got %s" % (
                        ", ".join(self.data_inputs),
                        sorted(inputs, key=str)))
            feeds = {name: (inputs[name], "inputs[%r]" % (name,))
                     for name in self.data_inputs}
        elif len(self.data_inputs) == 1:
            name, = self.data_inputs
            feeds = {name: (inputs, "inputs (the model's input %r)"
                            % (name,))}
        else:
            raise ValueError(
                "inputs: the model has %d data inputs [%s], not one: pass a "
                "dict input name -> array (its states: [%s])" % (
                    len(self.data_inputs), ", ".join(self.data_inputs),
                    ", ".join(self.state_inputs)))
        for name in self.state_inputs:
            if name in state:
                feeds[name] = (state[name], "state[%r]" % (name,))
            else:
                feeds[name] = (np.zeros(self.inputs[name]["shape"]
                                        if name in self.inputs else
                                        self.state_variables[name][1]),
                               "state[%r]" % (name,))
        return feeds


def _state_widths(path):
    """{state: width} of a fused file's metadata (`fused_lstm.STATE_WIDTHS`:
    each state variable's width without the padding to whole blocks), or
    {} for another file."""
    with open(path, "rb") as handle:
        found = tflite_file.metadata(handle.read()).get(STATE_WIDTHS)
    return json.loads(found.decode("utf-8")) if found else {}


def _state_variables(interpreter, inputs, widths):
    """{name: (details, shape)} of the tensors named as states
    (`is_state_input`) that are no model input: a fused LSTM op's variable
    state tensors; ``shape`` is the tensor's, its last dimension cut to
    the width ``widths`` gives it."""
    found = {}
    for detail in interpreter.get_tensor_details():
        name = detail["name"]
        if is_state_input(name) and name not in inputs:
            shape = [int(n) for n in detail["shape"]]
            shape[-1] = int(widths.get(name, shape[-1]))
            found[name] = (detail, tuple(shape))
    return found


def _quantized(value, detail, arg_name):
    """A float array as the input's type: the codes of an 8-bit input
    (``round(value / scale + zero_point)``, clipped to the type's range),
    else a plain cast (float32, the int32 ids of a language model)."""
    dtype = np.dtype(detail["dtype"])
    if dtype not in (np.uint8, np.int8):
        return value.astype(dtype)
    scale, zero_point = detail["quantization"]
    if not scale:
        raise ValueError("%s: the model's %s input has no quantization "
                         "parameters (scale 0), so floats have no codes"
                         % (arg_name, dtype.name))
    limits = np.iinfo(dtype)
    return np.clip(np.round(value / scale + zero_point), limits.min,
                   limits.max).astype(dtype)


def _dequantized(value, detail):
    """An output as floats: ``(code - zero_point) * scale`` for an 8-bit
    output with quantization parameters; other outputs (and an 8-bit one
    without: its codes are its values) as they are."""
    dtype = np.dtype(detail["dtype"])
    scale, zero_point = detail["quantization"]
    if dtype in (np.uint8, np.int8) and scale:
        return (value.astype(np.float32) - zero_point) * scale
    return value


def _input_array(value, shape, arg_name):
    """``value`` as a float32 array of the model input's ``shape``.

    Raises:
      ValueError: not numeric, another shape, or not finite.
    """
    try:
        array = np.asarray(value, np.float32)
    except (TypeError, ValueError):
        raise ValueError("%s must be a float array, got %r"
                         % (arg_name, value))
    # Python ints: the interpreter's shapes are int32 arrays, whose list()
    # numpy 2 prints as [np.int32(2), ...].
    shape = np.asarray(shape).tolist()
    if list(array.shape) != shape:
        raise ValueError("%s must have the model's shape %s, got %s"
                         % (arg_name, shape, list(array.shape)))
    if not np.all(np.isfinite(array)):
        raise ValueError("%s must be finite, got NaN or inf" % (arg_name,))
    return array
