"""Every old name that still works, and when it goes: the library's one
module of compatibility (floor 0, standard library only, so that
``tf1_awd_sparse.awd_lm``'s ``__init__`` installs it without importing
TensorFlow). Nothing else in the library keeps an old name: no module
tombstone (``tests/project/test_compatibility.py`` allows at most one
module-level ``__getattr__``), no alias module, no alias assignment: a
module whose old names moved binds :func:`moved_names`' ``__getattr__``,
one line, and the names are in the table here.

Two tables, answered by one ``sys.meta_path`` finder (:func:`install`,
called by ``tf1_awd_sparse.awd_lm``'s ``__init__``):

* :data:`FLAT_AWD_LM_MODULES` - the flat awd_lm module names of 0.3.0
  (``tf1_awd_sparse.awd_lm.train``, ``.presets``, ``.lm``, ...).
  Importing one gives the floor module it is now (the same object), and
  its first use emits one ``DeprecationWarning`` naming that module and
  :data:`REMOVED_IN`. Deprecated since :data:`DEPRECATED_SINCE`.
* :data:`PROGRAM_PATHS` - the programs' paths before they moved to
  ``awd_lm.programs`` (``python -m tf1_awd_sparse.awd_lm.score``, and
  ``from tf1_awd_sparse.awd_lm import estimator``): the program's module
  itself when imported, the program when run with ``python -m``. No
  release has announced their end, so they do not warn.

and one of names a module no longer lists:

* :data:`MOVED_NAMES` - the names a module of 0.3.0 exported without
  defining them (``awd_lm.estimator``'s ``FLAGS``, ``model_fn``, ...).
  The module binds :func:`moved_names`' ``__getattr__``, so that ``from
  MODULE import NAME`` gives the object of the module defining it, and its
  first use emits one ``DeprecationWarning`` naming that module and
  :data:`NEXT_REMOVED_IN`. Deprecated since :data:`NEXT_DEPRECATED_SINCE`
  (0.4.0 exported them without a warning).

And one deprecated use, answered by :func:`warn_params_item`:
``params['lr']``, the item read of the parameter dicts of 0.3.x, on a
``tf1_awd_sparse.awd_lm.config.params.Params`` (no mapping after 0.4.0):
it returns the value with a ``DeprecationWarning`` naming the attribute
to read (``params.optimization.lr``). No release has warned about it
yet: the next one (:data:`REMOVED_IN`, which drops the flat names)
first does, so it goes in the release after
(:data:`NEXT_REMOVED_IN`).

What 0.3.0 deprecated went in 0.4.0, as announced: the old module names
(``tf1_awd_sparse._checks``, ``.mask_placement``, ...) and the names that
moved out of a module (``base.checks.smart_cond``, ...) no longer import,
with Python's own error; CHANGELOG.md (0.3.0, Deprecated) says where each
one went.
"""
from __future__ import absolute_import, division, print_function

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["FLAT_AWD_LM_MODULES", "PROGRAM_PATHS", "MOVED_NAMES",
           "DEPRECATED_SINCE", "REMOVED_IN", "NEXT_DEPRECATED_SINCE",
           "NEXT_REMOVED_IN", "install", "moved_names",
           "warn_params_item"]

#: The release that deprecates the flat awd_lm names (the one after
#: 0.3.0), and the release that drops them (``tf1_awd_sparse.__version__``
#: is the first: tests/base/test_legacy.py).
DEPRECATED_SINCE = "0.4.0"
REMOVED_IN = "0.5.0"

#: What the release after 0.4.0 (the one that drops the flat names)
#: deprecates first: ``params['lr']`` on a `Params` and the names of
#: `MOVED_NAMES`, which 0.4.0 exported without a warning; each stays one
#: more release, as the flat names did.
NEXT_DEPRECATED_SINCE = REMOVED_IN
NEXT_REMOVED_IN = "0.6.0"

