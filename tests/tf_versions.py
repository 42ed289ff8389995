"""The TensorFlow version under test, for the tests of features that only
some versions have (each skip says which and why: docs/versions.md)."""
import pytest
import tensorflow as _tf

from tf1_awd_sparse import _compat

IS_TF2 = _compat.IS_TF2

#: ``tf.contrib`` on TensorFlow 1.x; None on 2.x, which removed it.
contrib = None if IS_TF2 else _tf.contrib

needs_contrib = pytest.mark.skipif(
    IS_TF2, reason="tf.contrib (quantize, model_pruning) exists only on "
                   "TensorFlow 1.x; on 2.x the library's own fake quant and "
                   "pruning replace it (docs/versions.md)")

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
