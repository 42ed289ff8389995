"""TFLite export of cell stacks and its runner.

The same module as :mod:`tf1_awd_sparse.export.tflite` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.export import tflite as _module

sys.modules[__name__] = _module
