"""The one table of the library's names: the public names that are the floor
modules themselves, the packages' tables of public names (docs/api.md),
the old names that still import with a warning, and the names that went.

Users import the public names (:data:`PUBLIC`): ``weight_drop_lstm`` and the
``sparse_layers`` modules are the floor modules they name (the same module
object, through ``sys.modules``), so a patch or an ``isinstance`` check
through either name sees one object. Those names never warn. Each package's
``__init__`` declares the names a user needs with :func:`lazy_api`: its
``__all__`` is the package's table, and a name imports its module on first
use, so that ``import tf1_awd_sparse`` imports no TensorFlow.

The flat awd_lm module names of 0.3.0 (:data:`FLAT_AWD_LM_MODULES`:
``tf1_awd_sparse.awd_lm.train``, ``.presets``, ``.lm``, ...) still import,
once ``tf1_awd_sparse.awd_lm`` is imported (its ``__init__`` installs the
finder), and the first use of each emits one ``DeprecationWarning`` that
names the floor module and the release that drops the flat name
(:data:`REMOVED_IN`).

The names deprecated in 0.3.0 went in 0.4.0: the old module names
(:data:`REMOVED_MODULES`) are no longer importable (``import`` and ``from
... import`` of one raise a ``ModuleNotFoundError`` that says what replaces
it, from a finder that ``tf1_awd_sparse``'s ``__init__`` installs), and a
name that moved out of a module that still exists
(:data:`REMOVED_ATTRIBUTES`) raises an ``AttributeError`` that says what
replaces it (an ``ImportError`` with the same words under ``from module
import name``, which would otherwise say only "cannot import name"). The
project's own code uses no old name (``tests/project/test_names.py``).

This module imports nothing but the standard library, so that every
package's ``__init__`` can read it without importing TensorFlow.
"""
from __future__ import absolute_import, division, print_function

import dis
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from tf1_awd_sparse.base.errors import Error

__all__ = ["PUBLIC", "FLAT_AWD_LM_MODULES", "REMOVED_MODULES",
           "REMOVED_ATTRIBUTES", "DEPRECATED_SINCE", "REMOVED_IN",
           "RemovedNameError", "RemovedModuleError", "public_module",
           "lazy_api", "moved_attribute", "install_flat_awd_lm_names",
           "install_removed_module_names"]

#: The release that deprecates the flat awd_lm names (the one after 0.3.0),
#: and the release that drops them.
DEPRECATED_SINCE = "0.4.0"
REMOVED_IN = "0.5.0"

