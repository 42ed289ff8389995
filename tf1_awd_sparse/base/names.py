"""The one table of the library's names: the public names that are the floor
modules themselves, and the old names that still import, with a warning.

Users import the public names (:data:`PUBLIC`): ``weight_drop_lstm`` and the
``sparse_layers`` modules are the floor modules they name (the same module
object, through ``sys.modules``), so a patch or an ``isinstance`` check
through either name sees one object. Those names never warn.

The old names (:data:`DEPRECATED_MODULES`, :data:`DEPRECATED_ATTRIBUTES`)
are where things used to live. They import, and the first use of each emits
one ``DeprecationWarning`` that names the new name and the release that
drops the old one. Names that went (:data:`REMOVED_ATTRIBUTES`) raise an
``AttributeError`` that says what replaces them. The project's own code uses
no old name (``tests/project/test_names.py``).

This module imports nothing but the standard library, so that
``import tf1_awd_sparse`` can install the old module names without
importing TensorFlow.
"""
from __future__ import absolute_import, division, print_function

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["PUBLIC", "PUBLIC_MOVED_MODULES", "DEPRECATED_MODULES", "DEPRECATED_ATTRIBUTES",
           "REMOVED_ATTRIBUTES", "DEPRECATED_SINCE", "REMOVED_IN",
           "public_module", "moved_attribute",
           "install_old_module_names"]

#: The release (and date) that made the old names old, and the release that
#: drops them.
DEPRECATED_SINCE = "0.3.0 (2026-12-02)"
REMOVED_IN = "0.4.0"

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
#: awd_lm's modules by floor (docs/architecture.md), for the two tables
#: below: ``tf1_awd_sparse.awd_lm.NAME`` was the flat name of each.
_AWD_LM_FLOORS = {
    "corpus": ("data", "synthetic", "runtime"),
    "config": ("presets", "modeldir"),
    "graph": ("model", "losses", "ntasgd", "distill", "cache"),
    "inference": ("lm_backends", "lm", "export"),
    "training": ("train", "records", "compress"),
    "distributed": ("cluster", "input_fn", "model_fn"),
}
_AWD_LM_MOVED = dict(
    ("%s.%s" % (_AWD_LM, name), "%s.%s.%s" % (_AWD_LM, floor, name))
    for floor, modules in _AWD_LM_FLOORS.items() for name in modules)
#: The flat awd_lm names that README and docs/awd_lm.md taught users
#: (``awd_lm.train.run``, ``awd_lm.data.read_ptb``,
#: ``awd_lm.lm.LanguageModel``, ...): old name -> the floor module it is,
#: the same object, with no warning. The project itself uses the floor
#: names (tests/project/test_names.py).
PUBLIC_MOVED_MODULES = dict(
    (old, new) for old, new in _AWD_LM_MOVED.items()
    if old.rpartition(".")[2] in (
        "data", "synthetic", "presets", "modeldir", "model", "cache", "lm",
        "export", "train", "records", "compress"))

#: Old module name -> the module it is now.
DEPRECATED_MODULES = dict({
    "tf1_awd_sparse._checks": "tf1_awd_sparse.base.checks",
    "tf1_awd_sparse._compat": "tf1_awd_sparse.base.compat",
    "tf1_awd_sparse.magnitude_pruning":
        "tf1_awd_sparse.transforms.magnitude_pruning",
    "tf1_awd_sparse.mask_placement": "tf1_awd_sparse.ops.mask_placement",
    "tf1_awd_sparse.quantization.fake_quant": "tf1_awd_sparse.ops.fake_quant",
    "tf1_awd_sparse.quantization.lstm": "tf1_awd_sparse.ops.quantized_lstm",
    "tf1_awd_sparse.quantization.export": "tf1_awd_sparse.export.tflite",
}, **dict((old, new) for old, new in _AWD_LM_MOVED.items()
          if old not in PUBLIC_MOVED_MODULES))

#: (module, name) -> the module that holds ``name`` now, for names that
#: moved out of a module that still exists. The module's ``__getattr__``
#: reads this table.
DEPRECATED_ATTRIBUTES = dict(
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

#: (module, name) -> what to use instead, for names that went (their
#: arguments did not match what replaces them, or they did nothing).
REMOVED_ATTRIBUTES = {
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
}

_warned = set()


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


def moved_attribute(module_name, name):
    """What a module's ``__getattr__`` returns for ``name``: a name that
    moved (warned once), or an ``AttributeError``.

    Args:
      module_name: the module's ``__name__``.
      name: the attribute asked for.

    Returns:
      The object, from the module that holds it now.

    Raises:
      AttributeError: ``name`` is not a moved name of that module (saying
        what replaces it if it went).
    """
    key = (module_name, name)
    if key in DEPRECATED_ATTRIBUTES:
        new_module = DEPRECATED_ATTRIBUTES[key]
        _warn_once("%s.%s" % key, "%s.%s" % (new_module, name), 3)
        return getattr(importlib.import_module(new_module), name)
    if key in REMOVED_ATTRIBUTES:
        raise AttributeError("module %r has no attribute %r: it was removed "
                             "in %s; use %s" % (module_name, name,
                                                DEPRECATED_SINCE,
                                                REMOVED_ATTRIBUTES[key]))
    raise AttributeError("module %r has no attribute %r" % key)


class _OldModuleNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A ``sys.meta_path`` finder and loader for :data:`DEPRECATED_MODULES`
    and :data:`PUBLIC_MOVED_MODULES`: importing an old name gives the module
    it is now (the same object, whose ``__name__`` and ``__spec__`` stay its
    own); a deprecated one warns once."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in DEPRECATED_MODULES \
                and fullname not in PUBLIC_MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        if spec.name in PUBLIC_MOVED_MODULES:
            return importlib.import_module(PUBLIC_MOVED_MODULES[spec.name])
        new = DEPRECATED_MODULES[spec.name]
        _warn_once(spec.name, new, 2)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass  # the module it is now ran when it was first imported


def install_old_module_names():
    """Makes the old module names importable (idempotent); the package's
    ``__init__`` calls it."""
    if not any(isinstance(f, _OldModuleNames) for f in sys.meta_path):
        # First, so that the table wins over a stale file of an old name
        # (an upgrade over an old install, or an editable install's finder
        # pointing at another checkout); it answers only the table's names.
        sys.meta_path.insert(0, _OldModuleNames())
