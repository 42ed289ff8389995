"""The evaluation graph of a cell stack that the TFLite models are made
of: eval-mode copies of the trained cells, built once, unrolled over a
fixed number of steps with strided slices (TOCO in TF 1.13 converts no
while loop and no quantized ``Unpack``), with the model's named state
inputs and outputs. ``awd_lm.inference.export`` builds the language
model's file with the same pieces.
"""
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.export import graphdef
from tf1_awd_sparse.ops import fake_quant as fq

__all__ = ["INPUT_NAME", "OUTPUT_NAME", "eval_cell", "build_cells",
           "unroll", "state_inputs", "stack_outputs", "final_state_outputs",
           "state_input_stats"]

#: Name of the models' input tensor (``[batch, steps, depth]`` float32 for
#: a cell stack, ``[batch, steps]`` int32 word ids for the language model).
INPUT_NAME = "inputs"
#: Name of a cell stack model's output, ``[batch, steps, h_depth]``.
OUTPUT_NAME = "outputs"


def eval_cell(cell, is_quant):
    """An unbuilt eval-mode copy of ``cell``: fake-quant for the uint8
    model; for the float model the float cell, or for
    ``quant_activation='hard'`` the quantized cell with every fake-quant
    bypassed (float hard sigmoid / ReLU, the function that was trained).

    Args:
      cell: a ``WeightDropLSTMCell`` (its config is copied, not its
        variables).
      is_quant: bool, True for the copy the uint8 model is made of.

    Returns:
      a new cell of ``type(cell)`` with ``is_train=False``,
      ``quant_delay=0`` and tuple ``(c, h)`` state, to be built in the
      current graph (:func:`build_cells`).

    Raises:
      whatever ``from_config`` raises for the config (nothing for a config
      of a cell that was built).
    """
    config = dict(cell.get_config())
    hard = config.get("quant_activation") == "hard" and config["is_quant"]
    # The model's state inputs / outputs are (c, h) pairs whatever the
    # trained cell's state_is_tuple (the variables do not depend on it).
    config.update(is_train=False, is_quant=is_quant or hard, quant_delay=0,
                  state_is_tuple=True)
    copy = type(cell).from_config(config)
    if copy.quantizer is not None:
        copy.quantizer.float_only = hard and not is_quant
    return copy


def build_cells(cells, batch_size, depth):
    """Builds each cell (in the scopes :func:`unroll` uses, ``layer_<l>``
    under the current variable scope) with one call on zeros; the call's
    ops feed no output and are pruned from the model.

    Args:
      cells: list of unbuilt cells, bottom first.
      batch_size: int, the model's batch.
      depth: int, the bottom cell's input depth.

    Returns:
      None; the cells are built (their variables exist).
    """
    x = tf.zeros([batch_size, depth])
    for layer, cell in enumerate(cells):
        with tf.variable_scope("layer_%d" % layer, reuse=tf.AUTO_REUSE):
            x, _ = cell(x, cell.zero_state(batch_size, tf.float32))


def unroll(cells, inputs, initial_state):
    """Runs a cell stack over a fixed number of steps, without a while loop
    and without ``Unpack`` (the time axis is sliced with strided slices).

    Args:
      cells: list of cells, bottom first, built by :func:`build_cells` in
        the same variable scope (each runs in ``layer_<l>``, reused).
      inputs: float32 ``[batch, steps, depth]`` tensor with a static
        ``steps``.
      initial_state: list (per cell) of ``LSTMStateTuple(c, h)``, float32
        ``[batch, c_depth]`` / ``[batch, h_depth]``.

    Returns:
      ``(outputs, final_state)``: the top cell's outputs per step (a list of
      ``steps`` float32 ``[batch, h_depth]`` tensors) and the list of final
      states (per cell, ``LSTMStateTuple``).

    Raises:
      TypeError: ``steps`` is not known while building (``range(None)``).
    """
    steps = dimension_value(inputs.get_shape()[1])
    state = list(initial_state)
    outputs = []
    for t in range(steps):
        x = inputs[:, t, :]
        for layer, cell in enumerate(cells):
            with tf.variable_scope("layer_%d" % layer,
                                   reuse=tf.AUTO_REUSE):
                x, state[layer] = cell(x, state[layer])
        outputs.append(x)
    return outputs, state


