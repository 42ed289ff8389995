"""The two backends of `awd_lm.inference.lm.LanguageModel`: a TF session on
the checkpoint (any batch), and the TFLite interpreter on an exported file
(its fixed batch and window, padded to).

A backend has ``kind``, ``batch_limit`` (None or the file's batch),
``zero_arrays(batch)``, ``chunk(batch, vocab)`` (tokens per call when a
long stream is read), ``advance(ids, state, hidden=False) -> (logits,
state)`` (``(logits, hidden, state)`` with ``hidden=True``: the top
layer's outputs, float32 ``[batch, n, emb_size]``) and ``close()``.
Logits are float32 ``[batch, n, vocab]``; the state is an
`LMState` (defined here, public as `lm.LMState`) of float32 arrays (a uint8 model's states are quantized and
dequantized here, never shown to the caller).
"""
import os

import numpy as np

from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.awd_lm.graph import checkpoints, model
from tf1_awd_sparse.awd_lm.corpus import runtime
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.inference import export
from tf1_awd_sparse.awd_lm.inference.export import HIDDEN_NAME
from tf1_awd_sparse.export.eval_graph import INPUT_NAME
from tf1_awd_sparse.export.runner import TFLiteRunner


class LMState(object):
    """The recurrent state of a batch of streams (opaque to the user).

    Attributes:
      arrays: list of float32 ``[batch, units]`` arrays, c and h per layer.
      pending: int32 ``[batch, p]``: tokens read since ``arrays`` (the
        TFLite backend advances its state a whole window at a time).
    """

    def __init__(self, arrays, pending):
        self.arrays, self.pending = arrays, pending

    @property
    def batch_size(self):
        """Rows of the state."""
        return self.pending.shape[0]

    def rows(self, index):
        """The state of some rows (an index array or slice)."""
        return LMState([a[index] for a in self.arrays], self.pending[index])


__all__ = ["TFBackend", "TFLiteBackend", "inference_graph", "LMState",
           "export_logits"]

#: Largest ``batch * tokens * vocab`` logits read per call of a stream.
_CHUNK_ELEMENTS = 2 ** 22


def _inference_params(params):
    """The trained model's parameters as evaluation needs them: masks not
    held in variables, quantization on from step 0, no loss ramp (no
    global step in the graph)."""
    return model.check_params(params).replace(
        use_vd=False, quant_delay=0, sparsity_ramp_steps=0)


def _state(arrays, batch):
    return LMState(arrays, np.zeros([batch, 0], np.int32))


def inference_graph(params, state_default=False):
    """Builds the language model's inference graph into the default graph:
    `model.build_lm` in evaluation mode (no dropout), batch and time None.

    Args:
      params: the model's `config.params.Params` (`_inference_params`
        applied here).
      state_default: False: the states are placeholders to feed; True:
        placeholders with a default of zeros (of the ids' batch).

    Returns:
      ``(inputs, state, outputs)``: the int32 ``[None, None]`` ids
      placeholder ``inputs``, a tuple of ``LSTMStateTuple`` of float32
      ``[None, units]`` tensors ``state_<l>_c`` / ``state_<l>_h`` per layer,
      and `model.LMOutputs` (``logits`` float32 ``[batch, time, vocab]``,
      ``final_state``).

    Raises:
      ValueError: bad params (named).
    """
    params = _inference_params(params)
    inputs = tf.placeholder(tf.int32, [None, None], "inputs")
    state = []
    for i, n in enumerate(model.layer_sizes(params)):
        parts = []
        for part in ("c", "h"):
            name = "state_%d_%s" % (i, part)
            if state_default:
                zeros = tf.zeros(tf.stack([tf.shape(inputs)[0], n]))
                parts.append(tf.placeholder_with_default(zeros, [None, n],
                                                         name))
            else:
                parts.append(tf.placeholder(tf.float32, [None, n], name))
        state.append(tf.nn.rnn_cell.LSTMStateTuple(*parts))
    state = tuple(state)
    out = model.build_lm({"inputs": inputs, "targets": inputs,
                          "state": state}, False, params)
    return inputs, state, out


