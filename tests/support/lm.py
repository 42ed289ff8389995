"""The language model's test harness: the training script loaded as a
module, a tiny configuration of it, a patterned corpus in the PTB layout,
tiny model parameters and features, and the agreement the uint8 file keeps
with its TF checkpoint."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support import ROOT, load_program
from support.tolerances import perplexity_rtol

SCRIPT = os.path.join(ROOT, "examples", "awd_lm.py")

# Loaded under another name: "awd_lm" is the package the script uses.
script = load_program(SCRIPT, "awd_lm_script")

TINY = ["--preset", "demo", "--emb-size", "8", "--hidden-size", "16",
        "--num-layers", "2", "--batch-size", "4", "--eval-batch-size", "2",
        "--bptt", "8", "--threads", "1", "--no-progress", "--lr", "5"]


WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]


def write_ptb(d, shuffled_valid=False):
    """A patterned corpus; with `shuffled_valid` the validation text is the
    same words in random order, so validation worsens as training fits
    the pattern (which makes NT-ASGD switch to averaging)."""
    lines = [" ".join(WORDS[(i * 3 + j) % 8] for j in range(4 + i % 5))
             for i in range(120)]
    valid = lines[80:100]
    if shuffled_valid:
        rng = np.random.RandomState(0)
        valid = [" ".join(rng.choice(WORDS, 6)) for _ in range(20)]
    for split, chunk in (("train", lines[:80]), ("valid", valid),
                         ("test", lines[100:] + ["zebra cat"])):
        with open(os.path.join(d, split + ".txt"), "w") as f:
            f.write("\n".join(chunk) + "\n")


def ptb_with(tmp_path, **texts):
    """A PTB-layout directory ``tmp_path/ptb``: `write_ptb`'s corpus with
    the given splits replaced by ``texts`` (``valid="a\\n"``)."""
    data_dir = str(tmp_path / "ptb")
    os.mkdir(data_dir)
    write_ptb(data_dir)
    for split, text in texts.items():
        with open(os.path.join(data_dir, split + ".txt"), "w") as f:
            f.write(text)
    return data_dir


#: The distributed programs' tiny model on their embedded corpus (HMM
#: text), as their ``--hparams`` flag takes it.
TINY_HPARAMS = ("emb_size=4,hidden_size=8,num_layers=2,batch_size=2,"
                "eval_batch_size=3,bptt=5,hmm_vocab=20,hmm_states=2,"
                "hmm_train=600,hmm_valid=200,hmm_test=100,lr=2.0")

#: The tiny language model's parameters (what `model.build_lm` reads): a
#: test that needs other values passes ``dict(PARAMS, ...)``.
PARAMS = {"vocab_size": 11, "emb_size": 4, "hidden_size": 6, "num_layers": 2,
          "dropout": 0.4, "dropouth": 0.25, "dropouti": 0.4, "dropoute": 0.1,
          "wdrop": 0.5, "alpha": 2.0, "beta": 1.0, "wdecay": 1e-3}

#: An AWD model with variational dropout masks, as the distributed
#: programs' model function and evaluation take it (their tests share it).
AWD_VD_PARAMS = dict(vocab_size=20, emb_size=4, hidden_size=6,
                     num_layers=2, model="awd", wdrop=0.5, use_vd=True,
                     lr=1.0, clip=0.25)


def make_features(batch=3, steps=5, seed=0):
    """({"inputs", "targets"} int32 constants [batch, steps], the ids
    [batch, steps + 1] they come from), for a model of PARAMS."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(0, PARAMS["vocab_size"], (batch, steps + 1))
    return {"inputs": tf.constant(ids[:, :-1], tf.int32),
            "targets": tf.constant(ids[:, 1:], tf.int32)}, ids


def untrained_lm_file(folder, num_steps, batch_size=2):
    """Exports a language model of PARAMS with its initial (untrained)
    weights to ``folder/lm.tflite`` and returns its path: for tests where
    only the file's structure or signature matters."""
    # Imported here: the harness is loaded by tests of every floor, and
    # the exporter is the awd_lm's inference floor.
    from tf1_awd_sparse.awd_lm.graph import model
    from tf1_awd_sparse.awd_lm.inference import export
    params = dict(PARAMS, model="awd")
    with tf.Graph().as_default():
        features, _ = make_features()
        model.build_lm(features, "eval", params)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            checkpoint = tf.train.Saver().save(
                sess, os.path.join(str(folder), "lm"))
    path = os.path.join(str(folder), "lm.tflite")
    export.export_lm(params, checkpoint, path, batch_size=batch_size,
                     num_steps=num_steps)
    return path


def usage_flags(program):
    """The flags of ``program``'s usage line (``--help``): the reference
    of what its lines may name."""
    import contextlib
    import io
    import re
    text = io.StringIO()
    with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
        program.parse_args(["--help"])
    usage = text.getvalue().split("\n\n")[0]
    return set(re.findall(r"--[a-z][a-z-]*", usage))


def names_only_its_flags(line, program):
    """Asserts that an error ``line`` names no flag ``program`` lacks."""
    import re
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    assert flags <= usage_flags(program), (
        flags - usage_flags(program), line)


def one_error_line(capsys, call):
    """Runs ``call``; returns the one stderr line it ended with (exit 2)."""
    with pytest.raises(SystemExit) as stop:
        call()
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


#: Measured on this model (issue 33; the uint8 file's per-token
#: log-probabilities against its quantization-aware TF checkpoint's, mean /
#: max in nats, and the perplexities' relative difference; with the cache
#: alike): TF 1.13.1 8e-5 / 0.009, 8e-5; 1.15.5 3.1e-4 / 0.030, 6e-5;
#: 2.15.1 3.8e-4 / 0.027, 5e-5; 2.21 1.6e-4 / 0.027, 4e-5 (the logits are
#: 8 bits and the state is re-quantized at every window boundary). On an
#: AMD EPYC machine without AVX-512 (2026-12-03) TFLite's uint8 kernels
#: round otherwise: the perplexities of 2.15.1 differed by 4.0e-4, with and
#: without the cache. Allowed: about 2.5 times the worst (the allowance
#: was 0.01 / 0.25 and 0.005).
UINT8_TOKEN_ATOL = 0.075
UINT8_TOKEN_MEAN = 1e-3
#: Derived from the mean: perplexities are exp(-mean log p), so they differ
#: relatively by at most expm1(mean |difference|) = 1.0005e-3.
UINT8_PPL_RTOL = perplexity_rtol(UINT8_TOKEN_MEAN)

#: How far two float32 evaluations of a test LM's per-token
#: log-probabilities may be apart (nats): the TF graph in other shapes
#: (window, batch rows, one run against windows) or the float TFLite file
#: (XNNPACK: other blocking of every sum). One step of the test LMs
#: (hidden size <= 16) is, per layer, a dot product of at most 2 * 16 + 1
#: terms of sum |term| <~ 10 (lstm_atol(1, 33, 10) = 2.0e-5), then the
#: decoder's 17-term dot product reading h (|W| sums <~ 3) and a
#: log-softmax (a few ulp-sized roundings of values <~ 10): <~ 1e-4 for
#: one step. Earlier steps' errors
#: reach it through the forget gates (< 1 each step), which shrink them,
#: so this per-step bound holds over the whole text; measured at most
#: 1.0e-6 (issue 33).
FLOAT_LOG_PROB_ATOL = 1e-4

#: The perplexity of the same text scored by two float32 evaluations.
FLOAT_PPL_RTOL = perplexity_rtol(FLOAT_LOG_PROB_ATOL)
