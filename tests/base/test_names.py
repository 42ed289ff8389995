"""`base.names`: the public names are the floor modules themselves
(`public_module`), and a package's table (`lazy_api`) imports a name's
module on first use only, so that the light packages import no
TensorFlow."""
import importlib
import os
import subprocess
import sys
import types

import pytest

from tf1_awd_sparse.base import names

from support import ROOT, project_python_files


def test_the_public_names_are_the_floor_modules():
    for public, module in sorted(names.PUBLIC.items()):
        assert importlib.import_module(public) is \
            importlib.import_module(module), public
    # Every facade file is in the table, and every table entry has its file.
    facades = set()
    for path in project_python_files():
        if os.path.relpath(path, ROOT).startswith("tests" + os.sep):
            continue
        with open(path) as f:
            if "_names.public_module(__name__)" in f.read():
                facades.add(os.path.relpath(path, ROOT)[:-3].replace(
                    os.sep, "."))
    assert facades == set(names.PUBLIC)
    import variational_dropout
    from tf1_awd_sparse.layers import dropout
    from tf1_awd_sparse.transforms import held_mask
    assert variational_dropout.HeldMask is held_mask.HeldMask
    assert variational_dropout.locked_dropout is dropout.locked_dropout

def test_the_light_packages_import_no_tensorflow():
    """``import tf1_awd_sparse`` and the packages a command reads without
    TensorFlow (``awd-lm info``) import none: their tables are lazy."""
    code = ("import sys\n"
            "import tf1_awd_sparse, tf1_awd_sparse.base\n"
            "import tf1_awd_sparse.awd_lm, tf1_awd_sparse.awd_lm.config\n"
            "import tf1_awd_sparse.awd_lm.corpus\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m.split('.')[0] == 'tensorflow'))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=300).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_an_unknown_package_name_is_an_attribute_error():
    import tf1_awd_sparse.layers
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'$"):
        tf1_awd_sparse.layers.no_such_name  # pylint: disable=pointless-statement
    from tf1_awd_sparse.layers import dropout   # a submodule still imports
    assert dropout.locked_dropout is tf1_awd_sparse.layers.locked_dropout


def test_the_lazy_table_refuses_a_name_twice():
    with pytest.raises(ValueError, match="twice"):
        names.lazy_api("p", {"p.a": ["x"], "p.b": ["x"]})


def test_a_lazy_table_imports_a_names_module_at_its_first_use(tmp_path,
                                                              monkeypatch):
    """A package of two modules on disk: neither is imported by the table,
    ``dir`` lists the names without importing them, each name imports its
    own module only, and ``__all__`` is the table's order."""
    for module, value in (("lazy_first", 1), ("lazy_second", 2)):
        (tmp_path / (module + ".py")).write_text(
            "ONE = %d\nTWO = %d\nUNLISTED = 0\n" % (value, 10 * value))
    monkeypatch.syspath_prepend(str(tmp_path))
    package = types.ModuleType("lazy_package")
    monkeypatch.setitem(sys.modules, "lazy_package", package)
    for module in ("lazy_first", "lazy_second"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    table = {"lazy_second": ["TWO"], "lazy_first": ["ONE"]}
    package.__all__, package.__getattr__, package.__dir__ = names.lazy_api(
        "lazy_package", table)
    package.own = "defined here"
    assert package.__all__ == ["TWO", "ONE"]
    listed = package.__dir__()
    assert listed == sorted(listed) and {"ONE", "TWO", "own"} <= set(listed)
    assert "UNLISTED" not in listed
    assert "lazy_first" not in sys.modules
    assert "lazy_second" not in sys.modules
    # Module-level __getattr__ (PEP 562) is asked for a missing name only.
    assert package.__getattr__("TWO") == 20
    assert "lazy_second" in sys.modules and "lazy_first" not in sys.modules
    assert package.__getattr__("ONE") == 1
    # A name of a module that is not in the table is not the package's.
    with pytest.raises(AttributeError,
                       match="'lazy_package' has no attribute 'UNLISTED'"):
        package.__getattr__("UNLISTED")


def test_a_public_name_is_its_floor_module_in_sys_modules(monkeypatch):
    import json
    monkeypatch.setitem(names.PUBLIC, "facade_of_json", "json")
    monkeypatch.setitem(sys.modules, "facade_of_json", None)
    assert names.public_module("facade_of_json") is json
    assert sys.modules["facade_of_json"] is json
    import facade_of_json   # pylint: disable=import-error
    assert facade_of_json is json
    with pytest.raises(KeyError):
        names.public_module("not_a_public_name")
