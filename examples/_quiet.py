"""Quiet TensorFlow for this directory's programs (see
tf1_awd_sparse._quiet; this directory's parent is on sys.path)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import tf1_awd_sparse._quiet  # noqa: E402,F401
