"""The argument checks live in three modules by kind (`base.checks`: tensors,
dtypes, graphs and the named errors; `base.scalar_checks`; `base.data_checks`),
each listing only its own checks; the scalar and data checks run without
TensorFlow (the config floor and ``awd-lm info`` read a config.json with
them)."""
import subprocess
import sys

import pytest

from support import ROOT
from tf1_awd_sparse.base import checks, data_checks, scalar_checks


@pytest.mark.parametrize("module", [checks, scalar_checks, data_checks])
def test_each_module_lists_only_the_checks_it_defines(module):
    for name in module.__all__:
        assert getattr(module, name).__module__ == module.__name__, name


def test_the_scalar_and_data_checks_import_no_tensorflow(tmp_path):
    code = ("import sys\n"
            "from tf1_awd_sparse.base import data_checks, scalar_checks\n"
            "scalar_checks.check_interval(0.0, 1.0, 'low', 'high')\n"
            "scalar_checks.check_positive_int(3, 'n')\n"
            "data_checks.check_writable_dir(%r, '--out')\n"
            "data_checks.check_id_array([0, 1], 2)\n"
            "print('tensorflow' in sys.modules)\n" % str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=120).stdout
    assert out.strip().splitlines()[-1] == "False"


def test_an_interval_in_a_dtype_is_checked_in_that_dtype():
    # Two float64 bounds that round to one float32 value.
    assert scalar_checks.check_interval(1.0, 1.0 + 1e-12, "low", "high") == (
        1.0, 1.0 + 1e-12)
    with pytest.raises(ValueError, match="low must be < high in float32"):
        scalar_checks.check_interval(1.0, 1.0 + 1e-12, "low", "high",
                              dtype="float32")
