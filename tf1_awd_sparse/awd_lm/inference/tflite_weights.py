"""The weights a TFLite language model holds, read back from its file:
their shapes as TFLite stores them (`weight_shapes`), their zero entries
(`weight_sparsity_of_tflite`) and a fused file's low-rank table
(`low_rank_of_tflite`).
"""
import struct

import numpy as np

from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.export import fused_lstm, sparse_storage, tflite_file
from tf1_awd_sparse.export.runner import open_interpreter

__all__ = ["weight_shapes", "weight_sparsity_of_tflite",
           "low_rank_of_tflite"]


def weight_shapes(params):
    """Shapes of the model's weight matrices as TFLite stores them: the
    embedding table ``[vocab, emb]`` and each cell's kernel as
    FullyConnected weights ``[4 * units, input depth + units]``.

    Args:
      params: the model's parameters (`config.params.Params`).

    Returns:
      list of ``(rows, cols)`` int pairs.
    """
    shapes = [(params.model.vocab_size, params.model.emb_size)]
    depth = params.model.emb_size
    for units in model.layer_sizes(params):
        shapes.append((4 * units, depth + units))
        depth = units
    return shapes


def weight_sparsity_of_tflite(path, shapes, interpreter=None):
    """(zero, total) entries of the model's weight tensors, read back from
    the ``.tflite`` file; a uint8 entry is zero when it equals its zero
    point.

    Args:
      path: a ``.tflite`` file.
      shapes: the weight tensors' shapes (`weight_shapes`); each is matched
        to a different tensor of that shape (or of its input width padded
        to a multiple of 16, as ``layout="fast"`` stores it; the padding
        is not counted), in the file's order.
      interpreter: which interpreter reads the file (see `lm_runner.LMRunner`).

    Returns:
      ``(zeros, total)`` ints.

    Raises:
      ValueError: a shape with no tensor in the model.
    """
    zeros = total = 0
    fused = _fused_weights(path)
    if fused is not None:   # its own layout: one tensor per gate
        if len(fused) != len(shapes):
            raise ValueError("%s holds %d weight matrices, not the %d of "
                             "shapes" % (path, len(fused), len(shapes)))
        for value, shape in zip(fused, shapes):
            if sorted(value.shape) != sorted(int(d) for d in shape):
                raise ValueError("%s has no tensor of shape %s"
                                 % (path, tuple(shape)))
            zeros += int(np.sum(value == 0))
            total += value.size
        return zeros, total
    tensors = _weight_tensors(path, interpreter)
    for shape in shapes:
        rows, cols = (int(d) for d in shape)
        # A "fast" sparse file stores a weight whose input width 16 does
        # not divide padded with zero columns to a multiple of 16.
        wanted = [(rows, cols), (rows, cols + -cols % 16)]
        found = [i for want in wanted for i, (tensor_shape, _) in
                 enumerate(tensors) if tensor_shape == want]
        if not found:
            raise ValueError("%s has no tensor of shape %s"
                             % (path, tuple(shape)))
        # Two kernels of one shape are two tensors.
        value, zero_point = tensors.pop(found[0])[1]()
        value = value[:, :cols]
        zeros += int(np.sum(value == zero_point))
        total += value.size
    return zeros, total


def _fused_weights(path):
    """The weights of a fused file (`fused_lstm.read_weights`: the table,
    then each layer's kernel), or None for any other file."""
    data = _fused_data(path)
    if data is None:
        return None
    table, kernels = fused_lstm.read_weights(data)
    return [table] + kernels


def _fused_data(path):
    """The bytes of a fused file (`fused_lstm.is_fused`), or None for any
    other file (or without TF 2.x's schema module)."""
    if not sparse_storage.available():
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    return data if fused_lstm.is_fused(data) else None


def low_rank_of_tflite(path):
    """The dense low-rank part of a fused file's decoder table
    (`fused_lstm`'s ``low_rank``, a model with ``table_rank``): ``(low
    [vocab, r], proj [emb, r])`` float32, or None for a file without one
    (any unrolled file: the converter writes the folded table).

    Raises:
      OSError: the file cannot be read."""
    data = _fused_data(path)
    return None if data is None else fused_lstm.read_low_rank(data)


def _weight_tensors(path, interpreter):
    """[(shape, read)] of the file's tensors, ``read()`` giving (value,
    zero point): a sparse file's constants decoded from the file (an
    interpreter returns only their stored values), a dense file's read by
    the interpreter."""
    if sparse_storage.stores_sparse(path):
        return [(value.shape, lambda v=value, z=zero_point: (v, z))
                for _, value, zero_point
                in sparse_storage.constant_arrays(path)]
    reader = open_interpreter(path, interpreter)
    reader.allocate_tensors()
    # Constants only: an activation can have a weight's shape (a width-1
    # model's kernel [4, 2] and its [batch 4, input + units 2] input).
    constants = _constant_indices(path)

    def read(detail):
        zero_point = detail["quantization"][1] \
            if detail["dtype"] == np.uint8 else 0
        return reader.get_tensor(detail["index"]), zero_point
    return [(tuple(d["shape"]), lambda d=d: read(d))
            for d in reader.get_tensor_details() if d["index"] in constants]


def _constant_indices(path):
    """The indices of the tensors of a file's first subgraph that hold
    data (its constants), read from the file (`tflite_file`)."""
    buf = tflite_file.verify(path)
    root = tflite_file.root(buf)
    buffers = tflite_file.tables(buf, root, "Model", "buffers")
    graph = tflite_file.tables(buf, root, "Model", "subgraphs")[0]
    found = set()
    for index, tensor in enumerate(tflite_file.tables(buf, graph, "SubGraph",
                                                      "tensors")):
        data = tflite_file.subtable(buf, buffers[tflite_file.scalar(
            buf, tensor, "Tensor", "buffer")], "Buffer", "data")
        # A data vector is its length, then the bytes.
        if data is not None and struct.unpack_from("<I", buf, data)[0]:
            found.add(index)
    return found
