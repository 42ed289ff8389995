"""tf1_awd_sparse.base.compat on the TensorFlow version under test (every make
test target: 1.13.1, 1.15.5, 2.15.1, 2.21.0), and what the library does
when TensorFlow 2.x's v2 behaviour is left on (subprocesses running
tests/support/v2_behaviour_cases.py)."""
import inspect
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base import compat as _compat
from support.versions import IS_TF2

from support import ROOT

CASES = os.path.join(ROOT, "tests", "support", "v2_behaviour_cases.py")


class _FlagError(TypeError, ValueError):
    """Like layer_utils.TrainingFlagError: a type AutoGraph cannot rebuild."""


class _Layer(tf.layers.Layer):

    @_compat.do_not_convert
    def call(self, inputs, training=False):
        """Python control flow on a tensor, as only unconverted code sees it."""
        if training == "bad":
            raise _FlagError("training: bad")
        if inputs:  # a tf.Tensor used as a Python bool
            return inputs
        return -inputs


class _Outer(tf.layers.Layer):

    def __init__(self, inner, **kwargs):
        super(_Outer, self).__init__(**kwargs)
        self.inner = inner

    def call(self, inputs, training=False):
        # `training` to the inner layer positionally: Keras 1.15 must see
        # it in the inner `call`'s signature, else it adds training=...
        # from this call's context as a keyword too.
        return self.inner(inputs, False) * (2.0 if training is True else 1.0)


def test_do_not_convert_keeps_name_doc_and_signature():
    def f(inputs, training=False, *, scale=1.0):
        """Doc."""
        return inputs * scale, training

    g = _compat.do_not_convert(f)
    assert g.__name__ == "f" and g.__doc__ == "Doc."
    assert inspect.getfullargspec(g) == inspect.getfullargspec(f)
    assert g(3, True, scale=2.0) == (6.0, True)
    assert (inspect.getfullargspec(_Layer.call).args
            == ["self", "inputs", "training"])


def test_layer_call_is_not_converted():
    layer = _Layer()
    # Unconverted, a tensor as a Python bool is an error in graph mode
    # (converted, AutoGraph would have staged a tf.cond).
    with pytest.raises(TypeError):
        layer(tf.constant(1.0))
    # The library's own exception types reach the caller as raised, not as
    # AutoGraph's StagingError.
    with pytest.raises(_FlagError, match="training: bad"):
        _Layer()(tf.constant(1.0), training="bad")


def test_training_passed_positionally_to_an_inner_layer(sess):
    class Inner(tf.layers.Layer):
        @_compat.do_not_convert
        def call(self, inputs, training=False):
            return inputs + (1.0 if training is True else 0.0)

    out = _Outer(Inner())(tf.constant([1.0]), training=True)
    np.testing.assert_array_equal(sess.run(out), [2.0])


def test_variable_class_covers_ref_and_resource_variables():
    ref = tf.get_variable("ref", [], use_resource=False)
    resource = tf.get_variable("resource", [], use_resource=True)
    for variable in (ref, resource):
        assert isinstance(variable, _compat.Variable)
        assert isinstance(variable, _compat.TENSOR_TYPES)
    assert isinstance(ref.value(), _compat.TENSOR_TYPES)
    assert not isinstance(np.float32(1.0), _compat.TENSOR_TYPES)


def test_tf_is_the_v1_api():
    import tensorflow as tf_root
    expected = tf_root.compat.v1 if IS_TF2 else tf_root
    assert _compat.tf is expected
    assert _compat.IS_TF2 == (_compat.TF_VERSION >= (2, 0))
    assert _compat.TF_VERSION == tuple(
        int(v) for v in tf_root.__version__.split(".")[:2])


def test_dimension_value_takes_v1_and_v2_shapes():
    shape = tf.TensorShape([3, None])
    assert [_compat.dimension_value(d) for d in shape] == [3, None]
    assert _compat.dimension_value(5) == 5 and \
        _compat.dimension_value(None) is None


def test_graph_mode_checks_pass_in_v1_graph_mode(sess):
    _compat.require_graph_mode("x")
    _compat.require_v1_control_flow("x")
    assert not _compat.in_function_graph()


