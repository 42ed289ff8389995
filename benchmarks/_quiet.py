"""Keeps TensorFlow's import and deprecation chatter out of example output."""
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
