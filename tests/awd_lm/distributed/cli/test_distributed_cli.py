"""The distributed programs' shared command line: --hparams parsing."""
import pytest

from tf1_awd_sparse.awd_lm import estimator


def test_parse_hparams_types_and_errors():
    got = estimator.parse_hparams("emb_size=16, lr=2.5,variable_bptt=false")
    assert got == {"emb_size": 16, "lr": 2.5, "variable_bptt": False}
    assert estimator.parse_hparams("") == {}
    with pytest.raises(ValueError, match="nonsense"):
        estimator.parse_hparams("nonsense=1")
    with pytest.raises(ValueError, match="emb_size"):
        estimator.parse_hparams("emb_size")
