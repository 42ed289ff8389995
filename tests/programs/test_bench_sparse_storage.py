"""benchmarks/bench_sparse_storage.py: its block mask zeroes the blocks of
smallest mean magnitude (numpy loop reference), and in its tiny
configuration it runs end to end (TF 2.x), printing a row per file whose
sparse files agree with their dense twins; TF 1.x prints why it does not
run."""
import io
import os
import contextlib

import numpy as np
import pytest

from support import BENCHMARKS, load_program
from tf1_awd_sparse.export import sparse_storage

bench = load_program(os.path.join(BENCHMARKS, "bench_sparse_storage.py"))


@pytest.mark.parametrize("axis, block, shape", [
    (0, 4, (32, 48)), (1, 4, (32, 48)), (1, 16, (32, 48)),
    (1, 16, (32, 40)), (0, 16, (40, 32))])   # a partial last block of 8
def test_the_block_mask_zeroes_the_blocks_of_smallest_mean(axis, block,
                                                           shape):
    value = np.random.RandomState(block).randn(*shape).astype(np.float32)
    got = bench.masked(value, axis, block, 0.75)
    moved = np.moveaxis(value, axis, -1)
    kept = np.moveaxis(got, axis, -1)
    means = []
    for index in np.ndindex(moved.shape[:-1]):
        for start in range(0, moved.shape[-1], block):
            piece = kept[index][start:start + block]
            assert np.all(piece == 0) or np.array_equal(
                piece, moved[index][start:start + block])
            means.append((np.abs(moved[index][start:start + block]).mean(),
                          bool(np.any(piece != 0))))
    zeroed = [n for n, alive in means if not alive]
    alive = [n for n, alive in means if alive]
    assert max(zeroed) < min(alive)
    assert len(zeroed) == pytest.approx(0.75 * len(means), abs=1)


def test_the_tiny_run_prints_every_file():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.main(["--tiny", "--rounds", "2", "--tokens", "3"])
    text = out.getvalue()
    if not sparse_storage.available():
        assert "needs TensorFlow 2.x" in text
        return
    for name, _, _, _ in bench.FILES:
        assert text.count("  %-12s " % name) >= 3, name
    # The XNNPACK check: one line per sparse file, a result per runtime
    # (read in one child process per runtime).
    labels = [label for label, _, _ in bench.runtimes()]
    for name, _, stored, _ in bench.FILES:
        if stored is None or name.startswith(("dense", "int8 dense")):
            continue
        line = [l for l in text.splitlines()
                if l.startswith("    %-12s " % name)]
        assert len(line) == 1 and all(
            "%s: " % label in line[0] for label in labels), (name, line)
    # Sparse files against their dense twins: float to ~1e-8, int8 exactly.
    for line in text.splitlines():
        if line.startswith(("  float csr ", "  int8 csr ")) and \
                "dense" in line and "x uint8" not in line and "fill" \
                not in line and "ms" not in line:
            figures = [f for f in line.split()[4:] if f != "-"]
            assert figures and all(float(f) < 1e-5 for f in figures), line


@pytest.mark.skipif(not sparse_storage.available(),
                    reason="the bench runs on TF 2.x only")
def test_a_trained_model_directory_is_timed_as_it_was_pruned(tmp_path):
    """--model QAT_DIR: the files of that model's own weights (here a tiny
    quantization-aware model in 1 x 16 blocks), each sparse one agreeing
    with its dense twin."""
    from tf1_awd_sparse.awd_lm.config import modeldir
    vocab, emb, hidden, layers = bench.TINY[0][1]
    params = bench.model.check_params(dict(bench.presets.params_for(
        "demo", "awd", {"emb_size": emb, "hidden_size": hidden,
                        "num_layers": layers}),
        vocab_size=vocab, quant_delay=0, quant=True))
    prefix = bench.checkpoints(str(tmp_path), params.replace(
        use_vd=False))["1x16 blocks"]
    run = os.path.dirname(prefix)
    words = ["<unk>", "<eos>"] + ["w%d" % i for i in range(vocab - 2)]
    modeldir.write_config(run, params, words, modeldir.produced_by(params),
                          checkpoint=os.path.basename(prefix))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.main(["--model", run, "--rounds", "2", "--tokens", "3"])
    text = out.getvalue()
    assert text.startswith(run + " (trained")
    fast = [line for line in text.splitlines()
            if line.startswith("  int8 fast ") and "fill" in line][0]
    assert "int8 1x16 densify+kernel" in fast
    twins = [line for line in text.splitlines()
             if line.startswith("  int8 fast ") and "int8 dense" in line]
    assert twins and all(float(f) == 0 for f in twins[0].split()[6:]
                         if f != "-"), twins


@pytest.mark.skipif(not sparse_storage.available(),
                    reason="the bench runs on TF 2.x only")
def test_a_child_that_ends_before_a_result_is_that_files_result(tmp_path):
    """The XNNPACK check reads its files in one child process; a child
    that ends on a file (here: a runtime it does not know, before the
    first file) gives that file its error and a new child the rest."""
    missing = str(tmp_path / "missing.tflite")
    results = bench.xnnpack_logits([missing], "no-such-runtime", [1, 2],
                                   {}, str(tmp_path))
    assert len(results) == 1 and results[0][0] is None
    assert results[0][1].startswith("fails: ") and "KeyError" in \
        results[0][1], results