def state_inputs(cells, batch_size, is_quant):
    """The model's state inputs ``state_<l>_c`` / ``state_<l>_h`` (float
    placeholders) and the initial state the cells receive: for a uint8
    model on the cells' state / output grids (the cells quantize the state
    they produce, not the state they receive). Call after the cells are
    built.

    Args:
      cells: list of built eval cells, bottom first.
      batch_size: int, the model's batch.
      is_quant: bool, True for a uint8 model (the cells' quantizers give
        the grids).

    Returns:
      ``(placeholders, initial_state)``: the float32 placeholders
      ``[batch, c_depth]`` / ``[batch, h_depth]``, two per cell in the
      order ``state_0_c, state_0_h, state_1_c, ...``, and the list (per
      cell) of ``LSTMStateTuple`` the cells receive.
    """
    placeholders, initial_state = [], []
    for layer, cell in enumerate(cells):
        c = tf.placeholder(tf.float32, [batch_size, cell.state_size.c],
                           name="state_%d_c" % layer)
        h = tf.placeholder(tf.float32, [batch_size, cell.state_size.h],
                           name="state_%d_h" % layer)
        placeholders += [c, h]
        if is_quant:
            ranges = cell.quantizer.run_ranges
            bits = cell.quantizer.activation_bits
            c = fq.fake_quant(c, *ranges["state"], num_bits=bits)
            h = fq.fake_quant(h, *ranges["output"], num_bits=bits)
        initial_state.append(tf.nn.rnn_cell.LSTMStateTuple(c, h))
    return placeholders, initial_state


def stack_outputs(outputs, top_cell, is_quant):
    """The top cell's per-step outputs as ``[batch, steps, h_depth]``; for
    a uint8 model on the cell's output grid (TFLite's quantized Pack needs
    equal zero points).

    Args:
      outputs: list of float32 ``[batch, h_depth]`` tensors (:func:`unroll`).
      top_cell: the top cell (its quantizer's output range, if
        ``is_quant``).
      is_quant: bool, True for a uint8 model.

    Returns:
      float32 ``[batch, steps, h_depth]`` tensor.
    """
    stacked = tf.stack(outputs, axis=1)
    if is_quant:
        lo, hi = top_cell.quantizer.run_ranges["output"]
        stacked = fq.fake_quant(stacked, lo, hi,
                                top_cell.quantizer.activation_bits)
    return stacked


def final_state_outputs(final):
    """The models' final-state outputs: ``final_<l>_c`` / ``final_<l>_h``
    identities of the final states.

    Args:
      final: list (per cell) of ``LSTMStateTuple`` (:func:`unroll`).

    Returns:
      list of float32 tensors, two per cell, ``c`` before ``h``.
    """
    tensors = []
    for layer, state in enumerate(final):
        tensors += [tf.identity(state.c, "final_%d_c" % layer),
                    tf.identity(state.h, "final_%d_h" % layer)]
    return tensors


def state_input_stats(cells, session):
    """``quantized_input_stats`` entries of the state inputs (mean = zero
    point, std = 1 / scale) from the grids :func:`state_inputs` puts them
    on (the cells' state and output ranges).

    Args:
      cells: list of built quantization-aware eval cells, bottom first.
      session: a session holding the cells' learned ranges.

    Returns:
      dict ``'state_<l>_c'`` / ``'state_<l>_h'`` -> ``(mean, std)``, two
      floats (`graphdef.input_stats`).

    Raises:
      ValueError: a learned range that is not ``min < max``, finite.
    """
    ranges = session.run({
        name: cell.quantizer.run_ranges[key]
        for layer, cell in enumerate(cells)
        for name, key in (("state_%d_c" % layer, "state"),
                          ("state_%d_h" % layer, "output"))})
    return {name: graphdef.input_stats(lo, hi)
            for name, (lo, hi) in ranges.items()}
