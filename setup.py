"""Installable layout of the library: the design card's two top-level
modules (``weight_drop_lstm``, ``variational_dropout``) and package
(``sparse_layers``), and everything else under the one distinctive package
``tf1_awd_sparse`` (quantization, mask placement, the language model)."""
from setuptools import find_packages, setup

setup(
    name="tf1-awd-sparse",
    version="0.1.0",
    description=("AWD-LSTM regularization, weight sparsification and "
                 "quantization-aware LSTM training for TensorFlow 1.13 - "
                 "1.15 graph mode"),
    long_description=open("README.md").read(),
    long_description_content_type="text/markdown",
    py_modules=["weight_drop_lstm", "variational_dropout"],
    packages=find_packages(exclude=("tests", "tests.*", "examples",
                                    "examples.*", "benchmarks",
                                    "benchmarks.*")),
    python_requires=">=3.5,<3.8",
    # The supported range; `make env` installs exactly 1.13.1 and `make
    # test-tf115` 1.15.5, each with its constraints/ file (docs/versions.md).
    install_requires=[
        "tensorflow>=1.13.1,<1.16",
        # TF 1.15.5 needs < 1.19; with TF 1.13 keep numpy < 1.17 (newer
        # numpy makes it print FutureWarnings on import), as
        # constraints/tf113.txt does.
        "numpy>=1.14.5,<1.19",
        # protobuf 4.x cannot load TF 1.x descriptors.
        "protobuf>=3.6.1,<3.21",
        # gast >= 0.3 breaks TF 1.x's autograph converter.
        "gast==0.2.2",
    ],
    extras_require={
        # hypothesis: the property-based tests (tests/test_properties_*);
        # 6.79.4 is the last release for CPython 3.7.
        "test": ["pytest==7.4.4", "hypothesis==6.79.4"],
        "examples": ["tqdm==4.66.5", "matplotlib==3.1.3"],
    },
    classifiers=[
        "Programming Language :: Python :: 3.7",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
