"""benchmarks/bench_fused.py in its tiny configuration: a row per file,
the fused files with one LSTM op per layer, each file's logits within the
quantization of its reference; TF 1.x prints why it does not run."""
import contextlib
import io
import os

import pytest

from support import BENCHMARKS, load_program
from tf1_awd_sparse.export import sparse_format

bench = load_program(os.path.join(BENCHMARKS, "bench_fused.py"))


def _tiny(program, *flags):
    """What ``program``'s tiny run prints, or None on TF 1.x (where it
    says why it does not run)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        program.main(["--tiny", "--rounds", "2", "--tokens", "3"]
                     + list(flags))
    text = out.getvalue()
    if not sparse_format.available():
        assert "needs TensorFlow 2.x" in text
        return None
    return text


def test_the_tiny_run_prints_every_file():
    text = _tiny(bench)
    if text is None:
        return
    assert "the fastest dense file: dense " in text
    rows = {}
    for name, _, _, _, ref in bench.FILES:
        line = [l for l in text.splitlines()
                if l.startswith("  %-20s " % name)]
        assert len(line) == 1, name
        fields = line[0][2:].split()
        rows[name] = fields
        lstm = int(fields[len(name.split()) + 2])
        assert lstm == (2 if name.startswith("fused") else 0), line
        if ref is not None:
            diff = float(fields[len(name.split()) + 6])
            # float: rounding; int8: the inputs' and weights' int8 grids
            # (the tiny model's logits are ~0.03).
            assert diff < (1e-6 if "float" in name else 2e-3), line


def test_a_table_rank_adds_its_fused_file():
    """--table-rank R: a fused int8 1 x 16 file whose table has a dense
    rank-R part, two LSTM ops, more bytes than the file without it; R:K
    the part on the first K of the 60 words: fewer bytes than on all."""
    text = _tiny(bench, "--table-rank", "4", "--table-rank", "4:20")
    if text is None:
        return
    sizes = {}
    for name in ("fused int8 1x16", "fused 1x16 rank 4",
                 "fused 1x16 rank 4 k20"):
        line = [l for l in text.splitlines()
                if l.startswith("  %-20s " % name)]
        assert len(line) == 1, (name, text)
        fields = line[0][2:].split()
        assert int(fields[len(name.split()) + 2]) == 2, line
        sizes[name] = int(fields[len(name.split())])
    assert sizes["fused 1x16 rank 4"] > sizes["fused 1x16 rank 4 k20"] > \
        sizes["fused int8 1x16"]


@pytest.mark.parametrize("value", ["0", "4:0", "a", "4:2:1", "-1"])
def test_a_bad_table_rank_is_refused(value):
    with pytest.raises(SystemExit):
        bench.main(["--tiny", "--table-rank", value])


def test_sizes_name_the_random_model():
    """--sizes V,E,H,L: the random model of those sizes (its line names
    them), every file of it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.main(["--sizes", "50,16,24,2", "--rounds", "2", "--tokens",
                    "3"])
    text = out.getvalue()
    if not sparse_format.available():
        assert "needs TensorFlow 2.x" in text
        return
    assert text.startswith("random weights: vocabulary 50 tied to 16-d, "
                           "LSTM [24, 16];"), text
    for name, _, _, _, _ in bench.FILES:
        assert any(l.startswith("  %-20s " % name)
                   for l in text.splitlines()), name


@pytest.mark.parametrize("value", ["50,16,24", "50,16,24,1", "a,b,c,d",
                                   "50,0,24,2"])
def test_bad_sizes_are_refused(value):
    with pytest.raises(SystemExit):
        bench.main(["--sizes", value])


def test_the_decoder_benchmark_prints_its_three_layouts():
    text = _tiny(load_program(os.path.join(BENCHMARKS,
                                           "bench_sparse_rows.py")))
    if text is None:
        return
    for label in ("the decoder alone", "rank 16: a block on every row",
                  "rank 16: a second product"):
        line = [l for l in text.splitlines() if l.startswith("  " + label)]
        assert len(line) == 1, (label, text)
        assert float(line[0].split()[-2]) > 0