class TFBackend(object):
    """``build_lm`` in evaluation mode with batch and time None, state in
    and out by placeholders; variables restored by name from the
    checkpoint config.json names.

    Raises:
      checkpoints.CheckpointError: the checkpoint cannot be restored.
    """

    kind = "tf"
    batch_limit = None

    def __init__(self, config, threads=1):
        params = _inference_params(config["params"])
        self.sizes = model.layer_sizes(params)
        self.graph = tf.Graph()
        with self.graph.as_default():
            inputs, state, out = inference_graph(params)
            saver = tf.train.Saver(tf.global_variables())
        self.graph.finalize()
        self.inputs = inputs
        self.state = [t for s in state for t in s]
        self.logits, self.hidden = out.logits, out.hidden
        self.finals = [t for s in out.final_state for t in s]
        self.session = tf.Session(graph=self.graph,
                                  config=runtime.session_config(threads))
        checkpoint = os.path.join(config["directory"], config["checkpoint"])
        # pylint: disable=protected-access
        checkpoints.restore(saver, self.session, checkpoint)

    def zero_arrays(self, batch):
        """Zero c and h per layer, ``[batch, units]`` float32."""
        return [np.zeros([batch, n], np.float32) for n in self.sizes
                for _ in (0, 1)]

    def chunk(self, batch, vocab):
        """Tokens per call for ``batch`` rows."""
        return max(1, _CHUNK_ELEMENTS // (batch * vocab))

    def advance(self, ids, state, hidden=False):
        """Logits of ``ids`` ``[batch, n]`` (and with ``hidden`` the top
        layer's outputs) and the state after them."""
        feed = {self.inputs: ids}
        feed.update(zip(self.state, state.arrays))
        # The top layer's outputs are copied out only when asked for.
        tops = [self.hidden] if hidden else []
        result = self.session.run([self.logits] + tops + self.finals, feed)
        state = _state(result[1 + len(tops):], ids.shape[0])
        return (result[0], result[1], state) if hidden else (result[0],
                                                              state)

    def close(self):
        """Closes the session."""
        self.session.close()


class TFLiteBackend(object):
    """The interpreter on a file of `export.export_lm`: rows padded to the
    file's batch (more rows run in groups), tokens read a window at a
    time; the state advances only at whole windows, so the tokens read
    since (``LMState.pending``, fewer than a window) are read again with
    the next ones.

    Raises:
      ValueError: a file the interpreter cannot load (a truncated or
        damaged one: `tflite_file.TFLiteFileError`), or one whose data
        inputs are not the language model's one ``inputs``;
        modeldir.ConfigError (a ValueError): a file whose vocabulary,
        layers (state inputs and ``final_`` outputs) differ from its
        sidecar's.
    """

    kind = "tflite"

    def __init__(self, path, config, threads=1):
        del threads  # the runner's interpreter is single-threaded
        self.runner, self.path = TFLiteRunner(path), path
        if self.runner.data_inputs != [INPUT_NAME]:
            raise ValueError("%s: data inputs [%s], not the one %r of a "
                             "language model of export_lm" % (
                                 path, ", ".join(self.runner.data_inputs),
                                 INPUT_NAME))
        shape = self.runner.inputs[INPUT_NAME]["shape"]
        self.batch_limit, self.window = int(shape[0]), int(shape[1])
        params = config["params"]
        self.sizes = model.layer_sizes(params)
        self.names = ["%d_%s" % (i, part) for i in range(len(self.sizes))
                      for part in ("c", "h")]
        logits = self.runner.outputs.get(export_logits(), {}).get("shape")
        vocab = params.model.vocab_size
        # Every state the file reads and returns: a state input it lacked
        # would be fed nothing, a final output read as a KeyError.
        if logits is None or int(logits[-1]) != vocab or \
                set(self.runner.state_inputs) != {"state_" + n
                                                  for n in self.names} or any(
                    "final_" + n not in self.runner.outputs and "state_" + n
                    not in self.runner.state_variables   # read back
                    for n in self.names):
            raise modeldir.ConfigError(
                "%s: not the model its sidecar describes (expected logits "
                "over %d words, state inputs %s and their final_ outputs; "
                "the file has inputs %s and outputs %s)" % (
                    path, vocab, ", ".join("state_" + n
                                           for n in self.names),
                    ", ".join(self.runner.inputs),
                    ", ".join(sorted(self.runner.outputs))))

    def zero_arrays(self, batch):
        """Zero c and h per layer, ``[batch, units]`` float32."""
        return [np.zeros([batch, n], np.float32) for n in self.sizes
                for _ in (0, 1)]

    def chunk(self, batch, vocab):
        """Tokens per call: whole windows, within the logits budget."""
        rows = min(batch, self.batch_limit)
        tokens = max(1, _CHUNK_ELEMENTS // (rows * vocab))
        return max(self.window, tokens - tokens % self.window)

    def _call(self, window, arrays):
        """One invoke on ``window`` ``[b <= batch, r <= steps]``: (logits
        ``[b, r, vocab]``, final arrays after all ``steps``)."""
        rows, steps = window.shape
        inputs = np.zeros([self.batch_limit, self.window], np.int32)
        inputs[:rows, :steps] = window
        state = {}
        for name, array in zip(self.names, arrays):
            padded = np.zeros([self.batch_limit, array.shape[1]], np.float32)
            padded[:rows] = array
            state["state_" + name] = padded
        result = self.runner.run(inputs, state)
        finals = [result["final_" + name][:rows] for name in self.names]
        hidden = result.get(HIDDEN_NAME)
        return (result[export_logits()][:rows, :steps],
                None if hidden is None else hidden[:rows, :steps], finals)

    def _advance_rows(self, ids, state):
        """`advance` of at most ``batch_limit`` rows: (logits, hidden or
        None, state)."""
        tokens = np.concatenate([state.pending, ids], axis=1)
        arrays, logits, hidden, start = state.arrays, [], [], 0
        pending = tokens[:, :0]
        while start < tokens.shape[1]:
            window = tokens[:, start:start + self.window]
            out, top, finals = self._call(window, arrays)
            logits.append(out)
            hidden.append(top)
            if window.shape[1] == self.window:
                arrays = finals
            else:
                pending = window
            start += self.window
        skip = state.pending.shape[1]
        return (np.concatenate(logits, axis=1)[:, skip:],
                None if hidden[0] is None
                else np.concatenate(hidden, axis=1)[:, skip:],
                LMState(arrays, pending.astype(np.int32)))

    def advance(self, ids, state, hidden=False):
        """Logits of ``ids`` ``[batch, n]`` (and with ``hidden`` the top
        layer's outputs) and the state after them.

        Raises:
          ValueError: ``hidden`` asked of a file exported without the
            ``hidden`` output (before the continuous cache existed).
        """
        if hidden and HIDDEN_NAME not in self.runner.outputs:
            raise ValueError(
                "%s has no %r output (exported before the continuous cache "
                "existed): export the model again (lm.export_model) to use "
                "the cache" % (self.path, HIDDEN_NAME))
        parts = [self._advance_rows(ids[first:first + self.batch_limit],
                                    state.rows(slice(
                                        first, first + self.batch_limit)))
                 for first in range(0, ids.shape[0], self.batch_limit)]
        logits = np.concatenate([p[0] for p in parts])
        state = LMState([np.concatenate([p[2].arrays[i] for p in parts])
                         for i in range(len(self.names))],
                        np.concatenate([p[2].pending for p in parts]))
        if hidden:
            return logits, np.concatenate([p[1] for p in parts]), state
        return logits, state

    def close(self):
        """Nothing to release."""


def export_logits():
    """The logits output's name in an exported language model."""
    return export.LOGITS_NAME
