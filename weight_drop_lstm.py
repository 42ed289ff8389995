"""``WeightDropLSTMCell`` and ``WeightDropLSTM``: AWD-LSTM's LSTM with
DropConnect on the recurrent weights, as a cell and as a sequence layer.

DropConnect (Merity, Keskar, Socher 2017) zeroes entries of the recurrent
(hidden-to-hidden) weight matrix with **one mask for the whole sequence**.
Here the masked kernel is computed once per ``session.run``, outside any
``dynamic_rnn`` / ``tf.while_loop`` loop, and every time step multiplies by
that same tensor, so a training step costs about what ``LSTMCell`` costs.

The public module of both classes (the design card's name): the cell is
defined in :mod:`tf1_awd_sparse.layers.weight_drop_lstm_cell`, the layer in
:mod:`tf1_awd_sparse.layers.weight_drop_lstm`, the sparsity choices in
:mod:`tf1_awd_sparse.transforms.kernel`; the names here are those objects.
"""
from tf1_awd_sparse.layers.weight_drop_lstm import WeightDropLSTM
from tf1_awd_sparse.layers.weight_drop_lstm_cell import WeightDropLSTMCell
from tf1_awd_sparse.transforms.kernel import SPARSITY_CHOICES, sparsity_technique

__all__ = ["WeightDropLSTMCell", "WeightDropLSTM", "SPARSITY_CHOICES",
           "sparsity_technique"]