_AWD_LM = "tf1_awd_sparse.awd_lm"
#: awd_lm's modules by floor (docs/architecture.md):
#: ``tf1_awd_sparse.awd_lm.NAME`` was the flat name of each until 0.3.0.
_AWD_LM_FLOORS = {
    "corpus": ("data", "synthetic", "runtime"),
    "config": ("presets", "modeldir"),
    "graph": ("model", "losses", "ntasgd", "distill", "cache"),
    "inference": ("lm_backends", "lm", "export"),
    "training": ("train", "records"),
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
# 0.3.0's ``awd_lm.compress`` ran the pipeline: its entry's module now.
FLAT_AWD_LM_MODULES[_AWD_LM + ".compress"] = (
    _AWD_LM + ".training.compression.pipeline")

#: A program's path before the programs moved (issue 43) -> its name in
#: ``awd-lm`` (``programs.main.PROGRAMS``), whose module is
#: ``awd_lm.programs.NAME``.
PROGRAM_PATHS = dict(("%s.%s" % (_AWD_LM, name), name)
                     for name in ("estimator", "generate", "monitored",
                                  "score"))

_DISTRIBUTED = _AWD_LM + ".distributed."
#: Names a module exported in 0.3.0 without defining them: module -> {name:
#: the module that defines it}. The estimator program gathered the
#: distributed floor's pieces (issue 56 lists only what a module defines).
MOVED_NAMES = {
    _AWD_LM + ".programs.estimator": dict(
        [(name, _DISTRIBUTED + "cli") for name in (
            "DISTRIBUTE_CHOICES", "FLAGS", "FLAG_CHECKS", "command_line",
            "command_params", "eval_line", "hparam_flag", "parse_hparams",
            "start_lifetime", "write_model_dir")]
        + [("ClusterBarrierHook", _DISTRIBUTED + "cluster"),
           ("mirrored_strategy", _DISTRIBUTED + "cluster"),
           ("make_input_fn", _DISTRIBUTED + "input_fn"),
           ("model_fn", _DISTRIBUTED + "model_fn"),
           ("session_config", _AWD_LM + ".corpus.runtime")]),
}

_warned = set()


def _warn_once(old, new, stacklevel, since=DEPRECATED_SINCE,
               removed=REMOVED_IN):
    """Warns the first time ``old`` is used (deprecated ``since``, gone in
    ``removed``); ``stacklevel`` counts the frames from the caller up to
    the user's line (import frames skipped)."""
    if old in _warned:
        return
    _warned.add(old)
    # Every old name starts with "tf1_awd_sparse", so that
    # ``-W error:tf1_awd_sparse:DeprecationWarning`` catches exactly these.
    warnings.warn("%s is deprecated since %s and goes in %s: use %s"
                  % (old, since, removed, new),
                  DeprecationWarning, stacklevel=stacklevel + 1)


def warn_params_item(key, section, stacklevel=1):
    """Warns that ``params[key]`` (a `Params`' item, as the parameter
    dicts of 0.3.x were read) is deprecated, naming the attribute to read
    instead, ``params.<section>.<key>``; every use warns (Python's filters
    show it once per line). ``stacklevel`` counts the frames from the
    caller up to the user's line."""
    # The class's full name leads the message, as every old name does, so
    # that ``-W error:tf1_awd_sparse:DeprecationWarning`` catches it too.
    warnings.warn("%s[%r] is deprecated since %s and goes in %s: use "
                  "params.%s.%s" % (
                      _AWD_LM + ".config.params.Params", key,
                      NEXT_DEPRECATED_SINCE,
                      NEXT_REMOVED_IN, section, key),
                  DeprecationWarning, stacklevel=stacklevel + 1)


def _program_module(old):
    return "%s.programs.%s" % (_AWD_LM, PROGRAM_PATHS[old])


class _OldNames(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """The ``sys.meta_path`` finder and loader of both tables: importing an
    old name gives the module it is now (the same object, whose
    ``__name__`` and ``__spec__`` stay its own); ``python -m`` of a
    program's old path runs the program (:meth:`get_code`)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in FLAT_AWD_LM_MODULES and \
                fullname not in PROGRAM_PATHS:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        if spec.name in PROGRAM_PATHS:
            return importlib.import_module(_program_module(spec.name))
        new = FLAT_AWD_LM_MODULES[spec.name]
        _warn_once(spec.name, new, 2)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass  # the module it is now ran when it was first imported

    def get_source(self, fullname):
        """What ``python -m OLD_PATH`` runs (runpy asks for the code): the
        program, as ``awd-lm NAME`` does (`programs.main.run_as_main`:
        its quiet start-up, its Ctrl-C and closed-pipe endings). A flat
        module name has no program (None)."""
        if fullname not in PROGRAM_PATHS:
            return None
        return ("from tf1_awd_sparse.awd_lm.programs.main import "
                "run_as_main\nrun_as_main(%r)\n" % PROGRAM_PATHS[fullname])


def install():
    """Makes the old names of both tables importable (idempotent);
    ``tf1_awd_sparse.awd_lm``'s ``__init__`` calls it."""
    if not any(isinstance(f, _OldNames) for f in sys.meta_path):
        # First, so that the table wins over a stale file of an old name
        # (an upgrade over an old install, or an editable install's finder
        # pointing at another checkout); it answers only the tables' names.
        sys.meta_path.insert(0, _OldNames())


def moved_names(module):
    """The module-level ``__getattr__`` (PEP 562) that keeps a module's
    old names (`MOVED_NAMES`): a module says
    ``__getattr__ = legacy.moved_names(__name__)``.

    Args:
      module: the module's ``__name__``, a key of `MOVED_NAMES`.

    Returns:
      function ``name -> object``: a moved name's object, the one the
      module defining it holds (imported then), with one
      ``DeprecationWarning`` the first time (``MODULE.NAME is deprecated
      since ... use HOME.NAME``, pointing at the caller's line).

    Raises:
      KeyError: ``module`` has no moved names.
      AttributeError: (from the function) any other name, as Python's own
        (so ``from MODULE import OTHER`` is Python's ImportError).
    """
    moved = MOVED_NAMES[module]

    def __getattr__(name):
        home = moved.get(name)
        if home is None:
            raise AttributeError("module %r has no attribute %r"
                                 % (module, name))
        # The caller's line is two frames up: _warn_once's, this one's.
        _warn_once("%s.%s" % (module, name), "%s.%s" % (home, name), 2,
                   NEXT_DEPRECATED_SINCE, NEXT_REMOVED_IN)
        return getattr(importlib.import_module(home), name)
    return __getattr__
