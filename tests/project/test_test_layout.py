"""Tests beside their module (issue 56, item 5): a reader looking for the
tests of ``tf1_awd_sparse/<path>/<name>.py`` finds them at its mirrored
path, and a test file of the library's floors is named after what it
tests, not after the issue that added it.

The mirrored path of ``tf1_awd_sparse/<path>/<name>.py`` is either

- the file ``tests/<path>/test_<name>.py``, or
- the folder ``tests/<path>/<name>/`` holding at least one ``test_*.py``
  (a module whose tests are several files: each file's name is its topic).

A private module ``_name.py`` mirrors as ``test_name.py`` / ``name/`` (one
leading underscore dropped: a test file's name never starts with
``test__``), and a package's ``__main__.py`` as ``test_main.py`` / ``main/``. ``__init__.py`` files are not modules here: a package's
public names are each tested where they are defined.

pytest imports the test files by their base name (the folders have no
``__init__.py``), so two test files never share one; a module whose
``test_<name>.py`` would clash with another's takes the folder form.
"""
import os

import pytest

from support import ROOT

pytestmark = pytest.mark.per_python

LIBRARY = "tf1_awd_sparse"
TESTS = "tests"

#: The share of the library's modules with a test at their mirrored path,
#: at least. A ratchet: raise it as tests move beside their modules, never
#: lower it (issue 56's goal is 0.80). 0.64: 80 of 125 modules once the
#: tests of base/, ops/, transforms/, layers/ and export/ (48 of their 70)
#: and of awd_lm/ had moved; 19 of 127 modules before. 0.69: 87 of 126
#: with the compression package's tests, the plan's, the run tree's and the
#: controller's at their modules. 0.73: 92 of 126 with base/'s last five
#: (checkpoints, errors, legacy, names, _stderr). 0.78: 99 of 126 with
#: seven of export/, transforms/ and layers/ (strip, sparse_format,
#: tflite_builder, fused_low_rank, checkpoint_pairs, graph_quantize/_graph,
#: _sequence_base). 0.80: 102 of 126 with ops/quantized_lstm and
#: graph_quantize's batch_norm and fold_batch_norm. 0.84: 106 of 126 with
#: export/'s tflite_audit and stack and graph_quantize's patterns and
#: insert. 0.85: 108 of 126 with export/'s eval_graph and sparse_rewrite:
#: every module of base/, ops/, transforms/, layers/ and export/ (the 18
#: left are awd_lm/'s). 0.97: 123 of 126 with fifteen of awd_lm's (its
#: __main__, the cache, the compression ops, the SavedModel, the
#: inference's LanguageModel, backends, runner, fused export, model files
#: and TFLite weights, the compress program, the epochs, the training
#: graph, the best epoch's selection, the pipeline's plot). 0.98: 124 of
#: 126 with awd_lm's inference export. 1.0: 127 of 127 with the run's
#: records (config/runrecord, training/runstate, base/jsonrecord).
MIN_MIRRORED_SHARE = 1.0

#: The library's floors whose test folders hold only tests at a module's
#: mirrored path, apart from `CROSS_MODULE`.
CHECKED_FLOORS = ("base", "ops", "transforms", "layers", "export")

#: Test files of those floors that are not at one module's mirrored path
#: because what they check is where modules meet, with the reason.
CROSS_MODULE = {
    "base/test_environment.py":
        "the TensorFlow, numpy and pins the suite runs on",
    "layers/test_compose.py":
        "quantized stacks, held masks and Savers together",
    "layers/test_dropin_arguments.py":
        "the cell and the layer against LSTMCell, argument by argument",
    "layers/test_eager.py":
        "every cell, layer and dropout eagerly (one subprocess)",
    "layers/test_numerics.py":
        "long training runs of the sparse and quantized layers",
    "layers/test_properties_sparse.py":
        "property tests of the sparse ops, layers, losses and report",
    "layers/test_train_step.py":
        "one training step of every driver of the language model",
    "export/test_properties_quant.py":
        "property tests of the cells, fake quantization and the runner",
    "export/test_quantize_graph_export.py":
        "a rewritten graph trained, restored and exported",
    "export/test_quantize_recurrent_export.py":
        "TF's own LSTMCell rewritten and exported",
    "ops/test_sparse_ops.py":
        "what both sparse techniques' ops share: penalties, gradients, errors",
    "transforms/test_block_pruning.py":
        "pruning in blocks: the cut, MagnitudePruning and the language model",
    "transforms/test_group_lasso.py":
        "the group lasso and the language model's use of it",
}


def library_modules(root):
    """The library's modules under ``root``: paths relative to
    ``root/tf1_awd_sparse`` (``/``-separated, sorted), ``__init__.py``
    left out."""
    base = os.path.join(root, LIBRARY)
    out = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                out.append(os.path.relpath(os.path.join(folder, name),
                                           base).replace(os.sep, "/"))
    return sorted(out)


