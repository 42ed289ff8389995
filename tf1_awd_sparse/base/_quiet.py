"""Keeps TensorFlow's import and deprecation chatter out of a program's
output: import this module before anything imports TensorFlow (the C++
log level is read at TensorFlow's import). The examples, the benchmarks,
the tests and the library's own command lines (``python -m
tf1_awd_sparse.awd_lm.estimator``) import it first; the library's modules
never do.

What is silenced, on every supported version, and nothing else:

* C++ log lines below ``TF_CPP_MIN_LOG_LEVEL`` (default here 2: INFO and
  WARNING; 0 shows all, 3 hides ERROR too; FATAL always shows). TensorFlow
  applies the level to its own logger, but 2.17+ also logs through absl
  before ``absl::InitializeLog()`` (``I0000 ... port.cc:153] oneDNN custom
  operations are on``, ``cudart_stub.cc:31] Could not find cuda drivers``,
  and absl's banner ``WARNING: All log messages before
  absl::InitializeLog() ...``), which ignores it: those lines are filtered
  here by the same rule.
* ERROR lines TensorFlow 2.x logs while it starts that are no errors:
  2.15's ``Unable to register cuDNN/cuFFT/cuBLAS factory: Attempting to
  register factory for plugin ... when one has already been registered``
  (its CUDA wheel registers the plugins twice; nothing fails, with or
  without a GPU), and ``failed call to cuInit`` on a machine without an
  NVIDIA driver (``/proc/driver/nvidia`` absent: the CUDA wheel runs on
  the CPU, as 1.x's CPU wheel does, silently). With an NVIDIA driver
  present a failed cuInit is a real error and shows.
* Python ``DeprecationWarning`` / ``FutureWarning``, TensorFlow's
  deprecation notices (1.x: ``WARNING:tensorflow:From ...``; 2.x also
  UserWarnings "```tf.nn.rnn_cell.LSTMCell`` is deprecated and will be
  removed in a future version...") and its Python log below ERROR.

* The TFLite converter's "Summary on the non-converted ops" (TF 2.15's
  MLIR converter writes it to stderr at every conversion, about 20 lines,
  with no logger a log level could quiet): dropped from what each
  conversion of the library writes (`base._stderr.converter_output`).

Only what TensorFlow writes to stderr while it is imported (and, on 2.x,
while it looks for devices, where cuInit runs) and while the library
converts a model is filtered (`base._stderr.filtered_fd2`); every other
line of that output is written out unchanged at the end, and nothing
else is touched. ``TF1_AWD_QUIET=0`` in the environment turns both
filters off (the log level default and the warning filters stay).
"""
import os
import re
import warnings

from tf1_awd_sparse.base import _stderr

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
#: The Python warnings silenced: (category, regex the message starts with).
#: TensorFlow 2.x's deprecation notices of the v1 API (tf.nn.rnn_cell.*,
#: tf.layers.*: Keras' legacy layers) are UserWarnings; 1.x logs the same
#: notices through its deprecation module, silenced below.
IGNORED_WARNINGS = (
    (DeprecationWarning, ""),
    (FutureWarning, ""),
    (UserWarning,
     r"`[^`]+` is deprecated and will be removed in a future version"),
)
for _category, _message in IGNORED_WARNINGS:
    warnings.filterwarnings("ignore", message=_message, category=_category)

# A C++ log line: TensorFlow's format ("2026-12-01 10:02:49.146257: E
# path/file.cc:123] ...", group 1 the severity) and absl's ("E0000
# 00:00:1796119377.643496    4514 file.cc:52] ...", group 2; before
# absl::InitializeLog the seconds field is the Unix time).
_LOG_LINE = re.compile(
    r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) "
    r"|([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ )\S+:\d+\] ")
_SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}
_ABSL_BANNER = ("WARNING: All log messages before absl::InitializeLog() is "
                "called are written to STDERR")
_DOUBLE_REGISTRATION = re.compile(
    r"Unable to register cu(?:DNN|FFT|BLAS) factory: Attempting to register "
    r"factory for plugin cu(?:DNN|FFT|BLAS) when one has already been "
    r"registered$")
_CUINIT = re.compile(r"failed call to cuInit: ")


def _min_log_level():
    try:
        return int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
    except ValueError:
        return 0


def _is_absl_line(line):
    match = _LOG_LINE.match(line)
    return match is not None and match.group(2) is not None


def _is_noise(line, min_level, nvidia_driver):
    """Whether one line TensorFlow wrote while starting is silenced (see
    the module docstring)."""
    match = _LOG_LINE.match(line)
    if match is None:
        return False
    severity = _SEVERITY[match.group(1) or match.group(2)]
    if severity < min_level:
        return True
    text = line[match.end():].rstrip("\r\n")
    if severity == _SEVERITY["E"] and _DOUBLE_REGISTRATION.match(text):
        return True
    return (severity == _SEVERITY["E"] and not nvidia_driver
            and _CUINIT.match(text) is not None)


def filter_startup_output(text, min_level=None, nvidia_driver=None):
    """``text`` (what TensorFlow wrote to stderr while starting) without
    the lines this module silences.

    Args:
      text: the captured output.
      min_level: the C++ log level (default: ``TF_CPP_MIN_LOG_LEVEL``).
      nvidia_driver: whether an NVIDIA driver is loaded (default: whether
        ``/proc/driver/nvidia`` exists).

    Returns:
      str, the kept lines in order.
    """
    if min_level is None:
        min_level = _min_log_level()
    if nvidia_driver is None:
        nvidia_driver = os.path.exists("/proc/driver/nvidia")
    lines = text.splitlines(True)
    kept = [line for line in lines
            if not _is_noise(line, min_level, nvidia_driver)]
    # absl's banner introduces its pre-init lines: it goes when they all do.
    if not any(_is_absl_line(line) for line in kept):
        kept = [line for line in kept if line.rstrip("\r\n") != _ABSL_BANNER]
    return "".join(kept)


def _start_tensorflow(list_devices=True):
    """Imports TensorFlow and, on 2.x with ``list_devices``, looks for its
    GPUs (what ``_import_filtered`` runs with file descriptor 2 captured)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if not list_devices or tf.__version__.startswith("1."):
        return tf
    # cuInit runs here (else at the first session): its failure on a
    # machine without a GPU is logged now, inside the capture.
    tf.config.list_physical_devices("GPU")
    return tf


def _import_filtered():
    """TensorFlow, imported with its start-up noise filtered out of
    file descriptor 2 (unless ``TF1_AWD_QUIET=0``)."""
    if os.environ.get("TF1_AWD_QUIET") == "0":
        return _start_tensorflow(list_devices=False)
    with _stderr.filtered_fd2(filter_startup_output):
        return _start_tensorflow()


tf = _import_filtered()
_stderr.quiet_converter()
from tensorflow.python.util import deprecation  # noqa: E402

# tf.compat.v1.logging (in 1.13 too): on 1.15 the tf.logging name itself
# logs a deprecation warning, before any verbosity could silence it.
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
