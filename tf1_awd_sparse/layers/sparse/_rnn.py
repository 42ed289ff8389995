"""RNN cell machinery shared by the VD and L0 `RNNCell` / `LSTMCell`.

A cell gets its pre-activation `[x, h] @ W` from a `HeldWeights` of its
technique (VD overrides it in `variational_dropout.rnn`). It builds its
noise or gate sample lazily, at the cell's first call of each run, under
`once_per_run` (the library's one way out of the `tf.while_loop` context of
`dynamic_rnn`, keeping the caller's control inputs from outside the loop),
so the sample is made once per run (`session.run`; eagerly, one call of
an RNN function; inside `tf.function`, one call of the function) and the
same value is used at every time step.
"""
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.ops.sparse import layer_utils
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.checks import (
    ParamsError, check_tensor, check_training)
from tf1_awd_sparse.base.scalar_checks import check_positive_int, check_real
from tf1_awd_sparse.base.control_flow import PerRun, smart_cond
from tf1_awd_sparse.ops.sparse.common import check_sparse_options


RNN_CELL_DOC = """
    Other arguments:
      kernel_weights: (theta, aux) pair, each of shape
        [input_size + num_units, num_units].
      bias_weights: tensor [num_units].
      num_units: positive int.
      activation: default tanh.
      reuse, name: as for `tf.nn.rnn_cell.RNNCell`.

    Raises:
      ParamsError (a ValueError, and a RuntimeError for older code):
        malformed `kernel_weights`/`bias_weights` (shapes and dtypes
        named).
      ValueError: bad `num_units` or technique option; inputs whose width
        does not fit the kernel's rows.
      TypeError: `training` neither a bool, None nor a tf.bool tensor;
        inputs of another dtype than the kernel.
"""

LSTM_CELL_DOC = """
    Other arguments:
      kernel_weights: (theta, aux) pair, each of shape
        [input_size + num_units, 4 * num_units].
      bias_weights: tensor [4 * num_units].
      forget_bias: added to the forget gate (1.0 like `LSTMCell`).
      num_units, activation, reuse, name: as for `RNNCell`.

    Raises:
      as `RNNCell`.
"""


def concat_matmul(weights):
    """Returns fn(x, h) = concat([x, h], 1) @ weights."""
    return lambda x, h: tf.matmul(tf.concat([x, h], 1), weights)


def split_rows(tensor, input_size):
    """(tensor[:input_size], tensor[input_size:]): input and hidden parts."""
    return tensor[:input_size], tensor[input_size:]


class HeldWeights(object):
    """Builds a cell's pre-activation `[x, h] @ W` for one technique.

    The default is one weight sample per run (`nn.train_weights`, the L0
    way) or the evaluation weights (`nn.eval_weights`), chosen by
    `training`; a technique that samples differently (VD's per-example
    input noise) overrides `make`.

    Args:
      technique: a `sparse_layers.techniques` entry.
      kernel_weights: (theta, aux) pair, each [input_size + num_units,
        num_gates * num_units].
      training: Python bool, scalar tf.bool tensor, or None (= True).
      options: the technique's options by name (train and eval ones).
    """

    def __init__(self, technique, kernel_weights, training, options):
        self.technique = technique
        self.params = layer_utils.check_params(kernel_weights,
                                               "kernel_weights", rank=2)
        self.training = check_training(training)
        check_sparse_options(**options)
        self.options = options

    def eval_weights(self):
        """The evaluation kernel."""
        return self.technique.nn.eval_weights(
            self.params, **self.technique.select(self.options, "eval"))

    def make(self, inputs, input_size):
        """Returns fn(x, h) -> pre-activations; called outside the loop.

        Args:
          inputs: the first step's input (only its static shape and dtype
            are used; it may live inside a while loop).
          input_size: python int, the width of the inputs.
        """
        weights = smart_cond(
            self.training,
            lambda: self.technique.nn.train_weights(
                self.params, **self.technique.select(self.options, "train")),
            self.eval_weights)
        return concat_matmul(weights)


