"""Quiet TensorFlow for this directory's programs (see
tf1_awd_sparse.base._quiet; this directory's parent is on sys.path)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import tf1_awd_sparse.base._quiet  # noqa: E402,F401
import tensorflow.compat.v1 as tf  # noqa: E402

# The standard setup of TF1-style code on TensorFlow 2.x (a no-op on 1.x
# graph mode): these programs build graphs and run them in sessions.
tf.disable_v2_behavior()