def mirrored_name(module):
    """``(folder, name)`` of a module's mirror: ``"layers/sparse/_rnn.py"``
    -> ``("layers/sparse", "rnn")``, ``"awd_lm/__main__.py"`` ->
    ``("awd_lm", "main")``."""
    folder, _, filename = module.rpartition("/")
    name = filename[:-len(".py")]
    if name.startswith("__") and name.endswith("__"):
        return folder, name[2:-2]
    return folder, name[1:] if name.startswith("_") else name


def has_mirrored_test(root, module):
    """Whether ``tests/<path>/test_<name>.py`` exists, or the folder
    ``tests/<path>/<name>/`` holds a ``test_*.py`` file."""
    folder, name = mirrored_name(module)
    tests = os.path.join(root, TESTS, *folder.split("/")) if folder \
        else os.path.join(root, TESTS)
    if os.path.isfile(os.path.join(tests, "test_%s.py" % name)):
        return True
    package = os.path.join(tests, name)
    return os.path.isdir(package) and any(
        f.startswith("test_") and f.endswith(".py")
        for f in os.listdir(package))


def untested_modules(root):
    """The library's modules without a test at their mirrored path."""
    return [m for m in library_modules(root)
            if not has_mirrored_test(root, m)]


def mirrored_share(root):
    """The share (0..1) of the library's modules with a mirrored test."""
    modules = library_modules(root)
    return 1.0 - len(untested_modules(root)) / float(len(modules))


def misplaced_tests(root, floors=CHECKED_FLOORS, allowed=()):
    """Test files under ``tests/<floor>/`` that are at no library module's
    mirrored path and not in ``allowed`` (paths relative to ``tests/``)."""
    mirrors = set()
    for module in library_modules(root):
        folder, name = mirrored_name(module)
        prefix = folder + "/" if folder else ""
        mirrors.add(prefix + "test_%s.py" % name)
        mirrors.add(prefix + name + "/")
    out = []
    for floor in floors:
        base = os.path.join(root, TESTS, floor)
        for folder, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not (name.startswith("test_") and name.endswith(".py")):
                    continue
                path = os.path.relpath(os.path.join(folder, name),
                                       os.path.join(root, TESTS))
                path = path.replace(os.sep, "/")
                parent = path.rpartition("/")[0] + "/"
                if path not in mirrors and parent not in mirrors \
                        and path not in allowed:
                    out.append(path)
    return sorted(out)


def test_enough_modules_have_a_test_at_their_mirrored_path():
    share = mirrored_share(ROOT)
    print("%.1f %% of %d modules; without: %s" % (
        100 * share, len(library_modules(ROOT)), untested_modules(ROOT)))
    assert share >= MIN_MIRRORED_SHARE


def test_the_floors_tests_sit_at_their_modules_mirrored_paths():
    assert misplaced_tests(ROOT, allowed=CROSS_MODULE) == []


def test_every_cross_module_file_exists():
    """An entry of `CROSS_MODULE` whose file moved or went is removed."""
    assert [path for path in CROSS_MODULE if not os.path.isfile(
        os.path.join(ROOT, TESTS, path))] == []


def _write(root, *paths):
    for path in paths:
        full = os.path.join(str(root), *path.split("/"))
        if path.endswith("/"):
            os.makedirs(full)
            continue
        if not os.path.isdir(os.path.dirname(full)):
            os.makedirs(os.path.dirname(full))
        open(full, "w").close()


def test_the_checks_find_a_module_without_a_test_and_a_misplaced_test(
        tmp_path):
    _write(tmp_path, "tf1_awd_sparse/__init__.py",
           "tf1_awd_sparse/a/__init__.py", "tf1_awd_sparse/a/file.py",
           "tf1_awd_sparse/a/_private.py", "tf1_awd_sparse/a/folder.py",
           "tf1_awd_sparse/a/missing.py", "tf1_awd_sparse/a/empty.py",
           "tf1_awd_sparse/top.py", "tf1_awd_sparse/a/__main__.py",
           "tests/a/test_file.py", "tests/a/test_private.py",
           "tests/a/folder/test_one_topic.py", "tests/a/empty/",
           "tests/a/empty/helpers.py", "tests/test_top.py",
           "tests/a/test_issue_12.py", "tests/a/test_allowed.py",
           "tests/a/test_main.py")
    assert library_modules(str(tmp_path)) == [
        "a/__main__.py", "a/_private.py", "a/empty.py", "a/file.py",
        "a/folder.py", "a/missing.py", "top.py"]
    # A folder without a test file, and no file: not tested.
    assert untested_modules(str(tmp_path)) == ["a/empty.py", "a/missing.py"]
    assert mirrored_share(str(tmp_path)) == pytest.approx(5.0 / 7)
    assert misplaced_tests(str(tmp_path), floors=("a",),
                           allowed={"a/test_allowed.py": "why"}) == [
        "a/test_issue_12.py"]
    # ``test__private.py`` is not the private module's mirror.
    os.remove(os.path.join(str(tmp_path), "tests", "a", "test_private.py"))
    _write(tmp_path, "tests/a/test__private.py")
    assert "a/_private.py" in untested_modules(str(tmp_path))
