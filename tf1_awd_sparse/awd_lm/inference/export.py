"""The whole language model as a TFLite file, and its perplexity measured
with the TFLite interpreter.

:func:`export_lm` rebuilds the model of a checkpoint in evaluation mode
with a fixed batch and window length, unrolled (TOCO in TF 1.13 converts no
while loop), and converts it: the embedding lookup (a Gather of the table),
the LSTM stack and the tied decoder (a FullyConnected layer with the same
table as weights) in one model. A float model comes from a float
checkpoint; a fully 8-bit (``uint8``) model from a quantization-aware one
(``params.quantization.quant``), whose every tensor carries a learned or weight
range: the table, the cells' weights and activations, and the logits.

Inputs: ``inputs`` int32 ``[batch, steps]`` word ids and, per layer, the
carried state ``state_<l>_c`` / ``state_<l>_h``; outputs: ``logits``
``[batch, steps, vocab]``, ``hidden`` ``[batch, steps, emb_size]`` (the
top layer's outputs, the decoder's input: the continuous cache's keys;
files written before it have no such output) and the final states
``final_<l>_c`` / ``final_<l>_h``, so a long stream runs window by window. The
log-softmax is computed outside the model, on the (dequantized) logits: a
uint8 softmax has no resolution below 1/256 for the probability of a
word.
"""
import os
import struct

import numpy as np
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.checks import check_id_array, check_positive_int
from tf1_awd_sparse.awd_lm.corpus import data, runtime
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import checkpoints, model, tables
from tf1_awd_sparse.awd_lm.inference import fused_export
from tf1_awd_sparse.export import eval_graph, fused_lstm, graphdef
from tf1_awd_sparse.export import sparse_storage, tflite_file
from tf1_awd_sparse.export.runner import TFLiteRunner, open_interpreter

__all__ = ["export_lm", "WEIGHT_FORMATS", "STORAGES", "check_formats",
           "LMRunner", "tflite_perplexity", "weight_shapes",
           "weight_sparsity_of_tflite", "low_rank_of_tflite",
           "log_softmax"]

LOGITS_NAME = "logits"
HIDDEN_NAME = "hidden"


def _unrolled_model(params, batch_size, num_steps, quantized):
    """Builds the evaluation graph; returns (input tensors, output tensors,
    cells). ``params``: a dict or Params (`as_params`)."""
    params = as_params(params)
    ids = tf.placeholder(tf.int32, [batch_size, num_steps],
                         name=eval_graph.INPUT_NAME)
    with tf.variable_scope("lm"):
        _, table = tables.embedding_table(params, training=False)
        x = tf.gather(table, ids)
        layers = [model.make_layer(i, units, False, params)
                  for i, units in enumerate(model.layer_sizes(params))]
        cells = [layer.cell for layer in layers]
        # Build each cell (variables, per-run kernel) in its layer's scope.
        depth = params.model.emb_size
        eval_graph.build_cells(cells, batch_size, depth)
        with tf.name_scope(""):  # top-level input names
            placeholders, state = eval_graph.state_inputs(
                cells, batch_size, quantized)
        outputs, state = eval_graph.unroll(cells, x, state)
        stacked = eval_graph.stack_outputs(outputs, cells[-1], quantized)
        flat = tf.reshape(stacked, [batch_size * num_steps, depth])
        _, logits = model.decoder_logits(flat, table, params, False)
        logits = tf.reshape(logits, [batch_size, num_steps,
                                     params.model.vocab_size])
    logits = tf.identity(logits, name=LOGITS_NAME)
    hidden = tf.identity(stacked, name=HIDDEN_NAME)
    return ([ids] + placeholders,
            [logits, hidden] + eval_graph.final_state_outputs(state), cells)


#: The file formats of `export_lm`: float32, TOCO's fully 8-bit uint8 (of
#: a quantization-aware model) and int8 weights with float activations
#: (TFLite's hybrid kernels; the format its sparse 8-bit kernel takes).
WEIGHT_FORMATS = ("float", "uint8", "int8")
#: How the weights are stored (`sparse_storage.store_sparse`).
STORAGES = ("dense", "sparse")


