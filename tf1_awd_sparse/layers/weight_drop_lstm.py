"""``WeightDropLSTMCell`` and ``WeightDropLSTM``: AWD-LSTM's LSTM with
DropConnect on the recurrent weights, as a cell and as a sequence layer.

DropConnect (Merity, Keskar, Socher 2017) zeroes entries of the recurrent
(hidden-to-hidden) weight matrix with **one mask for the whole sequence**.
Here the masked kernel is computed once per ``session.run``, outside any
``dynamic_rnn`` / ``tf.while_loop`` loop, and every time step multiplies by
that same tensor, so a training step costs about what ``LSTMCell`` costs.

The public module of both classes (also the top-level ``weight_drop_lstm``):
the cell lives in :mod:`.weight_drop_lstm_cell`, the layer in
:mod:`.weight_drop_lstm_layer` (which imports the cell; so the cell's module
cannot import the layer back, and both are gathered here). The names are
the same class objects as there.
"""
from __future__ import absolute_import, division, print_function

from tf1_awd_sparse.base import names as _names
from tf1_awd_sparse.layers.weight_drop_lstm_cell import WeightDropLSTMCell
from tf1_awd_sparse.layers.weight_drop_lstm_layer import WeightDropLSTM
from tf1_awd_sparse.transforms.kernel import SPARSITY_CHOICES, sparsity_technique

__all__ = ["WeightDropLSTMCell", "WeightDropLSTM", "SPARSITY_CHOICES",
           "sparsity_technique"]


def __getattr__(name):
    # Names that moved or went (base/names.py's table).
    return _names.moved_attribute(__name__, name)
