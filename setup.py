"""Installable layout of the library: the design card's two top-level
modules (``weight_drop_lstm``, ``variational_dropout``) and package
(``sparse_layers``), and everything else under the one distinctive package
``tf1_awd_sparse`` (quantization, mask placement, the language model).

What is tested, per Python (docs/versions.md):

* CPython 3.7: TensorFlow 1.13.1 (default) and 1.15.5; ``tensorflow`` is
  required, as those wheels exist only there.
* CPython 3.9 - 3.12: TensorFlow 2.15 - 2.21 in v1 graph mode. TensorFlow is
  not required by name, because ``tensorflow`` and ``tensorflow-cpu`` are two
  distributions of the same package and pip cannot take either; the ``tf2``
  extra installs one TensorFlow, ``tensorflow`` (``pip install
  'tf1-awd-sparse[tf2]'``), and the library checks the version when it is
  imported. TF >= 2.16 needs ``tf-keras`` (Keras 2) with
  ``TF_USE_LEGACY_KERAS=1``; the extra installs it. tf-keras requires
  ``tensorflow`` by that name, so an extra naming ``tensorflow-cpu`` got
  both distributions (issue 54: twice the download, one package's files
  over the other's).
"""
import os
import re

from setuptools import find_packages, setup

# The one place of the version is the package (CHANGELOG.md's newest
# released entry; tests/base/test_legacy.py checks).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "tf1_awd_sparse", "__init__.py")) as _init:
    VERSION = re.search(r'^__version__ = "([^"]+)"', _init.read(),
                        re.M).group(1)
PY37 = 'python_version < "3.8"'
PY3X = 'python_version >= "3.9"'

setup(
    name="tf1-awd-sparse",
    version=VERSION,
    description=("AWD-LSTM regularization, weight sparsification and "
                 "quantization-aware LSTM training for TensorFlow graph-mode "
                 "code (TF 1.13 - 1.15, and 2.15 - 2.21 through "
                 "tf.compat.v1)"),
    long_description=open("README.md").read(),
    long_description_content_type="text/markdown",
    py_modules=["weight_drop_lstm", "variational_dropout"],
    packages=find_packages(exclude=("tests", "tests.*", "examples",
                                    "examples.*", "benchmarks",
                                    "benchmarks.*")),
    # 3.8 has neither a TF 1.x wheel nor a tested TF 2.x.
    python_requires=">=3.5,!=3.8.*,<3.13",
    install_requires=[
        # CPython 3.7: TF 1.x. With TF 1.13 keep numpy < 1.17 (newer numpy
        # makes it print FutureWarnings on import), as constraints/tf113.txt
        # does; TF 1.15.5 needs < 1.19.
        "tensorflow>=1.13.1,<1.16; " + PY37,
        "numpy>=1.14.5,<1.19; " + PY37,
        # protobuf 4.x cannot load TF 1.x descriptors.
        "protobuf>=3.6.1,<3.21; " + PY37,
        # gast >= 0.3 breaks TF 1.x's autograph converter.
        "gast==0.2.2; " + PY37,
        # CPython 3.9+: TensorFlow 2.x comes from the tf2 extra or from the
        # user (tensorflow or tensorflow-cpu); the import checks its version.
        "numpy>=1.23.5; " + PY3X,
    ],
    extras_require={
        # One TF 2.x: ``tensorflow``, the distribution tf-keras requires by
        # name (``tensorflow-cpu`` beside it would install a second copy).
        # tf-keras is Keras 2 for TF >= 2.16 (used with
        # TF_USE_LEGACY_KERAS=1; harmless on 2.15, which bundles it). A user
        # may install tensorflow-cpu himself without the extra.
        "tf2": ["tensorflow>=2.15,<2.22; " + PY3X,
                "tf-keras>=2.15,<2.22; " + PY3X],
        # LiteRT, the runtime deployments use for .tflite files (CPython
        # 3.9+); the tests use it where it is installed.
        "litert": ["ai-edge-litert>=2.0; " + PY3X],
        # hypothesis: the property-based tests (tests/*/test_properties_*);
        # 6.79.4 is the last release for CPython 3.7. pytest-xdist runs a
        # suite on both cores (Makefile, WORKERS); 3.5.0 and execnet 2.0.2
        # are the last releases for CPython 3.7.
        "test": ["pytest==7.4.4", "hypothesis==6.79.4",
                 "pytest-xdist==3.5.0", "execnet==2.0.2"],
        "examples": ["tqdm==4.66.5",
                     "matplotlib==3.1.3; " + PY37,
                     "matplotlib==3.8.4; " + PY3X],
    },
    # The language model's one command (tf1_awd_sparse.awd_lm.programs).
    entry_points={"console_scripts": [
        "awd-lm = tf1_awd_sparse.awd_lm.programs.main:main"]},
    classifiers=[
        "Programming Language :: Python :: 3.7",
        "Programming Language :: Python :: 3.9",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
