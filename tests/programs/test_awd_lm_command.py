"""The installed ``awd-lm`` command: a wheel of the checkout, installed
with pip into a temporary site dir, run from outside the checkout with
tqdm and matplotlib made unimportable (no extras) through the LM's whole
life; plus export's refusals and info's outputs on the real files."""
import os
import subprocess
import sys

import pytest

from support import ROOT
from support.versions import IS_TF2
from support.lm import write_ptb

# The wheel (its files, its entry point, its imports without the extras)
# depends on the CPython and the package, not on the TensorFlow version:
# this file runs in the suite of each Python's reference TensorFlow (1.13.1
# on 3.7, 2.15.1 on 3.11; docs/testing.md). The programs it drives run on
# every version in-process and as `python -m` (inference/test_lm.py,
# test_lm_script.py, compression/test_pipeline.py, test_command_errors.py).
pytestmark = pytest.mark.per_python

NO_EXTRAS = ("import builtins\n_real = builtins.__import__\n"
             "def _imp(name, *a, **k):\n"
             "    if name.split('.')[0] in ('tqdm', 'matplotlib'):\n"
             "        raise ImportError('no ' + name + ' (test)')\n"
             "    return _real(name, *a, **k)\n"
             "builtins.__import__ = _imp\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(run, env, cwd): the wheel installed, a tiny run trained by it."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(tmp), ROOT],
                   check=True, cwd=str(tmp))
    wheel = [p for p in os.listdir(str(tmp)) if p.endswith(".whl")][0]
    site = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                    "-q", "--target", str(site), str(tmp / wheel)],
                   check=True, cwd=str(tmp))
    custom = tmp / "custom"
    custom.mkdir()
    (custom / "sitecustomize.py").write_text(NO_EXTRAS)
    env = dict(os.environ, PYTHONPATH="%s%s%s" % (site, os.pathsep, custom),
               PATH="%s%s%s" % (site / "bin", os.pathsep,
                                os.environ["PATH"]))
    data = tmp / "data"
    data.mkdir()
    write_ptb(str(data))
    run = {"tmp": tmp, "site": site, "env": env, "data": data}
    out = awd_lm(run, "train", "--model", "awd", "--out", "RUN",
                 "--emb-size", "16", "--num-layers",
                 "1", "--max-epochs", "1", "--batch-size", "4", "--bptt",
                 "8", "--threads", "1", "--quant", "--compress",
                 "magnitude", "--finetune-epochs", "1", "--data-dir",
                 str(data))
    run["train_output"] = out
    return run


