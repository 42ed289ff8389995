"""``WeightDropLSTMCell`` and ``WeightDropLSTM``: AWD-LSTM's LSTM with DropConnect on the recurrent weights.

The same module as :mod:`tf1_awd_sparse.layers.weight_drop_lstm` (this name stays importable; the code lives
on its floor, see docs/architecture.md)."""
import sys

from tf1_awd_sparse.layers import weight_drop_lstm as _module

sys.modules[__name__] = _module
