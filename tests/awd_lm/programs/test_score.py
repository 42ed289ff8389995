"""The ``awd-lm score`` program and the TFLite runner it reads a file with:
a file that is no language model, ids outside the vocabulary, a truncated
file, each one named error."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.inference import lm_runner
from tf1_awd_sparse.quantization import export_tflite
from weight_drop_lstm import WeightDropLSTMCell
from support import ROOT
from support.lm import PARAMS, untrained_lm_file


@pytest.fixture(scope="module")
def tflite_files(tmp_path_factory):
    """A tiny language model exported with export_lm (untrained: only its
    signature matters here) and a cell stack exported with export_tflite."""
    folder = tmp_path_factory.mktemp("tflite")
    lm_path = untrained_lm_file(folder, 4)
    stack_path = str(folder / "stack.tflite")
    with tf.Graph().as_default():
        cell = WeightDropLSTMCell(4)
        tf.nn.dynamic_rnn(cell, tf.zeros([2, 4, 3]), dtype=tf.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            export_tflite(cell, 2, 4, stack_path, session=sess)
    return {"lm": lm_path, "stack": stack_path}


def test_lm_runner_given_a_stack_file_says_what_it_is(tflite_files):
    with pytest.raises(ValueError) as error:
        lm_runner.LMRunner(tflite_files["stack"])
    message = str(error.value)
    print(message)
    assert tflite_files["stack"] in message
    assert "not a language model" in message and "export_lm" in message
    assert "cell-stack model of quantization.export_tflite" in message
    assert "float32 inputs [2, 4, 3]" in message


def test_lm_runner_names_ids_outside_the_vocabulary(tflite_files):
    runner = lm_runner.LMRunner(tflite_files["lm"])
    stream = np.arange(12).reshape(2, 6) % 11
    # The model's logits are [2, 4, 11]; a good stream scores every target.
    scored = sum(picked.size for picked, _ in runner.windows(stream))
    assert scored == 2 * 5
    stream[0, 3], stream[1, 0] = 11, -2   # a target and an input
    with pytest.raises(ValueError) as error:
        runner.windows(stream)   # at the call, before any window runs
    message = str(error.value)
    print(message)
    assert message.startswith("stream must hold ids in [0, 11)")
    assert "11 at [0, 3]" in message and "-2 at [1, 0]" in message
    with pytest.raises(ValueError, match="integer word ids"):
        runner.windows(stream.astype(np.float32))
    with pytest.raises(ValueError, match=r"^stream must hold ids"):
        lm_runner.tflite_perplexity(tflite_files["lm"], stream)
    assert runner.vocab_size == PARAMS["vocab_size"] == 11


#: Runs ``awd-lm ARGS`` (the command's ``main``) in a child process with
#: the default interpreter, then with LiteRT made uninstalled (so with
#: ``tf.lite.Interpreter``, as on TF 1.x); prints ``[status, stdout,
#: stderr]`` of each.
_AWD_LM_ON_EACH_INTERPRETER = """
import contextlib, io, json, sys
from tf1_awd_sparse.awd_lm.programs import main
for hide_litert in (False, True):
    if hide_litert:
        sys.modules["ai_edge_litert"] = None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main.main(json.loads(sys.argv[1]))
        except SystemExit as stop:
            status = stop.code
    print(json.dumps([status, out.getvalue(), err.getvalue()]), flush=True)
"""


def test_score_of_a_truncated_tflite_exits_2_with_one_line(tflite_files,
                                                           tmp_path):
    # Issue 42: the first bytes of a language-model file (its sidecar
    # intact) made tf.lite (TF 1.x, and TF 2.x without LiteRT) read outside
    # the file and the process die of a segmentation fault (status 139);
    # the file is now checked before any interpreter reads it. A child
    # process: a signal fails this test instead of ending pytest.
    from tf1_awd_sparse.awd_lm.config import modeldir
    path = str(tmp_path / "lm.tflite")
    shutil.copy(tflite_files["lm"], path)
    words = ["<eos>", "<unk>"] + ["w%d" % i for i in range(9)]
    from tf1_awd_sparse.awd_lm.config.params import as_params
    params = as_params(dict(PARAMS, model="awd"))
    modeldir.write_tflite_sidecar(path, params, words,
                                  modeldir.produced_by(params))
    with open(path, "rb") as handle:
        whole = handle.read()
    with open(path, "wb") as handle:
        handle.write(whole[:len(whole) // 2])
    text = tmp_path / "test.txt"
    text.write_text("w1 w2 w3\nw4 w5\n")
    done = subprocess.run(
        [sys.executable, "-c", _AWD_LM_ON_EACH_INTERPRETER, json.dumps(
            ["score", "--model", path, str(text)])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stdout,
                                  done.stderr[-2000:])
    runs = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(runs) == 2
    for status, out, err in runs:
        lines = err.strip().splitlines()
        assert status == 2 and out == "" and len(lines) == 1, (status, err)
        assert lines[0].startswith("error: %r is not a whole TFLite file "
                                   "(truncated or damaged): " % path), lines
