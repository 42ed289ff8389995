"""``awd-lm`` on damaged or shared files (issue 54): a second export into
a folder leaves the first file's answers as they were (each file has its
own vocabulary, checked by its hash); ``info`` refuses a ``.tflite`` that
is no TFLite file and a checkpoint that is missing or empty; ``export`` of
a damaged checkpoint is one line that keeps TensorFlow's cause; Ctrl-C in
``train`` is one line naming the command that resumes it, which does;
``info | head`` ends silently. The commands run in child processes (their
exit status and their whole stderr are what is tested), on one tiny float
model trained once for the module (about 3 s)."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from support import ROOT
from support.lm import FLOAT_PPL_RTOL, TINY, TINY_HPARAMS, write_ptb
from support.lm_api import tiny_params, write_corpus
from tf1_awd_sparse.awd_lm.config import modeldir

NO_TENSORFLOW = "import sys; sys.modules['tensorflow'] = None\n"

#: Runs each ``awd-lm`` command line of ``sys.argv[1]`` (a JSON list of
#: lists) with `programs.main` in this one process (TensorFlow imported
#: once), printing ``[status, stdout, stderr]`` of each as a JSON line.
_COMMANDS = """
import contextlib, io, json, sys
from tf1_awd_sparse.awd_lm.programs import main
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main.main(argv)
        except SystemExit as stop:
            status = stop.code
    print(json.dumps([status, out.getvalue(), err.getvalue()]), flush=True)
"""


def _run(commands, prelude=""):
    """``[(status, stdout, stderr)]`` of the ``awd-lm`` command lines, run
    in one child process."""
    done = subprocess.run(
        [sys.executable, "-c", prelude + _COMMANDS, json.dumps(commands)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def _one_line(result, status=2):
    """The one stderr line of a refused command (nothing on stdout)."""
    code, out, err = result
    lines = err.strip().splitlines()
    assert (code, out, len(lines)) == (status, "", 1), result
    return lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny float model directory (one epoch), its corpus, and its model
    exported as ``files/float.tflite`` with sidecar and vocabulary."""
    from tf1_awd_sparse.awd_lm.corpus import data
    from tf1_awd_sparse.awd_lm.inference import lm
    from tf1_awd_sparse.awd_lm.training import train
    root = tmp_path_factory.mktemp("damaged")
    corpus = data.read_ptb(write_corpus(str(root / "data")))
    model_dir = str(root / "plain")
    train.run(corpus, tiny_params(), model_dir, log=lambda *a: None,
              threads=1)
    os.mkdir(str(root / "files"))
    tflite = str(root / "files" / "float.tflite")
    lm.export_model(model_dir, tflite, batch_size=1, num_steps=4)
    return {"root": str(root), "model_dir": model_dir, "tflite": tflite,
            "test": os.path.join(str(root / "data"), "test.txt")}


def _copy_model(trained, name, words=None):
    """A copy of the model directory; ``words``: its vocabulary replaced
    (the same size: only the answers differ)."""
    copy = os.path.join(trained["root"], name)
    if not os.path.isdir(copy):
        shutil.copytree(trained["model_dir"], copy)
    if words is not None:
        modeldir.write_vocab(copy, words)
    return copy


def _perplexity(result):
    status, out, err = result
    assert status == 0, err
    return float(out.strip().splitlines()[-1].split()[-1])


def test_a_second_export_into_the_folder_changes_nothing_of_the_first(
        trained, tmp_path):
    from tf1_awd_sparse.awd_lm import LanguageModel
    words = modeldir.read_vocab(os.path.join(trained["model_dir"],
                                             "vocab.txt"))
    other = _copy_model(trained, "reversed", words[:2] + words[2:][::-1])
    folder = tmp_path / "out"
    folder.mkdir()
    first = str(folder / "first.tflite")
    results = _run([
        ["export", "--model", trained["model_dir"], "--format", "float",
         "--out", first, "--num-steps", "3"],
        ["export", "--model", other, "--format", "float",
         "--out", str(folder / "second.tflite"), "--num-steps", "3"],
        ["score", "--model", first, trained["test"]]])
    assert [r[0] for r in results[:2]] == [0, 0], results
    # The reference: the TF checkpoint's perplexity of the same text.
    reference = LanguageModel.load(trained["model_dir"])
    with open(trained["test"]) as handle:
        expected = reference.score(handle.read().splitlines())
    reference.close()
    assert _perplexity(results[2]) == pytest.approx(
        expected.perplexity, rel=FLOAT_PPL_RTOL)
    assert modeldir.read_config(modeldir.sidecar_path(first))["words"] == \
        words
    assert not os.path.exists(str(folder / "vocab.txt"))


