"""One root for the named errors: every error class the package defines
derives from `tf1_awd_sparse.Error` and keeps a built-in error of its case,
so ``except tf1_awd_sparse.Error`` and ``except ValueError`` (and the like)
both catch what the library raises."""
import importlib
import inspect
import pkgutil

import pytest

import tf1_awd_sparse
import weight_drop_lstm
from tf1_awd_sparse.base.checks import check_training

# The named errors as of this test's writing; the walk must find at least
# these (so a walk that imports nothing cannot pass).
KNOWN = {"GraphModeError", "TrainingFlagError", "DtypeError", "ParamsError",
         "ConfigError", "DataError", "EstimatorUnavailableError", "OOVError",
         "TrainingDiverged", "CheckpointError"}
BUILTINS = (ValueError, TypeError, RuntimeError, ArithmeticError, OSError)


def _modules():
    """Every module of the package and the facade packages (each imported
    once: the aliases of `sys.modules` are the same module objects)."""
    import sparse_layers
    import variational_dropout
    found = [weight_drop_lstm, variational_dropout]
    for package in (tf1_awd_sparse, sparse_layers):
        found.append(package)
        for info in pkgutil.walk_packages(package.__path__,
                                          package.__name__ + "."):
            found.append(importlib.import_module(info.name))
    return found


def _error_classes():
    classes = {}
    for module in _modules():
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__.startswith(
                        ("tf1_awd_sparse", "sparse_layers",
                         "weight_drop_lstm", "variational_dropout"))):
                classes[value.__module__ + "." + value.__name__] = value
    return classes


def test_every_error_class_of_the_package_derives_from_the_root():
    classes = _error_classes()
    assert KNOWN <= {cls.__name__ for cls in classes.values()}, sorted(
        classes)
    for name, cls in classes.items():
        if cls is tf1_awd_sparse.Error:
            continue
        assert issubclass(cls, tf1_awd_sparse.Error), name
        # ... and is the built-in error its case always was.
        assert issubclass(cls, BUILTINS), name


def test_the_root_catches_what_the_library_raises():
    with pytest.raises(tf1_awd_sparse.Error) as caught:
        check_training("yes", "is_train")
    assert isinstance(caught.value, (TypeError, ValueError))
    assert "is_train" in str(caught.value)
    # Through a facade, as a user meets it.
    with pytest.raises(tf1_awd_sparse.Error):
        weight_drop_lstm.WeightDropLSTMCell(4, is_train="yes")