def _run_cases(mode, env=None):
    proc = subprocess.run(
        [sys.executable, CASES, mode], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
        env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {r["case"]: r for r in map(json.loads, proc.stdout.splitlines())}


# Eagerly, the layers run (tests/layers/test_eager.py checks what they
# compute); what builds a TF1 graph for session.run refuses, with one error
# naming itself and the fix (docs/versions.md).
EAGER_REFUSED = {"build_lm_held_masks", "cell_quant"}


@pytest.mark.skipif(not IS_TF2, reason="eager execution is TF 2.x's default "
                    "only; TF 1.x users opt in at program start")
def test_eager_execution_runs_or_refuses_with_the_fix_named():
    """Every entry point runs eagerly, or raises one GraphModeError naming
    itself and the fix, never a deep TensorFlow error."""
    results = _run_cases("eager")
    assert len(results) == 11
    for case, record in results.items():
        if case not in EAGER_REFUSED:
            assert record["result"] == "ok", record
            continue
        assert record["result"] == "GraphModeError", record
        assert "eager execution is on" in record["message"], record
        assert "tf.compat.v1.disable_v2_behavior()" in record["message"]


@pytest.mark.skipif(not IS_TF2, reason="eager execution is TF 2.x's default "
                    "only; TF 1.x users opt in at program start")
def test_the_training_loop_refuses_eager_execution_before_writing(tmpdir):
    """awd_lm.train.run with eager on: the named error, and no run
    directory (it used to fail deep in tf.summary.FileWriter)."""
    run_dir = str(tmpdir.join("run"))
    code = ("import tensorflow as tf, tf1_awd_sparse.base._quiet\n"
            "from tf1_awd_sparse.awd_lm.training import train\n"
            "try:\n"
            "    train.run(None, {}, %r)\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n" % run_dir)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=300).stdout
    assert out.startswith("GraphModeError awd_lm.train.run builds a TF1 "
                          "graph, but eager execution is on"), out
    assert not os.path.exists(run_dir)


# With only eager execution off, TF 2.x keeps control flow v2 (a
# dynamic_rnn loop body is a function graph), resource variables and v2
# shapes. The cell computes its weights once per run in the graph around
# the loop body and trains; only the quantization-aware step, ordered with
# v1 control dependencies, is refused (docs/versions.md).
V2_GRAPH_REFUSED = {"cell_quant"}


@pytest.mark.parametrize("mode", [
    pytest.param("v2graph", marks=pytest.mark.skipif(
        not IS_TF2, reason="v2 control flow and resource variables by "
        "default are TF 2.x's")),
    pytest.param("cfv2", marks=pytest.mark.skipif(
        not hasattr(tf, "enable_control_flow_v2"),
        reason="tf.enable_control_flow_v2() is TF 1.15's and 2.x's"))])
def test_graph_mode_with_v2_control_flow_trains_or_refuses(mode):
    """Only eager execution off (TF 2.x), or v1 behaviour with
    tf.enable_control_flow_v2() (TF 1.15, 2.x)."""
    results = _run_cases(mode)
    assert len(results) == 11
    for case, record in results.items():
        if case in V2_GRAPH_REFUSED:
            assert record["result"] == "GraphModeError", record
            assert "control flow v2" in record["message"], record
            assert "disable_control_flow_v2()" in record["message"]
        else:
            assert record["result"] == "ok", record
            assert np.isfinite(record["losses"]).all(), record
            # The steps trained: every trainable variable moved (the loss
            # alone could change through resampled dropout masks).
            changed, total = record["changed"]
            assert total > 0 and changed == total, record


def _import_without_legacy_keras(prelude=""):
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    return subprocess.run(
        [sys.executable, "-c", prelude + "import weight_drop_lstm"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=300, env=env)


@pytest.mark.skipif(_compat.TF_VERSION < (2, 16),
                    reason="Keras 3 is tf.keras only from TF 2.16")
@pytest.mark.parametrize("tf_keras_installed", [True, False])
def test_keras_3_import_fails_at_once_with_one_line(tf_keras_installed):
    # Without tf_keras: hide the installed package from the import system.
    prelude = "" if tf_keras_installed else (
        "import sys; sys.modules['tf_keras'] = None\n")
    proc = _import_without_legacy_keras(prelude)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: tf1_awd_sparse needs Keras 2 on "
                           "TensorFlow 2."), last
    assert "set TF_USE_LEGACY_KERAS=1" in last
    assert ("pip install tf-keras~=" in last) != tf_keras_installed
    # No chained traceback of TF's own error before it.
    assert "During handling" not in proc.stderr


def test_interpreter_choice(monkeypatch):
    """LiteRT's interpreter where it is installed, else tf.lite's; the
    messages of a bad or uninstalled choice."""
    choose = _compat.interpreter_class
    try:
        from ai_edge_litert.interpreter import Interpreter as preferred
    except ImportError:
        preferred = tf.lite.Interpreter
    assert choose() is choose("auto") is preferred
    assert choose("tf") is tf.lite.Interpreter
    assert choose(tf.lite.Interpreter) is tf.lite.Interpreter
    with pytest.raises(ValueError, match="interpreter must be one of auto, "
                       "tf, litert or an interpreter class, got 'tflite'"):
        choose("tflite")
    # LiteRT absent (as in the TF 1.x environments): what to install, and
    # "auto" falls back to tf.lite's.
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    with pytest.raises(ValueError, match="pip install ai-edge-litert"):
        choose("litert")
    assert choose("auto") is tf.lite.Interpreter


def test_tf_lite_interpreter_opens_without_its_deprecation_warning():
    """TF 2.20+'s tf.lite.Interpreter warns at every construction that
    it is deprecated (five lines, at every command of a machine without
    LiteRT); the class interpreter_class hands out opens silently. (On
    the versions that do not warn this holds trivially.)"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make = _compat.interpreter_class("tf")
        with pytest.raises(ValueError):   # the warning comes first
            make(model_content=b"not a TFLite file")
    assert [str(w.message) for w in caught
            if "Interpreter is deprecated" in str(w.message)] == []