def test_a_vocabulary_that_is_not_the_files_is_refused(trained, tmp_path):
    copy = str(tmp_path / "float.tflite")
    for path in (trained["tflite"], modeldir.sidecar_path(trained["tflite"]),
                 modeldir.vocab_path(trained["tflite"])):
        shutil.copy(path, copy + path[len(trained["tflite"]):])
    words = modeldir.read_vocab(modeldir.vocab_path(copy))
    swapped = [words[0], words[1], words[3], words[2]] + words[4:]
    with open(modeldir.vocab_path(copy), "w") as handle:
        handle.write("".join(w + "\n" for w in swapped))
    with pytest.raises(modeldir.ConfigError, match="vocab_sha256"):
        modeldir.read_config(modeldir.sidecar_path(copy))
    # A file of before (its sidecar naming the folder's shared vocab.txt,
    # without a hash) still opens, with that vocabulary.
    with open(modeldir.sidecar_path(copy)) as handle:
        sidecar = json.load(handle)
    sidecar["vocab"] = "vocab.txt"
    del sidecar["tflite"]["vocab_sha256"]
    with open(modeldir.sidecar_path(copy), "w") as handle:
        json.dump(sidecar, handle)
    modeldir.write_vocab(str(tmp_path), words)
    assert modeldir.read_config(modeldir.sidecar_path(copy))["words"] == \
        words


