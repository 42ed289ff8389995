"""The TensorFlow version under test, for the tests of features that only
some versions have (each skip says which and why: docs/versions.md)."""
import pytest
import tensorflow as _tf

from tf1_awd_sparse.base import compat as _compat

IS_TF2 = _compat.IS_TF2

#: ``tf.contrib`` on TensorFlow 1.x; None on 2.x, which removed it.
contrib = None if IS_TF2 else _tf.contrib

#: The class of every variable, ref and resource alike: the top-level
#: ``tensorflow.Variable``. (``tf.compat.v1.Variable`` is the ref variables'
#: class on 2.x; a ResourceVariable is not an instance of it there.)
ANY_VARIABLE = _tf.Variable

needs_contrib = pytest.mark.skipif(
    IS_TF2, reason="tf.contrib (quantize, model_pruning) exists only on "
                   "TensorFlow 1.x; on 2.x the library's own fake quant and "
                   "pruning replace it (docs/versions.md)")


def _xla_compile():
    """``xla.compile`` of the version: the public way into an XLA
    compilation context (where TensorFlow drops run-time assertions).
    ``tf.xla.experimental.compile`` from 1.15 on (2.15 and 2.21 keep it, for
    graph mode); on 1.13 only ``tf.contrib.compiler.xla.compile``."""
    experimental = getattr(getattr(_tf, "xla", None), "experimental", None)
    compile_fn = getattr(experimental, "compile", None)
    if compile_fn is None and contrib is not None:
        from tensorflow.contrib.compiler import xla  # pylint: disable=C0415
        compile_fn = xla.compile
    return compile_fn


#: ``xla.compile(computation)`` of the TensorFlow under test, or None.
xla_compile = _xla_compile()

needs_xla_compile = pytest.mark.skipif(
    xla_compile is None,
    reason="this TensorFlow has neither tf.xla.experimental.compile nor "
           "tf.contrib.compiler.xla.compile")

needs_estimator = pytest.mark.skipif(
    not _compat.estimator_available(),
    reason="tf.estimator was removed in TensorFlow 2.16")


def _has_litert():
    try:
        import ai_edge_litert.interpreter  # noqa: F401
    except ImportError:
        return False
    return True


#: LiteRT (``pip install ai-edge-litert``): the standalone TFLite runtime,
#: for CPython 3.9+ (the TF 2.x environments); not in the TF 1.x ones.
needs_litert = pytest.mark.skipif(
    not _has_litert(), reason="ai_edge_litert (LiteRT) is not installed: "
                              "it exists for the TF 2.x environments' "
                              "CPython only (pip install ai-edge-litert)")


def builtin_only(interpreter):
    """The interpreter class (`base.compat.interpreter_class` of
    ``interpreter``) that opens every file with TFLite's own kernels, no
    XNNPACK: so that a sparse file and its dense reference run the same
    kernels' arithmetic."""
    from tf1_awd_sparse.base.compat import interpreter_class
    base = interpreter_class(interpreter)
    module = __import__(base.__module__, fromlist=["OpResolverType"])

    class BuiltinOnly(base):
        def __init__(self, model_path=None, **kwargs):
            kwargs["experimental_op_resolver_type"] = \
                module.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
            super(BuiltinOnly, self).__init__(model_path=model_path,
                                              **kwargs)
    return BuiltinOnly


#: Skips a test that writes a TFLite file op by op: the flatbuffer schema
#: module (``schema_py_generated``) and the sparse and fused-LSTM files are
#: TF 2.x's.
needs_schema = pytest.mark.skipif(
    not IS_TF2, reason="TFLite files written op by op need TF 2.x's schema "
    "module (TF 1.x's interpreter cannot read them either)")


def invoke(data, feeds):
    """Runs the TFLite model ``data`` (bytes) once with TFLite's own
    kernels (`builtin_only`) on ``feeds`` ({input name: array}); returns
    {output name: array}."""
    interpreter = builtin_only("tf")(model_content=data)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], feeds[detail["name"]])
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"])
            for d in interpreter.get_output_details()}
