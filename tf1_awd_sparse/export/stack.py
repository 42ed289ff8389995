"""A trained cell stack as a list of cells and the values of their
variables: what :func:`tf1_awd_sparse.export.tflite.export_tflite` reads
from the training graph before it rebuilds the stack for evaluation.
"""
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.checkpoints import check_checkpoint
from tf1_awd_sparse.base.variable_names import relative_variable_names
from tf1_awd_sparse.ops import mask_placement

__all__ = ["as_cell_list", "read_cell_values", "load_values"]


def as_cell_list(cells):
    """Validates ``cells`` and returns them as a flat list, bottom first: a
    ``tf.nn.rnn_cell.MultiRNNCell`` (also nested, or in a list) is unwrapped
    into its cells.

    Args:
      cells: a ``WeightDropLSTMCell``, a list or tuple of them (bottom
        first), or a ``MultiRNNCell`` of them, built in the training graph.

    Returns:
      non-empty list of ``WeightDropLSTMCell``, each taking the output of
      the one before it.

    Raises:
      ValueError: an empty stack, a cell that is not a built
        ``WeightDropLSTMCell`` (the message says what to pass), or cells
        not bottom first (a cell's input depth is not the output size of
        the cell before it; the message says when the reversed list fits).
    """
    # Imported here: importing the cell module is needed only for this
    # check (the exporter's import stays light).
    from tf1_awd_sparse.layers.weight_drop_lstm_cell import WeightDropLSTMCell
    pending = list(cells) if isinstance(cells, (list, tuple)) else [cells]
    flat = []
    while pending:
        cell = pending.pop(0)
        if isinstance(cell, tf.nn.rnn_cell.MultiRNNCell):
            # TF 1.13 and 1.15 have no public accessor for the cells.
            pending[:0] = list(cell._cells)  # pylint: disable=protected-access
            continue
        if not isinstance(cell, WeightDropLSTMCell):
            raise ValueError(
                "cells must be a built WeightDropLSTMCell, a list of them "
                "(bottom first) or a tf.nn.rnn_cell.MultiRNNCell of them; got "
                "%r" % (cell,))
        if not cell.built:
            raise ValueError("cells must be built (call them in the "
                             "training graph first); %r is not" % (cell,))
        flat.append(cell)
    if not flat:
        raise ValueError("cells must be a cell or a non-empty list of cells; "
                         "got an empty list")
    _check_stack_order(flat)
    return flat


def _check_stack_order(cells):
    """Raises ValueError unless every cell takes the output of the cell
    before it (a list bottom first). The order is not guessed: layers of
    equal sizes fit in either order, and only the caller knows theirs."""
    depths = [cell.input_depth for cell in cells]
    for i in range(1, len(cells)):
        if depths[i] != cells[i - 1].output_size:
            fits_reversed = all(
                depths[j - 1] == cells[j].output_size
                for j in range(1, len(cells)))
            raise ValueError(
                "cells must be bottom first, each taking the output of the "
                "one before it: cells[%d] takes inputs of depth %d but "
                "cells[%d] outputs %d (input depths %s, output sizes %s)%s"
                % (i, depths[i], i - 1, cells[i - 1].output_size, depths,
                   [c.output_size for c in cells],
                   "; reversed, the list fits: pass it bottom first"
                   if fits_reversed else ""))


def read_cell_values(cells, session=None, checkpoint=None):
    """Trained values of each cell's variables, by name relative to the cell.

    Args:
      cells: list of built cells.
      session: a ``tf.Session`` on the cells' graph, or None.
      checkpoint: a checkpoint path (or directory), used if no session.

    Returns:
      list (one per cell) of dict relative name -> numpy array.

    Raises:
      ValueError: neither or both of ``session``/``checkpoint`` given; a
        checkpoint that is neither a checkpoint prefix nor a directory
        holding a ``checkpoint`` file, that lacks a variable of the cells,
        or whose data file is truncated (see
        ``tf1_awd_sparse.base.checkpoints.check_checkpoint``).
    """
    if (session is None) == (checkpoint is None):
        raise ValueError("give exactly one of session= or checkpoint=; got "
                         "session=%r, checkpoint=%r" % (session, checkpoint))
    reader = (check_checkpoint(checkpoint, "checkpoint")
              if checkpoint is not None else None)
    result = []
    for cell in cells:
        # Dropout masks are per-process sampling state (never in a
        # checkpoint) and an exported model does not drop.
        masks = set(mask_placement.mask_variables(cell.weights[0].graph))
        variables = [v for v in cell.weights if v not in masks]
        if reader is not None:
            values = [reader.get_tensor(v.op.name) for v in variables]
        else:
            values = session.run(variables)
        result.append(dict(zip(relative_variable_names(variables), values)))
    return result


def load_values(cell, values, session):
    """Assigns trained values to a freshly built cell, by relative name.

    Args:
      cell: a built cell (of the evaluation graph).
      values: dict relative name -> numpy array, one entry of
        :func:`read_cell_values` (extra entries, such as a quantization-
        aware cell's ranges for a float copy, are ignored).
      session: a ``tf.Session`` on the cell's graph.

    Raises:
      ValueError: ``values`` lacks a variable of ``cell`` (e.g. an 8-bit
        copy of a cell trained without ``is_quant``), naming it.
    """
    names = relative_variable_names(cell.weights)
    for name, variable in zip(names, cell.weights):
        if name not in values:
            raise ValueError(
                "the trained cell has no variable %r; an 8-bit export "
                "needs a cell trained with is_quant=True (has: %s)"
                % (name, sorted(values)))
        variable.load(values[name], session)
