"""The export tests' shared fixture: one trained, exported model."""
import pytest

from support import quantized_graph


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """A rewritten LSTM + GRU model trained once and its uint8 file (see
    `support.quantized_graph.exported`), shared by the call's tests and
    the audit's."""
    for value in quantized_graph.exported(
            str(tmp_path_factory.mktemp("quantized_graph"))):
        yield value
