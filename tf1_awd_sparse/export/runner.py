"""Runs a ``.tflite`` file written by the exporter on float arrays: the
interpreter chosen by `tf1_awd_sparse.base.compat.interpreter_class`,
inputs quantized and outputs dequantized for uint8 models. Every file is
checked (`tflite_file.verify`) before an interpreter reads it.
"""
import os
import sys

import numpy as np

from tf1_awd_sparse.base.compat import interpreter_class
from tf1_awd_sparse.export import sparse_storage
from tf1_awd_sparse.export.eval_graph import INPUT_NAME, OUTPUT_NAME

__all__ = ["TFLiteRunner", "open_interpreter"]


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
      num_threads: passed on where given.

    Returns:
      the interpreter instance.

    Raises:
      tflite_file.TFLiteFileError (a ValueError): not a whole TFLite file
        (too short, no ``TFL3`` identifier, truncated or damaged: the
        message names the field and the bytes).
      ValueError: see `base.compat.interpreter_class`, or a file the
        interpreter cannot load (its message included).
      sparse_storage.SparseStorageError: a sparse file and an interpreter
        that cannot run one (TF 1.x's ``tf.lite.Interpreter``).
      OSError: a path that cannot be read.
    """
    make = interpreter_class(interpreter)
    kwargs = {} if num_threads is None else {"num_threads": num_threads}
    # sparse_tensors reads the file through tflite_file.verify (one
    # check, one read): a damaged file is refused here, before any
    # interpreter reads it.
    sparse = sparse_storage.sparse_tensors(path)
    if sparse:
        resolver = _builtin_only_resolver(make)
        if resolver is None:
            raise sparse_storage.SparseStorageError(
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
    quantizing inputs and dequantizing outputs for uint8 models.

    Args:
      path: a ``.tflite`` file written by
        `tf1_awd_sparse.export.tflite.export_tflite` (or another model with
        an ``inputs`` input, such as ``awd_lm.export.export_lm``'s).
      interpreter: which interpreter runs it
        (`tf1_awd_sparse.base.compat.interpreter_class`). The
        default, None or ``"auto"``, is LiteRT's
        ``ai_edge_litert.interpreter.Interpreter`` where ``ai-edge-litert``
        is installed (TF 2.x's Pythons), else ``tf.lite.Interpreter``;
        ``"tf"`` or ``"litert"`` asks for one of them, or pass a class
        with their API.

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
    """

    def __init__(self, path, interpreter=None):
        if not isinstance(path, str) or not os.path.isfile(path):
            raise ValueError("path must name an existing .tflite file, got "
                             "%r" % (path,))
        self.interpreter = open_interpreter(path, interpreter)
        self.interpreter.allocate_tensors()
        self.inputs = {d["name"]: d
                       for d in self.interpreter.get_input_details()}
        self.outputs = {d["name"]: d
                        for d in self.interpreter.get_output_details()}

    def output_quantization(self, name=OUTPUT_NAME):
        """``(scale, zero_point)`` of an output (``(0.0, 0)`` if float)."""
        return self.outputs[name]["quantization"]

    def run(self, inputs, state=None):
        """One call of the model.

        Args:
          inputs: ``[batch, steps, depth]`` float array, the model's fixed
            shape, finite values.
          state: optional dict input name (``'state_0_c'``...) -> float
            array of that input's shape; zeros for missing entries.

        Raises:
          ValueError: a ``state`` key that is not an input of the model,
            or an array (named) that is not numeric, of another shape than
            the model's input or not finite (a NaN has no uint8 code, and a
            float model would only return NaN).

        Returns:
          dict output name -> float array.
        """
        if not isinstance(state, (dict, type(None))):
            raise ValueError("state must be a dict input name -> array, got "
                             "%r" % (state,))
        state = dict(state or {})
        unknown = sorted(set(state) - set(self.inputs))
        if unknown:
            raise ValueError("state: %s not among the model's inputs %s"
                             % (", ".join(map(repr, unknown)),
                                sorted(self.inputs)))
        if INPUT_NAME in state:
            raise ValueError("state: %r is the inputs argument, not a state"
                             % (INPUT_NAME,))
        state[INPUT_NAME] = inputs
        for name, detail in self.inputs.items():
            value = _input_array(
                state.get(name, np.zeros(detail["shape"])), detail["shape"],
                "inputs" if name == INPUT_NAME else "state[%r]" % (name,))
            if detail["dtype"] == np.uint8:
                scale, zero_point = detail["quantization"]
                value = np.clip(np.round(value / scale + zero_point), 0, 255)
            self.interpreter.set_tensor(detail["index"],
                                        value.astype(detail["dtype"]))
        self.interpreter.invoke()
        result = {}
        for name, detail in self.outputs.items():
            value = self.interpreter.get_tensor(detail["index"])
            if detail["dtype"] == np.uint8:
                scale, zero_point = detail["quantization"]
                value = (value.astype(np.float32) - zero_point) * scale
            result[name] = value
        return result


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
