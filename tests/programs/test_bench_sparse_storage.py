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
    # Sparse files against their dense twins: float to ~1e-8, int8 exactly.
    for line in text.splitlines():
        if line.startswith(("  float csr ", "  int8 csr ")) and \
                "dense" in line and "x uint8" not in line and "fill" \
                not in line and "ms" not in line:
            figures = [f for f in line.split()[4:] if f != "-"]
            assert figures and all(float(f) < 1e-5 for f in figures), line
