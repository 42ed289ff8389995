"""What the tests share: the project's root, the example programs loaded
by path, and modules of helpers -

- :mod:`support.versions` - what this TensorFlow has (contrib, LiteRT, XLA,
  Estimator, the TFLite schema module) and the skip marks for what it
  lacks; `invoke`, running a TFLite model's bytes with TFLite's own
  kernels;
- :mod:`support.references` - numpy references: fake quantization, the
  grids of learned ranges (and the check of a uint8 model's state
  tensors), the LSTM step (float and fake-quantized, peepholes and
  projection included), a whole-sequence LSTM;
- :mod:`support.graphs` - walking a graph's ops;
- :mod:`support.sparse` - a small model of registered sparse pairs (the
  losses' and the sparsity report's tests), the pairs' numpy evaluation
  weights, float files of matmuls for sparse storage;
- :mod:`support.quantized_graph` - a user's LSTM + GRU model rewritten,
  trained once and exported uint8 (the ``exported`` fixture of
  ``tests/export/conftest.py``);
- :mod:`support.properties` - strategies and checks of the property tests;
- :mod:`support.lm` - the language model's harness: tiny corpora, the
  training script, tiny parameters;
- :mod:`support.lm_api` - a tiny trained language model for the
  ``LanguageModel`` tests;
- ``support/v2_behaviour_cases.py`` - a program run in subprocesses by
  ``tests/base/test_compat.py``.

The tests live in folders that mirror the library's floors (``base/``,
``ops/``, ``transforms/``, ``layers/``, ``export/``, ``awd_lm/``), with
``programs/`` (the examples, benchmarks and docs' programs) and
``project/`` (the import graph, the names, the errors); inside them a
module's tests sit at its mirrored path (``project/test_test_layout.py``).
"""
import importlib.util
import os
import sys

#: The project's root (the folder of setup.py).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
BENCHMARKS = os.path.join(ROOT, "benchmarks")
#: The library package's folder name.
LIBRARY = "tf1_awd_sparse"


def library_files():
    """Every ``.py`` file of the library (``__init__.py`` included), sorted
    absolute paths: what the project floors (tests/project/) read."""
    out = []
    for folder, _, files in os.walk(os.path.join(ROOT, LIBRARY)):
        out += [os.path.join(folder, f) for f in files if f.endswith(".py")]
    return sorted(out)


#: Where the project's Python lives (everything but the virtualenvs).
CODE_DIRS = ("tf1_awd_sparse", "sparse_layers", "tests", "examples",
             "benchmarks", "tools")


def project_python_files():
    """Every ``.py`` file of the project: the root's and those under
    `CODE_DIRS` (sorted absolute paths; no virtualenv)."""
    import glob
    found = glob.glob(os.path.join(ROOT, "*.py"))
    for top in CODE_DIRS:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            found += [os.path.join(folder, f) for f in files
                      if f.endswith(".py")]
    return sorted(found)


def relative(path):
    """``path`` relative to the project's root, with ``/`` separators."""
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


def load_program(path, name=None):
    """Imports a program (an example or a benchmark) by its path, once.

    Args:
      path: the ``.py`` file.
      name: the module name to give it (default: the file's name); a
        program whose name is a package's (``awd_lm``) needs another.

    Returns:
      The module (also in ``sys.modules[name]``).
    """
    name = name or os.path.splitext(os.path.basename(path))[0]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def example(name):
    """``examples/<name>.py``, imported by path (see :func:`load_program`)."""
    return load_program(os.path.join(EXAMPLES, name + ".py"))
