"""Keeps TensorFlow 1.13's import and deprecation chatter out of example output."""
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

import tensorflow as tf  # noqa: E402
from tensorflow.python.util import deprecation  # noqa: E402

tf.logging.set_verbosity(tf.logging.ERROR)
deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