#: Public name -> the floor module it is (no warning: these are the names
#: the README teaches). ``variational_dropout`` is not here: it is a module
#: of its own that re-exports two floors' names.
PUBLIC = {
    "weight_drop_lstm": "tf1_awd_sparse.layers.weight_drop_lstm",
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

_AWD_LM = "tf1_awd_sparse.awd_lm"
#: awd_lm's modules by floor (docs/architecture.md):
#: ``tf1_awd_sparse.awd_lm.NAME`` was the flat name of each until 0.3.0.
_AWD_LM_FLOORS = {
    "corpus": ("data", "synthetic", "runtime"),
    "config": ("presets", "modeldir"),
    "graph": ("model", "losses", "ntasgd", "distill", "cache"),
    "inference": ("lm_backends", "lm", "export"),
    "training": ("train", "records", "compress"),
    "distributed": ("cluster", "input_fn", "model_fn"),
}
#: The flat awd_lm names of 0.3.0 (README and docs/awd_lm.md taught
#: ``awd_lm.train.run``, ``awd_lm.data.read_ptb``,
#: ``awd_lm.lm.LanguageModel``, ...): old name -> the floor module it is,
#: the same object, with one warning. No release warned about them before,
#: so they stay one more release.
FLAT_AWD_LM_MODULES = dict(
    ("%s.%s" % (_AWD_LM, name), "%s.%s.%s" % (_AWD_LM, floor, name))
    for floor, modules in _AWD_LM_FLOORS.items() for name in modules)

#: Old module name -> the module that replaces it, for the names deprecated
#: in 0.3.0 and removed in 0.4.0 (they no longer import; CHANGELOG.md).
REMOVED_MODULES = {
    "tf1_awd_sparse._checks": "tf1_awd_sparse.base.checks",
    "tf1_awd_sparse._compat": "tf1_awd_sparse.base.compat",
    "tf1_awd_sparse.magnitude_pruning":
        "tf1_awd_sparse.transforms.magnitude_pruning",
    "tf1_awd_sparse.mask_placement": "tf1_awd_sparse.ops.mask_placement",
    "tf1_awd_sparse.quantization.fake_quant": "tf1_awd_sparse.ops.fake_quant",
    "tf1_awd_sparse.quantization.lstm": "tf1_awd_sparse.ops.quantized_lstm",
    "tf1_awd_sparse.quantization.export": "tf1_awd_sparse.export.tflite",
}

#: (module, name) -> the module that holds ``name`` now, for the names that
#: moved out of a module that still exists (deprecated in 0.3.0, removed in
#: 0.4.0).
_MOVED_IN_0_3 = dict(
    [(("tf1_awd_sparse.base.checks", name), "tf1_awd_sparse.base.control_flow")
     for name in ("smart_cond", "with_assertions", "in_xla_context",
                  "outer_control_inputs", "once_per_run")]
    + [(("tf1_awd_sparse.ops.sparse.layer_utils", name),
        "tf1_awd_sparse.base.control_flow")
       for name in ("smart_cond", "in_xla_context")]
    + [(("tf1_awd_sparse.ops.sparse.layer_utils", name),
        "tf1_awd_sparse.base.checks")
       for name in ("check_training", "TrainingFlagError")]
    + [(("tf1_awd_sparse.base.checks", name), "tf1_awd_sparse.base.checkpoints")
       for name in ("check_checkpoint", "CheckpointReader")]
    + [(("tf1_awd_sparse.base.checks", "derived_seed"),
        "tf1_awd_sparse.base.seeds"),
       (("tf1_awd_sparse.base.checks", "check_sparse_options"),
        "tf1_awd_sparse.ops.sparse.common")]
    + [(("tf1_awd_sparse.layers.weight_drop_lstm", name),
        "tf1_awd_sparse.transforms.kernel")
       for name in ("DropConnect", "PruningMask", "SparseWeights",
                    "WeightFakeQuant")]
    + [(("tf1_awd_sparse.export.tflite", name), module)
       for module, moved in (
           ("tf1_awd_sparse.base.variable_names", ["relative_variable_names"]),
           ("tf1_awd_sparse.base.compat", ["INTERPRETERS",
                                           "interpreter_class"]),
           ("tf1_awd_sparse.export.stack", ["read_cell_values"]),
           ("tf1_awd_sparse.export.eval_graph", [
               "unroll", "state_inputs", "stack_outputs",
               "final_state_outputs", "state_input_stats", "INPUT_NAME",
               "OUTPUT_NAME"]),
           ("tf1_awd_sparse.export.graphdef", ["nudged_quantization",
                                               "convert"]),
           ("tf1_awd_sparse.export.runner", ["TFLiteRunner"]))
       for name in moved]
    + [(("tf1_awd_sparse.awd_lm.estimator", "bptt_batches"),
        "tf1_awd_sparse.awd_lm.distributed.input_fn")]
    + [(("tf1_awd_sparse.awd_lm.estimator", name),
        "tf1_awd_sparse.awd_lm.distributed.model_fn")
       for name in ("MASK_UPDATE_OPS", "MaskUpdateHook")])

#: (module, name) -> what to use instead, for names that went: the names
#: that moved (above), and shims whose arguments did not match what
#: replaces them, or that did nothing. The module's ``__getattr__`` reads
#: this table (:func:`moved_attribute`).
REMOVED_ATTRIBUTES = dict((key, "%s.%s" % (module, key[1]))
                          for key, module in _MOVED_IN_0_3.items())
REMOVED_ATTRIBUTES.update({
    ("tf1_awd_sparse.ops.fake_quant", "check_num_bits"):
        "tf1_awd_sparse.base.checks.check_num_bits(num_bits, arg_name) "
        "(note the order of the arguments)",
    ("tf1_awd_sparse.transforms.techniques", "add_to_collection"):
        "tf1_awd_sparse.transforms.techniques.register_pair(technique, pair) "
        "with the technique's name ('variational_dropout' or 'l0')",
    ("tf1_awd_sparse.ops.mask_placement", "restorable_variables"):
        "tf.global_variables() (mask variables are never global variables)",
    ("tf1_awd_sparse.layers.weight_drop_lstm", "LSTMStateTuple"):
        "tf.nn.rnn_cell.LSTMStateTuple",
})

_warned = set()


class RemovedNameError(ImportError, Error):
    """``from module import name`` of a name that went
    (:data:`REMOVED_ATTRIBUTES`): says what replaces it."""


class RemovedModuleError(ModuleNotFoundError, Error):
    """``import`` (or ``from package import``) of a module that went
    (:data:`REMOVED_MODULES`): says what replaces it."""


def _warn_once(old, new, stacklevel):
    """Warns the first time ``old`` is used; ``stacklevel`` counts the
    frames from the caller up to the user's line (import frames skipped)."""
    if old in _warned:
        return
    _warned.add(old)
    # Every old name starts with "tf1_awd_sparse", so that
    # ``-W error:tf1_awd_sparse:DeprecationWarning`` catches exactly these.
    warnings.warn("%s is deprecated since %s and goes in %s: use %s"
                  % (old, DEPRECATED_SINCE, REMOVED_IN, new),
                  DeprecationWarning, stacklevel=stacklevel + 1)


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


def moved_attribute(module_name, name):
    """What a module's ``__getattr__`` returns for ``name``: always an
    ``AttributeError``, which for a name that went (:data:`REMOVED_ATTRIBUTES`)
    says what replaces it.

    Args:
      module_name: the module's ``__name__``.
      name: the attribute asked for.

    Raises:
      AttributeError: always (saying what replaces ``name`` if it went).
    """
    key = (module_name, name)
    if key in REMOVED_ATTRIBUTES:
        message = ("module %r has no attribute %r: it was removed "
                   "(CHANGELOG.md); use %s"
                   % (module_name, name, REMOVED_ATTRIBUTES[key]))
        if _importing_from():
            # ``from module import name`` turns an AttributeError into
            # "cannot import name", losing the hint; an ImportError passes.
            raise RemovedNameError(message, name=module_name)
        raise AttributeError(message)
    raise AttributeError("module %r has no attribute %r" % key)


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _importing_from():
    """Whether the attribute asked for is read by an ``IMPORT_FROM``
    instruction: the first frame above this module and the modules'
    ``__getattr__`` (the C import machinery has none)."""
    frame = sys._getframe(1)   # pylint: disable=protected-access
    while frame is not None and (frame.f_code.co_filename == __file__
                                 or frame.f_code.co_name == "__getattr__"):
        frame = frame.f_back
    if frame is None:
        return False
    code, at = frame.f_code.co_code, frame.f_lasti
    return 0 <= at < len(code) and code[at] == _IMPORT_FROM


class _FlatAwdLmNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A ``sys.meta_path`` finder and loader for :data:`FLAT_AWD_LM_MODULES`:
    importing a flat name gives the floor module it is now (the same
    object, whose ``__name__`` and ``__spec__`` stay its own), with one
    warning."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in FLAT_AWD_LM_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = FLAT_AWD_LM_MODULES[spec.name]
        _warn_once(spec.name, new, 2)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass  # the module it is now ran when it was first imported


def install_flat_awd_lm_names():
    """Makes the flat awd_lm module names importable (idempotent);
    ``tf1_awd_sparse.awd_lm``'s ``__init__`` calls it."""
    if not any(isinstance(f, _FlatAwdLmNames) for f in sys.meta_path):
        # First, so that the table wins over a stale file of a flat name
        # (an upgrade over an old install, or an editable install's finder
        # pointing at another checkout); it answers only the table's names.
        sys.meta_path.insert(0, _FlatAwdLmNames())


class _RemovedModules(importlib.abc.MetaPathFinder):
    """A ``sys.meta_path`` finder that answers :data:`REMOVED_MODULES` with
    a `RemovedModuleError` saying what replaces the module, instead of a
    bare ``ModuleNotFoundError``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in REMOVED_MODULES:
            return None
        # name=None: importlib's ``from package import module`` swallows a
        # ModuleNotFoundError naming the module it looked for, and would
        # then say only "cannot import name".
        raise RemovedModuleError(
            "No module named %r: it was removed in 0.4.0 (CHANGELOG.md); "
            "use %s" % (fullname, REMOVED_MODULES[fullname]))


def install_removed_module_names():
    """Makes importing a removed module name (:data:`REMOVED_MODULES`) say
    what replaces it (idempotent); ``tf1_awd_sparse``'s ``__init__`` calls
    it."""
    if not any(isinstance(f, _RemovedModules) for f in sys.meta_path):
        sys.meta_path.insert(0, _RemovedModules())
