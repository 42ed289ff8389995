"""Export of a trained (quantization-aware) LSTM cell stack to TFLite.

:func:`export_tflite` rebuilds the stack in a fresh graph in eval mode with
a fixed batch and a fixed number of steps, unrolled with strided slices (TOCO
in TF 1.13 converts no while loop and no quantized ``Unpack``), copies the
trained values in, replaces every weight-side tensor by a constant, and
writes

* a float TFLite model of the float cells (``is_quant=False``), and
* a fully 8-bit (``inference_type=tf.uint8``) model of the fake-quant cells:
  every tensor, including the inputs and the initial state, carries a
  fake-quant range, so TOCO finds min/max everywhere.

Both models take ``inputs`` ``[batch, steps, depth]`` and, per layer, the
state ``state_<l>_c`` / ``state_<l>_h``; they return ``outputs``
``[batch, steps, h_depth]`` and the final ``final_<l>_c`` / ``final_<l>_h``,
so a caller can run a long sequence window by window.

The pieces: :mod:`.stack` (the cells and their trained values),
:mod:`.eval_graph` (the unrolled evaluation graph), :mod:`.graphdef` (the
GraphDef rewrites and the conversion) and :mod:`.runner` (``TFLiteRunner``,
which runs the files).
"""
import os

from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_positive_int
from tf1_awd_sparse.export import eval_graph, graphdef, stack

__all__ = ["export_tflite"]


def export_tflite(cells, batch_size, num_steps, float_path=None,
                  quant_path=None, session=None, checkpoint=None):
    """Writes float and fully 8-bit TFLite models of a trained cell stack.

    Args:
      cells: a built ``WeightDropLSTMCell``, a list of them (bottom first)
        or the ``tf.nn.rnn_cell.MultiRNNCell`` of them, as used in the
        training graph. For ``quant_path`` they must have been built with
        ``is_quant=True`` (their learned ranges are exported).
      batch_size: int, the models' fixed batch.
      num_steps: int, the number of unrolled steps per model call.
      float_path: where to write the float model, or None to skip.
      quant_path: where to write the uint8 model, or None to skip.
      session: a session holding the trained values, or
      checkpoint: a checkpoint path / directory holding them (exactly one).

    Returns:
      dict with ``'float_bytes'`` / ``'quant_bytes'`` (file sizes, for the
      models written).

    Raises:
      ValueError: bad sizes, cells of another kind (say what to pass),
        unbuilt cells, cells not bottom first (a cell whose input depth is
        not the output size of the cell before it), both or neither of
        ``session`` / ``checkpoint``, a checkpoint that is not a prefix or
        a directory with a ``checkpoint`` file (or lacks a variable of the
        cells, or is truncated), neither output path or both the same, an
        output path that is not a string in an existing directory, or an
        8-bit export of float cells.
      tf.lite.ConverterError (``ConverterError``): if TOCO rejects a graph.
    """
    cells = stack.as_cell_list(cells)
    batch_size = check_positive_int(batch_size, "batch_size")
    num_steps = check_positive_int(num_steps, "num_steps")
    _check_output_paths(float_path, quant_path)
    values = stack.read_cell_values(cells, session=session,
                                    checkpoint=checkpoint)
    sizes = {}
    for path, is_quant, key in ((float_path, False, "float_bytes"),
                                (quant_path, True, "quant_bytes")):
        if path is None:
            continue
        model = _build_and_convert(cells, values, batch_size, num_steps,
                                   is_quant)
        with open(path, "wb") as handle:
            handle.write(model)
        sizes[key] = len(model)
    return sizes


def _build_and_convert(cells, values, batch_size, num_steps, is_quant):
    """Builds the unrolled eval graph of a cell stack, loads ``values`` and
    converts it.

    Returns:
      the ``.tflite`` bytes.
    """
    graph = tf.Graph()
    with graph.as_default():
        new_cells = [eval_graph.eval_cell(c, is_quant) for c in cells]
        depth = values[0]["kernel"].shape[0] - new_cells[0].state_size.h
        inputs = tf.placeholder(tf.float32, [batch_size, num_steps, depth],
                                name=eval_graph.INPUT_NAME)
        eval_graph.build_cells(new_cells, batch_size, depth)
        placeholders, initial_state = eval_graph.state_inputs(
            new_cells, batch_size, is_quant)
        outputs, final = eval_graph.unroll(new_cells, inputs, initial_state)
        output_tensors = [tf.identity(
            eval_graph.stack_outputs(outputs, new_cells[-1], is_quant),
            name=eval_graph.OUTPUT_NAME)]
        output_tensors += eval_graph.final_state_outputs(final)
        config = tf.ConfigProto(intra_op_parallelism_threads=1,
                                inter_op_parallelism_threads=1)
        with tf.Session(graph=graph, config=config) as session:
            session.run(tf.global_variables_initializer())
            for cell, cell_values in zip(new_cells, values):
                stack.load_values(cell, cell_values, session)
            stats = None
            if is_quant:
                stats = eval_graph.state_input_stats(new_cells, session)
                # The first fake-quant the inputs meet is the bottom
                # cell's concat.
                stats[eval_graph.INPUT_NAME] = graphdef.input_stats(
                    *session.run(new_cells[0].quantizer.run_ranges["concat"]))
            return graphdef.convert(session, [inputs] + placeholders,
                                    output_tensors, stats)


def _check_output_paths(float_path, quant_path):
    """Checks the output paths before the conversion (which takes a
    while), not at the write.

    Raises:
      ValueError: neither path (nothing would be written), both naming
        one file, or a path that `_check_output_path` refuses.
    """
    if float_path is None and quant_path is None:
        raise ValueError("export_tflite writes files: give float_path= "
                         "and/or quant_path=, got neither (nothing would be "
                         "written)")
    for path, arg_name in ((float_path, "float_path"),
                           (quant_path, "quant_path")):
        if path is not None:
            _check_output_path(path, arg_name)
    if float_path is not None and quant_path is not None and (
            os.path.abspath(float_path) == os.path.abspath(quant_path)):
        raise ValueError("float_path and quant_path must be two files, got "
                         "%r for both (the uint8 model would overwrite the "
                         "float one)" % (float_path,))


def _check_output_path(path, arg_name):
    """Raises ValueError naming ``arg_name`` unless ``path`` is a string
    naming a file in an existing directory."""
    if not isinstance(path, str) or not path:
        raise ValueError("%s must be a file path (str), got %r"
                         % (arg_name, path))
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory) or os.path.isdir(path):
        raise ValueError("%s must name a file in an existing directory, got "
                         "%r" % (arg_name, path))
