"""The TensorFlow version under test, for the tests of features that only
some versions have (each skip says which and why: docs/versions.md)."""
import pytest
import tensorflow as _tf

from tf1_awd_sparse import _compat

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

needs_estimator = pytest.mark.skipif(
    not _compat.estimator_available(),
    reason="tf.estimator was removed in TensorFlow 2.16")