def _damaged_copies(trained, folder):
    """``.tflite`` files that are no whole TFLite file (empty, random
    bytes, random bytes behind the identifier, the first half of the
    real file), each with a copy of the real file's sidecar and
    vocabulary; and the real file."""
    with open(trained["tflite"], "rb") as handle:
        whole = handle.read()
    noise = os.urandom(4000)
    contents = {"empty": b"", "random": noise,
                "identified": noise[:4] + b"TFL3" + noise[8:],
                "half": whole[:len(whole) // 2]}
    paths = {}
    for name, content in contents.items():
        path = os.path.join(folder, name + ".tflite")
        with open(path, "wb") as handle:
            handle.write(content)
        sidecar = modeldir.sidecar_path(trained["tflite"])
        shutil.copy(sidecar, modeldir.sidecar_path(path))
        shutil.copy(modeldir.vocab_path(trained["tflite"]),
                    modeldir.vocab_path(path))
        paths[name] = path
    return paths


def test_info_refuses_a_tflite_that_is_no_tflite_file(trained, tmp_path):
    paths = _damaged_copies(trained, str(tmp_path))
    names = sorted(paths)
    results = _run([["info", paths[n]] for n in names]
                   + [["info", trained["tflite"]]], NO_TENSORFLOW)
    for name, result in zip(names, results):
        line = _one_line(result)
        assert line.startswith("error: %r is not a" % paths[name]), line
        assert "TFLite file" in line, line
    status, out, _ = results[-1]
    assert status == 0 and out.startswith("%s: tflite file (%d bytes)" % (
        trained["tflite"], os.path.getsize(trained["tflite"])))


def _damaged_checkpoint(trained, name, damage):
    """A copy of the model directory whose checkpoint's ``damage``d."""
    copy = _copy_model(trained, name)
    prefix = os.path.join(copy, "best", "model.ckpt")
    data_file = glob.glob(prefix + ".data-*")[0]
    if damage == "missing data":
        os.remove(data_file)
    elif damage == "empty data":
        open(data_file, "wb").close()
    elif damage == "truncated data":
        with open(data_file, "rb") as handle:
            whole = handle.read()
        with open(data_file, "wb") as handle:
            handle.write(whole[:len(whole) // 2])
    elif damage == "missing index":
        os.remove(prefix + ".index")
    elif damage == "damaged index":   # its last bytes, the table's footer
        with open(prefix + ".index", "r+b") as handle:
            handle.seek(-8, os.SEEK_END)
            handle.write(b"\0" * 8)
    return copy, prefix, data_file


DAMAGES = ("missing data", "empty data", "truncated data", "missing index",
           "damaged index")


def test_export_of_a_damaged_checkpoint_is_one_line_with_its_cause(
        trained, tmp_path):
    cases = [_damaged_checkpoint(trained, "export_%d" % i, damage)
             for i, damage in enumerate(DAMAGES)]
    outs = [str(tmp_path / ("%d.tflite" % i)) for i in range(len(cases))]
    results = _run([["export", "--model", copy, "--format", "float",
                     "--out", out] for (copy, _, _), out in
                    zip(cases, outs)])
    for damage, (_, prefix, data_file), out, result in zip(
            DAMAGES, cases, outs, results):
        line = _one_line(result)
        assert prefix in line, (damage, line)
        assert not os.path.exists(out), damage   # nothing written
        if damage == "missing data":
            # TensorFlow's cause, not its guess before "Original error:".
            assert "%s; No such file or directory" % data_file in line, line
        if damage in ("empty data", "truncated data"):
            assert line.endswith("(OutOfRangeError: Read less bytes than "
                                 "requested); nothing was deleted"), line


def test_info_refuses_a_missing_empty_or_truncated_checkpoint(trained):
    # Without TensorFlow: the files' names and sizes, and the extent of
    # each tensor the index records (what TensorFlow's reader meets).
    cases = [_damaged_checkpoint(trained, "info_%d" % i, damage)
             for i, damage in enumerate(DAMAGES)]
    results = _run([["info", copy] for copy, _, _ in cases]
                   + [["info", trained["model_dir"]]], NO_TENSORFLOW)
    for damage, (_, prefix, data_file), result in zip(DAMAGES, cases,
                                                      results):
        line = _one_line(result)
        assert line.startswith("error: %s: " % prefix), line
        named = prefix + ".index" if "index" in damage else data_file
        assert os.path.basename(named) in line, line
        if damage == "truncated data":   # half of it kept
            whole = glob.glob(os.path.join(trained["model_dir"], "best",
                                           "model.ckpt.data-*"))[0]
            assert "truncated (%d bytes, its index records %d)" % (
                os.path.getsize(data_file), os.path.getsize(whole)) in line
    assert results[-1][0] == 0, results[-1]


def test_info_into_a_closed_pipe_ends_silently(trained):
    # As `awd-lm info FILE | head -0`: the reader is gone before the
    # output is written.
    child = subprocess.Popen(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm", "info",
         trained["tflite"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    child.stdout.close()
    err = child.stderr.read().decode()
    child.stderr.close()
    assert (child.wait(timeout=60), err) == (141, "")


def test_ctrl_c_in_train_is_one_line_naming_the_resume(tmp_path):
    data_dir = str(tmp_path / "ptb")
    os.mkdir(data_dir)
    write_ptb(data_dir)
    out = str(tmp_path / "run")
    env = dict(os.environ, PYTHONPATH=ROOT)
    child = subprocess.Popen(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm", "train"] + TINY + [
            "--model", "plain", "--data-dir", data_dir, "--out", out,
            "--max-epochs", "6"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, env=env, cwd=ROOT)
    state = os.path.join(out, "plain", "state.json")
    deadline = time.time() + 120
    while not os.path.exists(state) and child.poll() is None \
            and time.time() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)   # in an epoch after the first
    _, err = child.communicate(timeout=120)
    assert (child.returncode, err.strip().splitlines()) == (130, [
        "interrupted; resume with: awd-lm train --out %s --resume" % out])
    # The command it names resumes the run and finishes it.
    done = subprocess.run(
        [sys.executable, "-m", "tf1_awd_sparse.awd_lm", "train", "--out",
         out, "--resume"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(os.path.join(out, "plain", "summary.json")) as handle:
        assert json.load(handle)["epochs_run"] == 6


#: The distributed programs' tiny model on the embedded corpus.
MONITORED_HPARAMS = TINY_HPARAMS


@pytest.fixture(scope="module")
def monitored_dir(tmp_path_factory):
    """A model directory of ``awd-lm monitored`` (2 steps, in this
    process) and its checkpoint prefix."""
    import tensorflow.compat.v1 as tf
    from tf1_awd_sparse.awd_lm.programs import monitored
    model_dir = str(tmp_path_factory.mktemp("monitored") / "model")
    verbosity = tf.logging.get_verbosity()
    try:
        with tf.Graph().as_default():
            monitored.run(["--model-dir", model_dir, "--hparams",
                           MONITORED_HPARAMS, "--threads", "1",
                           "--train-steps", "2"])
    finally:
        tf.logging.set_verbosity(verbosity)
    return model_dir, tf.train.latest_checkpoint(model_dir)


def test_monitored_evaluates_a_damaged_checkpoint_in_one_line(
        monitored_dir, tmp_path):
    """--evaluate-only restores through `checkpoints.restore` (was
    ``saver.restore``: TensorFlow's traceback): a truncated data file, a
    missing one, and a checkpoint of another model's sizes."""
    model_dir, prefix = monitored_dir
    copies = {}
    for damage in ("truncated data", "missing data", "other sizes"):
        copy = str(tmp_path / damage.replace(" ", "_"))
        shutil.copytree(model_dir, copy)
        state = os.path.join(copy, "checkpoint")   # its paths: the copy's
        with open(state) as handle:
            text = handle.read().replace(model_dir, copy)
        with open(state, "w") as handle:
            handle.write(text)
        data_file = glob.glob(os.path.join(
            copy, os.path.basename(prefix) + ".data-*"))[0]
        if damage == "truncated data":
            with open(data_file, "rb") as handle:
                whole = handle.read()
            with open(data_file, "wb") as handle:
                handle.write(whole[:len(whole) // 2])
        elif damage == "missing data":
            os.remove(data_file)
        else:   # config.json describes a wider model than was trained
            config = os.path.join(copy, modeldir.CONFIG_FILE)
            with open(config) as handle:
                stored = json.load(handle)
            stored["params"]["hidden_size"] += 1
            with open(config, "w") as handle:
                json.dump(stored, handle)
        copies[damage] = (copy, data_file)
    results = _run([["monitored", "--model-dir", copy, "--evaluate-only",
                     "--threads", "1"] for copy, _ in copies.values()]
                   + [["monitored", "--model-dir", model_dir,
                       "--evaluate-only", "--threads", "1"]])
    for (damage, (copy, data_file)), result in zip(copies.items(), results):
        code, _, err = result
        lines = [line for line in err.strip().splitlines()
                 if line.startswith("error: ") or "Traceback" in line]
        assert (code, len(lines)) == (2, 1), (damage, err[-3000:])
        assert os.path.join(copy, os.path.basename(prefix)) in lines[0]
        if damage != "other sizes":
            assert os.path.basename(data_file) in lines[0], lines[0]
        else:   # TensorFlow's cause: the shapes that differ
            assert "cannot restore this checkpoint" in lines[0], lines[0]
    assert results[-1][0] == 0 and "eval: " in results[-1][1], results[-1]


@pytest.mark.parametrize("module, argv", [
    ("tf1_awd_sparse.awd_lm.generate", ["--num-words", "3", "--seed", "1"]),
    ("tf1_awd_sparse.awd_lm.programs.info", [])])
def test_an_old_module_path_into_a_closed_pipe_ends_silently(trained, module,
                                                             argv):
    """``python -m tf1_awd_sparse.awd_lm.generate ... | head -0`` went past
    `programs.main`: BrokenPipeError at exit, status 120."""
    child = subprocess.Popen(
        [sys.executable, "-m", module] + (["--model", trained["tflite"]]
                                          if argv else [trained["tflite"]])
        + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    child.stdout.close()
    # Nothing but the TFLite runtime's own note (TF 2.x: "INFO: Created
    # TensorFlow Lite XNNPACK delegate for CPU.").
    err = [line for line in child.stderr.read().decode().splitlines()
           if not line.startswith("INFO: ")]
    child.stderr.close()
    assert (child.wait(timeout=120), err) == (141, [])


def test_ctrl_c_in_an_old_module_path_is_one_line(tmp_path):
    """``python -m tf1_awd_sparse.awd_lm.monitored`` stopped by Ctrl-C in
    training (was KeyboardInterrupt's traceback): one line, status 130,
    naming how to continue, which the same command then does."""
    argv = [sys.executable, "-m", "tf1_awd_sparse.awd_lm.monitored",
            "--model-dir", str(tmp_path / "m"), "--hparams",
            MONITORED_HPARAMS, "--threads", "1", "--train-steps", "40",
            "--save-steps", "1", "--log-steps", "1", "--eval-steps", "1"]
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    child = subprocess.Popen(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True,
                             env=env, cwd=ROOT)
    seen = []
    for line in child.stderr:   # until its second step is logged
        seen.append(line)
        if line.startswith("train: step 2 "):
            child.send_signal(signal.SIGINT)
            break
    rest = child.stderr.read()
    child.stderr.close()
    child.stdout.close()
    assert child.wait(timeout=120) == 130, "".join(seen) + rest
    assert "Traceback" not in rest, rest
    assert rest.strip().splitlines()[-1] == (
        "interrupted; the same command continues from --model-dir's latest "
        "checkpoint"), rest
    done = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    trained_line = json.loads(done.stdout.split("train: ", 1)[1]
                              .splitlines()[0])
    assert trained_line["global_step"] == 40
    assert 0 < trained_line["steps"] < 40   # it went on from a checkpoint