class _SparseCell(tf.nn.rnn_cell.RNNCell):
    """Shared parts: argument checks, lazy held sample, pre-activations."""

    _NUM_GATES = 1

    def __init__(self, held_weights, bias_weights, num_units, activation=None,
                 reuse=None, name=None):
        super(_SparseCell, self).__init__(_reuse=reuse, name=name)
        self._num_units = num_units = check_positive_int(num_units,
                                                         "num_units")
        self._held = held_weights
        self._activation = activation or tf.tanh
        width = self._NUM_GATES * num_units
        theta = held_weights.params[0]
        if dimension_value(theta.shape[1]) not in (None, width):
            raise ParamsError(
                "kernel_weights must have shape [input_size + num_units, %d] "
                "(%d x num_units=%d), got %s"
                % (width, self._NUM_GATES, num_units, theta.shape))
        if dimension_value(theta.shape[0]) is not None and \
                dimension_value(theta.shape[0]) <= num_units:
            raise ParamsError(
                "kernel_weights must have more than num_units=%d rows "
                "(input_size + num_units), got %s" % (num_units, theta.shape))
        try:
            self._bias = check_tensor(bias_weights, "bias_weights",
                                      dtype=theta.dtype,
                                      dtype_of="the dtype of kernel_weights")
        except TypeError as error:
            raise ParamsError(str(error))
        if not self._bias.shape.is_compatible_with([width]):
            raise ParamsError("bias_weights must have shape [%d], got %s"
                              % (width, self._bias.shape))
        self._preactivation = PerRun(type(self).__name__)
        self._input_size = None

    @property
    def state_size(self):
        """num_units: the state is h."""
        return self._num_units

    @property
    def output_size(self):
        """num_units."""
        return self._num_units

    def build(self, inputs_shape):
        """Checks the input width against the kernel's rows."""
        inputs_shape = tf.TensorShape(inputs_shape)
        input_size = dimension_value(inputs_shape[-1])
        rows = dimension_value(self._held.params[0].shape[0])
        if input_size is None:
            raise ValueError("the cell's inputs need a known last dimension, "
                             "got shape %s" % inputs_shape)
        if rows is not None and rows != input_size + self._num_units:
            raise ValueError(
                "inputs (shape %s) do not fit kernel_weights: it has %d "
                "rows but input_size + num_units = %d + %d"
                % (inputs_shape, rows, input_size, self._num_units))
        self._input_size = input_size
        self.built = True

    def _gates(self, inputs, h):
        """[x, h] @ W + b with the run's held noise / gates."""
        check_tensor(inputs, "inputs", dtype=self._held.params[0].dtype,
                     dtype_of="the dtype of kernel_weights")
        # Outside any while loop: one sample per run.
        preactivation = self._preactivation.get(
            lambda: self._held.make(inputs, self._input_size))
        return preactivation(inputs, h) + self._bias


class SparseRNNCell(_SparseCell):
    """h' = activation([x, h] @ W + b)."""

    @_compat.do_not_convert
    def call(self, inputs, state):
        """One step; returns (output, new_state), both h'."""
        output = self._activation(self._gates(inputs, state))
        return output, output


class SparseLSTMCell(_SparseCell):
    """LSTM with the gate layout of `tf.nn.rnn_cell.LSTMCell` (i, j, f, o)."""

    _NUM_GATES = 4

    def __init__(self, held_weights, bias_weights, num_units,
                 forget_bias=1.0, activation=None, reuse=None, name=None):
        super(SparseLSTMCell, self).__init__(held_weights, bias_weights,
                                             num_units, activation, reuse,
                                             name)
        self._forget_bias = check_real(forget_bias, "forget_bias")

    @property
    def state_size(self):
        """LSTMStateTuple(c=num_units, h=num_units)."""
        return tf.nn.rnn_cell.LSTMStateTuple(self._num_units,
                                             self._num_units)

    @_compat.do_not_convert
    def call(self, inputs, state):
        """One step; state is an `LSTMStateTuple(c, h)`."""
        c, h = state
        i, j, f, o = tf.split(self._gates(inputs, h), 4, axis=1)
        new_c = (c * tf.sigmoid(f + self._forget_bias)
                 + tf.sigmoid(i) * self._activation(j))
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, tf.nn.rnn_cell.LSTMStateTuple(new_c, new_h)