def export_lm(params, checkpoint, path, batch_size, num_steps, weights=None,
              storage="dense", layout="auto", lstm="unrolled"):
    """Writes the language model of ``checkpoint`` as a TFLite file.

    Args:
      params: the model's parameters (a `config.params.Params` or a dict,
        `as_params`; as trained: ``pruning`` and the sizes as in the
        checkpoint's model); dropout settings do not matter.
      checkpoint: checkpoint prefix holding the model's variables.
      path: the ``.tflite`` file to write.
      batch_size, num_steps: the model's fixed input shape.
      weights: None (as trained: uint8 for ``params.quantization.quant``, else
        float), or one of `WEIGHT_FORMATS`: ``"int8"`` converts the float
        graph of the model's weights (a quantization-aware model's too)
        and stores every fully-connected weight as symmetric per-tensor
        int8 (`sparse_storage.store_sparse`).
      storage: ``"dense"``, or ``"sparse"`` (TF 2.x): the pruned weights in
        TFLite's sparse format (not with uint8: TFLite runs no sparse
        uint8 weights).
      layout: the sparse layout (`sparse_storage.store_sparse`): ``"auto"``
        (fewest bytes), ``"fast"`` (what TFLite's sparse kernels read: int8
        1 x 16, a table or kernel whose input width 16 does not divide
        padded with zero columns), or one of its fixed layouts.
      lstm: ``"unrolled"`` (the converted graph) or ``"fused"``
        (`fused_export`: one builtin TFLite LSTM op per layer, written
        from the weights; ``num_steps`` 1, float or int8 weights, sparse
        int8 in 1 x 16 blocks; its state lives in the interpreter's
        variable tensors ``state_<l>_c`` / ``state_<l>_h``, which
        `TFLiteRunner` sets each call like a state input).

    Returns:
      the file size in bytes.

    Raises:
      ValueError: bad sizes, params, ``weights``, ``storage``, ``layout``
        or ``lstm`` (named), a combination the fused op cannot write
        (`fused_export.fused_format`);
        uint8 of a float model or float of a quantization-aware one.
      sparse_storage.SparseStorageError: sparse storage or int8 on TF 1.x,
        or sparse uint8.
      checkpoints.CheckpointError (a ValueError): the checkpoint is
        missing, truncated or corrupt, or lacks a variable of the model
        (one line naming it and TensorFlow's cause).
      tf.lite.ConverterError: TOCO rejected the graph.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    num_steps = check_positive_int(num_steps, "num_steps")
    if layout not in sparse_storage.LAYOUTS:
        raise ValueError("layout must be one of %s, got %r"
                         % (", ".join(sparse_storage.LAYOUTS), layout))
    weights = check_formats(weights, storage, params)   # before any work
    if lstm not in fused_export.LSTM_KINDS:
        raise ValueError("lstm must be one of %s, got %r"
                         % (", ".join(fused_export.LSTM_KINDS), lstm))
    fused = fused_export.fused_format(weights, storage, layout, num_steps) \
        if lstm == "fused" else None
    # The evaluation graph's: masks not held in variables, quantization
    # (uint8 only) on from step 0.
    params = as_params(model.check_params(params)).replace(
        use_vd=False, quant_delay=0, quant=weights == "uint8")
    if fused is not None:
        model_bytes = fused_export.write_fused(params, checkpoint,
                                               batch_size, fused)
    else:
        model_bytes = _converted(params, checkpoint, batch_size, num_steps,
                                 weights == "uint8")
    if fused is None and (weights == "int8" or storage == "sparse"):
        model_bytes, _ = sparse_storage.store_sparse(
            model_bytes, weights="int8" if weights == "int8" else "float",
            layout=layout, min_zeros=0.5 if storage == "sparse" else None)
    with open(path, "wb") as handle:
        handle.write(model_bytes)
    return len(model_bytes)


def check_formats(weights, storage, params, model_dir=None, lstm="unrolled",
                  layout="auto"):
    """The weight format `export_lm` writes of a model, checked against the
    model and this TensorFlow before any conversion: what `export_lm` and
    the ``awd-lm export`` command refuse.

    Args:
      weights: None (the model's own: uint8 for a quantization-aware
        model, else float) or one of `WEIGHT_FORMATS`.
      storage: one of `STORAGES`.
      params: the model's parameters (`as_params`): whether it is
        quantization-aware (``params.quantization.quant``).
      model_dir: None for a Python call (the errors name the arguments
        ``weights`` and ``storage``), or the model directory the command
        line names (the errors name its flags ``--format`` and
        ``--storage`` and the directory).
      lstm, layout: `export_lm`'s (the fused file's refusals,
        `fused_export.fused_format`, checked too; ``num_steps`` is
        `export_lm`'s to check).

    Returns:
      the weight format, one of `WEIGHT_FORMATS`.

    Raises:
      ValueError: an unknown format or storage, uint8 of a float model or
        float of a quantization-aware one, bad params (`as_params`).
      sparse_storage.SparseStorageError (a ValueError): sparse uint8
        (TFLite has no such kernel), or int8 / sparse storage on a
        TensorFlow that cannot write them (TF 1.x).
    """
    quantized = bool(as_params(params).quantization.quant)
    flags = model_dir is not None
    if weights is None:
        weights = "uint8" if quantized else "float"
    if weights not in WEIGHT_FORMATS:
        raise ValueError("weights must be None or one of %s, got %r"
                         % (", ".join(WEIGHT_FORMATS), weights))
    if storage not in STORAGES:
        raise ValueError("storage must be one of %s, got %r"
                         % (", ".join(STORAGES), storage))
    if weights == "uint8" and not quantized:
        raise ValueError(
            "--format uint8 needs a quantization-aware model: %s is float; "
            "`awd-lm train --quant` makes <out>/<model>_quant" % model_dir
            if flags else "weights='uint8' needs a quantization-aware "
            "model (params['quant']); this one is float")
    if weights == "float" and quantized:
        raise ValueError(
            "--format float: %s is quantization-aware (its file is uint8); "
            "give its float model directory" % model_dir if flags else
            "weights='float' of a quantization-aware model: its files are "
            "uint8 or int8")
    if weights == "uint8" and storage == "sparse":
        raise sparse_storage.SparseStorageError(
            "--storage sparse --format uint8: TFLite has no sparse uint8 "
            "kernel; use --format int8 (8-bit weights) or float" if flags
            else "storage='sparse' with uint8 weights: TFLite has no sparse "
            "uint8 kernel (and its DENSIFY op takes no uint8); use "
            "weights='int8' (8-bit weights, stored sparse) or 'float'")
    if weights == "int8" or storage == "sparse":
        _check_sparse_storage(weights, flags)
    if lstm == "fused":
        fused_export.fused_format(weights, storage, layout, 1)
    return weights


def _check_sparse_storage(weights, flags):
    """Raises `sparse_storage.SparseStorageError` where this TensorFlow
    cannot write int8 or sparse files (naming the flag with ``flags``)."""
    if not flags:
        sparse_storage.available_or_raise()
    elif not sparse_storage.available():
        raise sparse_storage.SparseStorageError(
            "--%s: needs TensorFlow 2.x (the TFLite schema module that "
            "writes it, and an interpreter that reads it); TF %s exports "
            "float or uint8, dense" % (
                "format int8" if weights == "int8" else "storage sparse",
                tf.__version__))


def _converted(params, checkpoint, batch_size, num_steps, quantized):
    """The converted model's bytes (TOCO's float or uint8 file)."""
    graph = tf.Graph()
    with graph.as_default():
        inputs, outputs, cells = _unrolled_model(params, batch_size,
                                                 num_steps, quantized)
        saver = tf.train.Saver(tf.global_variables())
        with tf.Session(graph=graph,
                        config=runtime.session_config(1)) as session:
            # A missing or truncated data file: one CheckpointError line.
            checkpoints.restore(saver, session, checkpoint)
            stats = None
            if quantized:
                stats = eval_graph.state_input_stats(cells, session)
                stats[eval_graph.INPUT_NAME] = (0.0, 1.0)  # int32 ids
            return graphdef.convert(session, inputs, outputs, stats)


class LMRunner(object):
    """Runs an exported language model window by window, carrying the
    state, on a ``[batch, length]`` id stream.

    Args:
      path: a file written by :func:`export_lm`.
      interpreter: which interpreter runs it
        (`base.compat.interpreter_class`: LiteRT's where it is
        installed, else ``tf.lite.Interpreter``; ``"tf"`` or ``"litert"``
        to choose).
      num_threads: None (the interpreter's default) or its threads
        (`TFLiteRunner`; 1 for `time_per_token`'s single thread).

    Attributes:
      batch_size, num_steps: the model's fixed input shape.
      vocab_size: the number of words (the logits' last dimension).

    Raises:
      ValueError: ``path`` is not a TFLite model (see
        ``quantization.TFLiteRunner``), or a TFLite model that is not a
        language model of :func:`export_lm` (e.g. a cell stack of
        ``quantization.export_tflite``), saying what it is and what is
        expected.
    """

    def __init__(self, path, interpreter=None, num_threads=None):
        self.runner = TFLiteRunner(path, interpreter, num_threads)
        _check_lm_signature(path, self.runner)
        detail = self.runner.inputs[eval_graph.INPUT_NAME]
        self.batch_size, self.num_steps = [int(d) for d in detail["shape"]]
        self.vocab_size = int(
            self.runner.outputs[LOGITS_NAME]["shape"][-1])
        self.state_names = sorted(self.runner.state_inputs)

    def windows(self, stream):
        """The windows of ``stream`` scored, the state carried between
        them; the last window is padded (its padding is not scored).

        Args:
          stream: int ``[batch, length]`` word ids, batch equal to the
            model's, ``length >= 2`` (an input and its target).

        Returns:
          an iterator of ``(log_probs of the targets [batch, n], n)``, one
          per window.

        Raises:
          ValueError (at the call, before any window runs): a stream that
            is not a 2-D integer array, whose batch differs from the
            model's, shorter than 2, or holding ids outside
            ``[0, vocab_size)`` (the message names the vocabulary size and
            the offending ids and positions).
        """
        stream = check_id_array(stream, self.vocab_size, "stream", ndim=2)
        if stream.shape[0] != self.batch_size or stream.shape[1] < 2:
            raise ValueError("stream must be [%d, length >= 2] (the model's "
                             "batch; an input and its target), got shape %s"
                             % (self.batch_size, stream.shape))
        return self._windows(stream)

    def _windows(self, stream):
        state = {}
        for start, n in data.bptt_windows(stream.shape[1] - 1,
                                          self.num_steps):
            inputs = np.zeros([self.batch_size, self.num_steps], np.int32)
            inputs[:, :n] = stream[:, start:start + n]
            targets = stream[:, start + 1:start + n + 1]
            result = self.runner.run(inputs, state)
            log_probs = log_softmax(result[LOGITS_NAME][:, :n, :])
            picked = np.take_along_axis(log_probs, targets[..., None],
                                        axis=2)[..., 0]
            state = {name: result["final" + name[len("state"):]]
                     for name in self.state_names}
            yield picked, n

    def time_per_token(self, repeats=20):
        """Seconds per token of one invoke (one thread when the runner was
        opened with ``num_threads=1``, as the compression pipeline's
        timing is), the median of
        ``repeats`` invokes on seeded random ids, the state carried: the
        interpreter's ``invoke`` alone (`TFLiteRunner.last_invoke_seconds`,
        the process's CPU time, which other processes' load does not add
        to). Feeding the ids and the state and reading the outputs through
        `TFLiteRunner.run`'s checks are not the file's time: they added
        about 30 µs a call, as much as a whole fused sparse file's invoke.
        Not on zeros: a block-pruned table's row can be all zero, and from
        zero states such a stream makes every product zero, which TFLite's
        hybrid int8 kernels skip (timed 6 x too fast)."""
        rng = np.random.RandomState(0)
        times, state = [], {}
        for _ in range(repeats):
            inputs = rng.randint(0, self.vocab_size, [
                self.batch_size, self.num_steps]).astype(np.int32)
            result = self.runner.run(inputs, state)
            times.append(self.runner.last_invoke_seconds)
            state = {name: result["final" + name[len("state"):]]
                     for name in self.state_names}
        return float(np.median(times)) / (self.batch_size * self.num_steps)


def _check_lm_signature(path, runner):
    """Raises ValueError unless the model takes int32 ids ``inputs``
    ``[batch, steps]`` and returns ``logits`` ``[batch, steps, vocab]``."""
    ids = runner.inputs.get(eval_graph.INPUT_NAME)
    logits = runner.outputs.get(LOGITS_NAME)
    if (ids is not None and ids["dtype"] == np.int32
            and len(ids["shape"]) == 2 and logits is not None
            and len(logits["shape"]) == 3):
        return
    if ids is not None and len(ids["shape"]) == 3 and \
            eval_graph.OUTPUT_NAME in runner.outputs:
        kind = ("a cell-stack model of quantization.export_tflite (%s "
                "inputs %s, output %r): run it with "
                "quantization.TFLiteRunner"
                % (np.dtype(ids["dtype"]).name, np.asarray(ids["shape"]).tolist(),
                   eval_graph.OUTPUT_NAME))
    else:
        kind = "a model with inputs %s and outputs %s" % (
            _signature(runner.inputs), _signature(runner.outputs))
    raise ValueError(
        "path %r is not a language model: LMRunner expects a file of "
        "export_lm (int32 word ids %r [batch, steps] in, %r [batch, steps, "
        "vocab] out); this is %s" % (path, eval_graph.INPUT_NAME,
                                     LOGITS_NAME, kind))


def _signature(details):
    return ", ".join("%s %s %s" % (name, np.dtype(d["dtype"]).name,
                                   np.asarray(d["shape"]).tolist())
                     for name, d in sorted(details.items()))


def log_softmax(logits):
    """float64 log-softmax over the last axis of an array of logits (the
    exported models return logits; every reader of them normalizes here)."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def tflite_perplexity(path, stream, progress=None, interpreter=None):
    """Perplexity of an exported model over a whole id stream, computed
    with the TFLite interpreter window by window (state carried), the
    log-softmax in float64 numpy.

    Args:
      path: a file written by :func:`export_lm`.
      stream: int ``[batch, length]`` (``data.batchify``), batch equal to
        the model's.
      progress: None or a tqdm-like class (a bar over the stream).
      interpreter: which interpreter runs the model (see `LMRunner`).

    Returns:
      ``(perplexity, mean cross-entropy in nats, tokens scored)``.

    Raises:
      ValueError: as `LMRunner` (a file that is not a language model) and
        `LMRunner.windows` (a stream of another batch, or with ids outside
        the vocabulary).
    """
    runner = LMRunner(path, interpreter)
    windows = runner.windows(stream)   # checks the stream
    stream = np.asarray(stream)
    total, count = 0.0, 0
    bar = (progress(total=stream.shape[0] * (stream.shape[1] - 1),
                    desc=os.path.basename(path)) if progress else None)
    for picked, _ in windows:
        total -= float(picked.sum())
        count += picked.size
        if bar is not None:
            bar.update(picked.size)
    if bar is not None:
        bar.close()
    xent = total / count
    return float(np.exp(xent)), xent, count


def weight_shapes(params):
    """Shapes of the model's weight matrices as TFLite stores them: the
    embedding table ``[vocab, emb]`` and each cell's kernel as
    FullyConnected weights ``[4 * units, input depth + units]``.

    Args:
      params: the model's parameters (`as_params`).

    Returns:
      list of ``(rows, cols)`` int pairs.

    Raises:
      ValueError: bad params (`as_params`).
    """
    params = as_params(params)
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
      interpreter: which interpreter reads the file (see `LMRunner`).

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
