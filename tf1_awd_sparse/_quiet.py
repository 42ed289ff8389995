"""Keeps TensorFlow's import and deprecation chatter out of a program's
output: import this module before anything imports TensorFlow (the C++
log level is read at TensorFlow's import). The examples, the benchmarks
and the tests import it first; the library itself never does."""
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

import tensorflow as tf  # noqa: E402
from tensorflow.python.util import deprecation  # noqa: E402

# tf.compat.v1.logging (in 1.13 too): on 1.15 the tf.logging name itself
# logs a deprecation warning, before any verbosity could silence it.
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
