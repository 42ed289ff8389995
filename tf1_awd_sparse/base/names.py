"""The one table of the library's public names: the public names that are
the floor modules themselves, and the packages' tables of public names
(docs/api.md). The old names that still import, and until when, are
:mod:`tf1_awd_sparse.base.legacy`'s.

Users import the public names (:data:`PUBLIC`): the ``sparse_layers``
modules are the floor modules they name (the same module object, through
``sys.modules``), so a patch or an ``isinstance`` check through either name
sees one object. Each package's ``__init__`` declares the names a user
needs with :func:`lazy_api`: its ``__all__`` is the package's table, and a
name imports its module on first use, so that ``import tf1_awd_sparse``
imports no TensorFlow.

This module imports nothing but the standard library, so that every
package's ``__init__`` can read it without importing TensorFlow.
"""
from __future__ import absolute_import, division, print_function

import importlib
import sys

__all__ = ["PUBLIC", "public_module", "lazy_api"]

#: Public name -> the floor module it is (no warning: these are the names
#: the README teaches). ``weight_drop_lstm`` and ``variational_dropout``
#: are not here: each is a module of its own that gathers names of several
#: floor modules.
PUBLIC = {
    "sparse_layers.common": "tf1_awd_sparse.ops.sparse.common",
    "sparse_layers.layer_utils": "tf1_awd_sparse.ops.sparse.layer_utils",
    "sparse_layers.techniques": "tf1_awd_sparse.transforms.techniques",
    "sparse_layers.losses": "tf1_awd_sparse.layers.sparse.losses",
    "sparse_layers.report": "tf1_awd_sparse.layers.sparse.report",
    "sparse_layers.strip": "tf1_awd_sparse.export.strip",
    "sparse_layers.variational_dropout.nn":
        "tf1_awd_sparse.ops.sparse.variational_dropout",
    "sparse_layers.variational_dropout.layers":
        "tf1_awd_sparse.layers.sparse.variational_dropout.layers",
    "sparse_layers.variational_dropout.rnn":
        "tf1_awd_sparse.layers.sparse.variational_dropout.rnn",
    "sparse_layers.l0_regularization.nn":
        "tf1_awd_sparse.ops.sparse.l0_regularization",
    "sparse_layers.l0_regularization.layers":
        "tf1_awd_sparse.layers.sparse.l0_regularization.layers",
    "sparse_layers.l0_regularization.rnn":
        "tf1_awd_sparse.layers.sparse.l0_regularization.rnn",
}


def public_module(name):
    """The floor module a public name (:data:`PUBLIC`) is; a facade file
    puts it in ``sys.modules`` under its own name.

    Args:
      name: the facade's ``__name__``.

    Returns:
      The module object.

    Raises:
      KeyError: ``name`` is not in :data:`PUBLIC`.
    """
    module = importlib.import_module(PUBLIC[name])
    sys.modules[name] = module
    return module


def lazy_api(package, table):
    """A package's table of public names, imported on first use (PEP 562).

    A package's ``__init__`` says
    ``__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {...})``:
    ``package.NAME`` (and ``from package import NAME``) imports the module
    that defines ``NAME`` only then, so that importing the package imports
    nothing heavy (no TensorFlow where it must not be).

    Args:
      package: the package's ``__name__``.
      table: dict, module name -> the names of it that the package makes
        public (in the order of the table's documentation).

    Returns:
      ``(names, __getattr__, __dir__)``: the list of the table's names (the
      package's ``__all__``), and the package's two module functions.

    Raises:
      ValueError: a name is given twice.
    """
    where = {}
    for module, module_names in table.items():
        for name in module_names:
            if name in where:
                raise ValueError("%s: %r is in the table twice" % (package,
                                                                  name))
            where[name] = module

    def __getattr__(name):
        if name not in where:
            raise AttributeError("module %r has no attribute %r"
                                 % (package, name))
        return getattr(importlib.import_module(where[name]), name)

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(where))

    return list(where), __getattr__, __dir__
