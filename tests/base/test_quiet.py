"""tf1_awd_sparse.base._quiet: exactly TensorFlow's start-up noise is silenced.

The lines below are copied from what TensorFlow 2.15.1 and 2.21.0 print
on import on a machine without a GPU (their CUDA wheels)."""
import os
import subprocess
import sys
import warnings

import pytest

from support import ROOT
from tf1_awd_sparse.base import _quiet

TF215 = [
    "2026-12-01 10:02:49.146257: E external/local_xla/xla/stream_executor/"
    "cuda/cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to "
    "register factory for plugin cuDNN when one has already been registered",
    "2026-12-01 10:02:49.146309: E external/local_xla/xla/stream_executor/"
    "cuda/cuda_fft.cc:607] Unable to register cuFFT factory: Attempting to "
    "register factory for plugin cuFFT when one has already been registered",
    "2026-12-01 10:02:49.151366: E external/local_xla/xla/stream_executor/"
    "cuda/cuda_blas.cc:1515] Unable to register cuBLAS factory: Attempting "
    "to register factory for plugin cuBLAS when one has already been "
    "registered",
]
BANNER = ("WARNING: All log messages before absl::InitializeLog() is called "
          "are written to STDERR")
ONEDNN = ("I0000 00:00:1796119374.204658    4514 port.cc:153] oneDNN custom "
          "operations are on. You may see slightly different numerical "
          "results due to floating-point round-off errors from different "
          "computation orders. To turn them off, set the environment "
          "variable `TF_ENABLE_ONEDNN_OPTS=0`.")
CUDART = ("I0000 00:00:1796119374.204949    4514 cudart_stub.cc:31] Could not "
          "find cuda drivers on your machine, GPU will not be used.")
CUINIT = ("E0000 00:00:1796119377.643496    4514 cuda_platform.cc:52] failed "
          "call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: "
          "UNKNOWN ERROR (303)")
TF221 = [BANNER, ONEDNN, CUDART, BANNER, ONEDNN, CUDART, CUINIT]
# Real errors in both formats, and what Python itself prints.
REAL = [
    "2026-12-01 10:02:49.151366: E tensorflow/core/framework/op_kernel.cc:"
    "1745] OP_REQUIRES failed at save_restore_v2_ops.cc:109 : Permission "
    "denied: runs/model.ckpt",
    "E0000 00:00:1796119377.643496    4514 cuda_dnn.cc:535] Could not create "
    "cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
    "F0000 00:00:1796119377.643496    4514 logging.cc:62] Check failed: ok",
    "Traceback (most recent call last):",
    "UserWarning: something the program should see",
]


def _filter(lines, **kwargs):
    return _quiet.filter_startup_output(
        "".join(line + "\n" for line in lines), **kwargs).splitlines()


def test_startup_noise_goes():
    assert _filter(TF215 + TF221, min_level=2, nvidia_driver=False) == []


@pytest.mark.parametrize("nvidia_driver", [False, True])
def test_real_errors_stay(nvidia_driver):
    mixed = TF215[:1] + REAL[:2] + TF221 + REAL[2:] + TF215[1:]
    kept = _filter(mixed, min_level=2, nvidia_driver=nvidia_driver)
    # absl's banner stays with the absl lines that stay; with a driver
    # loaded a failed cuInit is a real error.
    assert kept == REAL[:2] + [BANNER, BANNER] + (
        [CUINIT] if nvidia_driver else []) + REAL[2:]


def test_the_log_level_is_tensorflows_rule():
    # 0 shows INFO (and so absl's banner); 3 hides ERROR; FATAL always.
    assert _filter(TF221[:3], min_level=0, nvidia_driver=False) == TF221[:3]
    assert _filter([ONEDNN, REAL[0]], min_level=1) == [REAL[0]]
    assert _filter(REAL[:3], min_level=3) == [REAL[2]]


def test_a_program_prints_only_its_own_lines(tmp_path):
    """The real import in a fresh process, and a real conversion (TF 2.15
    wrote its summary of the non-converted ops there; 1.x and 2.21 write
    none): nothing but the program's own output on stdout and stderr, on
    every supported version."""
    program = ("import tf1_awd_sparse.base._quiet\n"
               "import sys\n"
               "import numpy as np\n"
               "import tensorflow.compat.v1 as tf\n"
               "from tf1_awd_sparse.export import graphdef\n"
               "tf.disable_v2_behavior()\n"
               "x = tf.placeholder(tf.float32, [1, 4], 'x')\n"
               "w = tf.constant(np.ones([4, 3], np.float32))\n"
               "y = tf.identity(tf.matmul(x, w) + [1., 2., 3.], 'y')\n"
               "with tf.Session() as sess:\n"
               "    print(sess.run(tf.constant(2) * 3))\n"
               "    print(len(graphdef.convert(sess, [x], [y], None)) > 0)\n"
               "sys.stderr.write('own line\\n')\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    env.pop("TF1_AWD_QUIET", None)
    proc = subprocess.run([sys.executable, "-c", program],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, timeout=120,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "6\nTrue\n"
    assert proc.stderr == "own line\n"


def test_v1_deprecation_notices_are_silenced_other_warnings_not():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for category, message in _quiet.IGNORED_WARNINGS:
            warnings.filterwarnings("ignore", message=message,
                                    category=category)
        warnings.warn("`tf.nn.rnn_cell.LSTMCell` is deprecated and will be "
                      "removed in a future version. This class is "
                      "equivalent as `tf.keras.layers.LSTMCell`", UserWarning)
        warnings.warn("Converting sparse IndexedSlices to a dense Tensor of "
                      "unknown shape.", UserWarning)
    assert [str(w.message) for w in caught] == [
        "Converting sparse IndexedSlices to a dense Tensor of unknown shape."]
