"""The pipeline's choice of a technique from its rows (`rows.choose`):
the rows that reached the target first, and one line when none did."""
import pytest

from tf1_awd_sparse.awd_lm.training.compression import rows as rows_


def _rows(*specs):
    return [{"technique": t, "valid_ppl": v, "nonzero_weights": nz,
             "total_weights": 1000, "sparsity": 1 - nz / 1000.}
            for t, v, nz in specs]


def test_choose_prefers_the_rows_that_reached_the_target():
    lines = []
    # l0 has the best perplexity but 1 weight short of 900 zeros.
    rows = _rows(("l0", 100.0, 101), ("magnitude", 105.0, 100),
                 ("variational_dropout", 103.0, 95))
    row, reached = rows_.choose(rows, 0.9, lines.append)
    assert (row["technique"], reached) == ("variational_dropout", True)
    assert lines == []


def test_choose_says_so_when_no_row_reached_the_target():
    """Then the sparsest is carried on, not the densest's better
    perplexity (which would reward missing the target)."""
    lines = []
    rows = _rows(("l0", 95.0, 150), ("magnitude", 99.0, 120))
    row, reached = rows_.choose(rows, 0.9, lines.append)
    assert (row["technique"], reached) == ("magnitude", False)
    assert len(lines) == 1 and "no technique reached" in lines[0]
    with pytest.raises(ValueError, match="no sparse rows"):
        rows_.choose([], 0.9)