def awd_lm(run, *args, script=False):
    """Runs the installed command in ``run['tmp']``; returns its output
    after asserting exit 0 and no traceback."""
    command = ([os.path.join(str(run["site"]), "bin", "awd-lm")] if script
               else [sys.executable, "-m", "tf1_awd_sparse.awd_lm"])
    done = subprocess.run(command + list(args), cwd=str(run["tmp"]),
                          env=run["env"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Traceback" not in done.stdout, done.stdout[-3000:]
    return done.stdout


def test_info_prints_the_config_json_figures(installed):
    # Against the model directory's own config.json, read here.
    import json
    from tf1_awd_sparse.awd_lm.programs import info
    model = os.path.join(str(installed["tmp"]), "RUN", "awd")
    with open(os.path.join(model, "config.json")) as handle:
        produced = json.load(handle)["produced_by"]
    lines = info.model_lines(model)
    assert "  test_ppl: %.2f" % produced["test_ppl"] in lines
    assert "  valid_ppl: %.2f" % produced["valid_ppl"] in lines
    assert "  stage: %s" % produced["stage"] in lines
    run = info.run_lines(os.path.dirname(model), [model])
    assert run[1].endswith("test_ppl %.2f" % produced["test_ppl"])
    assert info.shown(None) == "-" and info.shown(0.951) == "0.95"


def test_imported_from_the_installed_wheel(installed):
    out = subprocess.run(
        [sys.executable, "-c", "import tf1_awd_sparse; "
         "print(tf1_awd_sparse.__file__)"], cwd=str(installed["tmp"]),
        env=installed["env"], stdout=subprocess.PIPE,
        universal_newlines=True, check=True).stdout
    assert out.startswith(str(installed["site"])), out
    assert not out.startswith(ROOT)


def test_the_lm_life_with_the_installed_command(installed):
    run = installed
    assert "RUN/awd_quant" in awd_lm(run, "info", "RUN")
    assert "stage:" in awd_lm(run, "info", "RUN/awd")
    awd_lm(run, "export", "--model", "RUN/awd", "--format", "float",
           "--out", "exp/float.tflite")
    awd_lm(run, "export", "--model", "RUN/awd_quant", "--format", "uint8",
           "--out", "exp/uint8.tflite")
    assert "tflite file" in awd_lm(run, "info", "exp/uint8.tflite")
    awd_lm(run, "score", "--model", "exp/uint8.tflite",
           str(run["data"] / "test.txt"))
    if IS_TF2:   # int8 weights stored sparse (TF 2.x writes and runs them)
        awd_lm(run, "export", "--model", "RUN/awd_compress/qat", "--format",
               "int8", "--storage", "sparse", "--out", "exp/int8.tflite")
        assert '"layout": "csr"' in awd_lm(run, "info", "exp/int8.tflite")
        awd_lm(run, "score", "--model", "exp/int8.tflite",
               str(run["data"] / "test.txt"))
        # One builtin LSTM op per layer, int8 1 x 16 blocks, the state in
        # the interpreter: scored, generated from and described.
        assert "fused LSTM ops" in awd_lm(
            run, "export", "--model", "RUN/awd_compress/qat", "--format",
            "int8", "--storage", "sparse", "--lstm", "fused", "--out",
            "exp/fused.tflite")
        assert '"lstm": "fused"' in awd_lm(run, "info", "exp/fused.tflite")
        assert "perplexity" in awd_lm(run, "score", "--model",
                                      "exp/fused.tflite",
                                      str(run["data"] / "test.txt"))
        awd_lm(run, "generate", "--model", "exp/fused.tflite", "--prompt",
               "the cat", "--num-words", "5", "--seed", "1")
    awd_lm(run, "generate", "--model", "RUN/awd", "--prompt", "the cat",
           "--num-words", "5", "--seed", "1")
    assert "export" in awd_lm(run, "--help", script=True)


def failing(run, *args):
    """(status, output) of the installed command expected to fail."""
    done = subprocess.run(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm"] + list(args),
        cwd=str(run["tmp"]), env=run["env"], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True)
    assert "Traceback" not in done.stdout, done.stdout
    return done.returncode, done.stdout.strip().splitlines()[-1]


def test_export_refuses_uint8_of_a_float_model(installed):
    status, line = failing(installed, "export", "--model", "RUN/awd",
                           "--format", "uint8", "--out", "x/u.tflite")
    assert status == 2 and "train --quant" in line
    assert not (installed["tmp"] / "x").exists()   # refused before work


def test_export_refuses_what_tflite_cannot_run_and_bad_out_before_work(
        installed):
    status, line = failing(installed, "export", "--model", "RUN/awd_quant",
                           "--format", "uint8", "--storage", "sparse",
                           "--out", "y.tflite")
    assert status == 2 and "no sparse uint8 kernel" in line
    status, line = failing(installed, "export", "--model", "RUN/awd",
                           "--format", "float", "--lstm", "fused",
                           "--num-steps", "5", "--out", "y.tflite")
    assert status == 2 and "--num-steps must be 1" in line
    status, line = failing(installed, "export", "--model", "RUN/awd_quant",
                           "--format", "uint8", "--lstm", "fused",
                           "--out", "y.tflite")
    assert status == 2 and ("no uint8 kernel" in line if IS_TF2
                            else "TensorFlow 2.x" in line)
    if not IS_TF2:
        status, line = failing(installed, "export", "--model", "RUN/awd",
                               "--format", "int8", "--out", "y.tflite")
        assert status == 2 and "needs TensorFlow 2.x" in line
    assert not (installed["tmp"] / "y.tflite").exists()
    (installed["tmp"] / "afile").write_text("")
    status, line = failing(installed, "export", "--model", "RUN/awd",
                           "--format", "float", "--out", "afile/f.tflite")
    assert status == 2 and "not a directory" in line
    (installed["tmp"] / "exists.tflite").write_text("")
    status, line = failing(installed, "export", "--model", "RUN/awd",
                           "--format", "float", "--out", "exists.tflite")
    assert status == 2 and "--overwrite" in line


def test_info_and_score_name_a_runs_model_directories(installed):
    status, line = failing(installed, "score", "--model", "RUN",
                           str(installed["data"] / "test.txt"))
    assert status == 2 and "RUN/awd" in line and "RUN/awd_quant" in line
    status, line = failing(installed, "info", "nowhere")
    assert status == 2 and "nowhere" in line
