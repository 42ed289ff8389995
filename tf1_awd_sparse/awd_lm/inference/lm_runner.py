"""A TFLite language model of `export.export_lm` run window by window,
the state carried (`LMRunner`), and its perplexity over a whole stream
(`tflite_perplexity`), the log-softmax in float64 numpy (`log_softmax`).
"""
import os

import numpy as np

from tf1_awd_sparse.base.data_checks import check_id_array
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.inference.export import LOGITS_NAME
from tf1_awd_sparse.export import eval_graph
from tf1_awd_sparse.export.runner import TFLiteRunner

__all__ = ["LMRunner", "tflite_perplexity", "log_softmax"]


class LMRunner(object):
    """Runs an exported language model window by window, carrying the
    state, on a ``[batch, length]`` id stream.

    Args:
      path: a file written by `export.export_lm`.
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
        language model of `export.export_lm` (e.g. a cell stack of
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
      path: a file written by `export.export_lm`.
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
