"""A trained language model as an object: load, score, generate, stream.

``LanguageModel.load(path)`` opens a training run or compression stage
directory (its TF checkpoint, ``config.json`` and ``vocab.txt``, see
`awd_lm.config.modeldir`) or a ``.tflite`` file with its ``.tflite.json``
sidecar. Both backends give the same interface:

* ``score(texts)`` -> `Scores`: per-token natural-log probabilities,
  per-line totals, perplexity, out-of-vocabulary counts;
* ``perplexity(text)``, ``full_scores(sentence)`` (KenLM's conventions,
  in natural log; KenLM reports log10);
* ``evaluate(source)``: the training loop's evaluation (the stream cut
  into ``eval_batch_size`` rows, state carried), the same number as
  ``summary.json``'s ``test_ppl`` for the test split;
* ``generate(prompt, num_words, temperature, top_k, seed)`` -> text;
* ``step(ids, state)`` -> (log-probabilities, state) for streaming;
* ``tune_cache(valid_text)`` -> `CacheConfig`, the continuous cache
  pointer's window, theta and lambda chosen on validation text, then
  ``score(texts, cache=config)`` / ``evaluate(source, cache=config)``
  mix it into the probabilities (`awd_lm.graph.cache`; a TFLite file needs the
  ``hidden`` output that `export_model` writes).

Scoring conventions: every line is one sentence followed by ``<eos>``
(as `awd_lm.corpus.data` reads a corpus); the first line is conditioned on an
``<eos>`` from the zero state, so every word and every line's ``<eos>``
is scored. By default the state carries from line to line (a document);
``per_line=True`` starts each line afresh. Words outside the vocabulary
become ``<unk>`` and are counted (``Scores.oov``); a vocabulary without
``<unk>`` (the embedded corpus') refuses them.
"""
import collections
import os

import numpy as np

from tf1_awd_sparse.base.checks import check_positive_int, check_real
from tf1_awd_sparse.awd_lm.graph import cache as pointer
from tf1_awd_sparse.awd_lm.corpus import data
from tf1_awd_sparse.awd_lm.inference import lm_backends
# export_model lives beside resolve (model_files); lm.export_model stays
# its documented name.
from tf1_awd_sparse.awd_lm.inference.model_files import (  # noqa: F401
    export_model, resolve)
from tf1_awd_sparse.awd_lm.config import modeldir
from tf1_awd_sparse.awd_lm.graph.cache import CacheConfig  # noqa: F401 (public)
from tf1_awd_sparse.awd_lm.inference.lm_runner import log_softmax
from tf1_awd_sparse.awd_lm.inference.lm_backends import LMState  # noqa: F401 (public)
from tf1_awd_sparse.base.errors import Error

__all__ = ["LanguageModel", "LMState", "Scores", "OOVError", "CacheConfig",
           "export_model"]


Scores = collections.namedtuple("Scores", [
    "tokens", "log_probs", "totals", "counts", "perplexities", "perplexity",
    "num_tokens", "oov", "oov_words"])
Scores.__doc__ = """What `LanguageModel.score` returns.

Fields:
  tokens: per line, the words scored (``<unk>`` for unknown words) ending
    with ``<eos>``.
  log_probs: per line, float64 array of the natural-log probability of each
    token.
  totals: per line, the sum of its log_probs (KenLM's ``score``, in nats).
  counts: per line, tokens scored.
  perplexities: per line, ``exp(-total / count)``.
  perplexity: of all the tokens, ``exp(-sum(totals) / num_tokens)``.
  num_tokens: tokens scored.
  oov: words mapped to ``<unk>``.
  oov_words: Counter of those words.
"""


class OOVError(ValueError, Error):
    """A word outside a vocabulary that has no ``<unk>``."""


class LanguageModel(object):
    """A trained language model (see the module docstring).

    Build with `LanguageModel.load`. Attributes: ``words`` (the vocabulary,
    id order), ``word_to_id``, ``params``, ``produced_by``, ``config``,
    ``backend`` ('tf' or 'tflite'), ``batch_size`` (None: any; else the
    TFLite file's, which the model pads to).
    """

    def __init__(self, config, backend):
        self.config, self._backend = config, backend
        self.params, self.words = config["params"], config["words"]
        self.produced_by = config.get("produced_by", {})
        self.word_to_id = {w: i for i, w in enumerate(self.words)}
        if data.EOS not in self.word_to_id:
            raise modeldir.ConfigError("%s: the vocabulary has no %s"
                                       % (config["directory"], data.EOS))
        self.eos = self.word_to_id[data.EOS]
        self.unk = self.word_to_id.get(data.UNK)
        self.backend = backend.kind
        self.batch_size = backend.batch_limit

    @classmethod
    def load(cls, path, threads=1):
        """Opens a model.

        Args:
          path: a run / stage directory (config.json, vocab.txt and the
            checkpoint config.json names) or a ``.tflite`` file with its
            ``<file>.json`` sidecar.
          threads: intra-op threads of the TF session / interpreter.

        Returns:
          LanguageModel.

        Raises:
          modeldir.ConfigError: a path that is neither, a missing or bad
            config / vocab (named, unknown keys with the closest one).
          checkpoints.CheckpointError: a checkpoint that cannot be restored.
        """
        threads = check_positive_int(threads, "threads")
        config_path, kind = resolve(path)
        config = modeldir.read_config(config_path)
        if kind == "tf":
            if "checkpoint" not in config:
                raise modeldir.ConfigError("%s: names no checkpoint"
                                           % config_path)
            backend = lm_backends.TFBackend(config, threads)
        else:
            backend = lm_backends.TFLiteBackend(path, config, threads)
        return cls(config, backend)

    def close(self):
        """Releases the session (TF backend)."""
        self._backend.close()

    # -- text <-> ids -----------------------------------------------------

    def encode(self, words, oov=None):
        """Ids of a list of words; unknown words become ``<unk>``.

        Args:
          words: list of str.
          oov: optional Counter, incremented for each unknown word.

        Returns:
          list of int.

        Raises:
          OOVError: an unknown word and no ``<unk>`` in the vocabulary.
        """
        ids = []
        for word in words:
            index = self.word_to_id.get(word)
            if index is None:
                if self.unk is None:
                    raise OOVError("word %r is not in the vocabulary (%d "
                                   "words, no %s to map it to)"
                                   % (word, len(self.words), data.UNK))
                index = self.unk
                if oov is not None:
                    oov[word] += 1
            ids.append(index)
        return ids

    def decode(self, ids):
        """Text of ids: words joined by spaces, ``<eos>`` as a line break."""
        text = ""
        for index in ids:
            word = self.words[int(index)]
            if word == data.EOS:
                text += "\n"
            else:
                text += ("" if not text or text.endswith("\n") else " ") + word
        return text

    def _check_ids(self, ids):
        """ids as an int32 ``[batch, n]`` array in the vocabulary.

        Raises:
          ValueError: not integers, another rank, n = 0 or an id out of
            range.
        """
        array = np.asarray(ids)
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2 or array.size == 0 or not np.issubdtype(
                array.dtype, np.integer):
            raise ValueError("ids must be a non-empty int array [batch] or "
                             "[batch, n], got %r" % (ids,))
        if array.min() < 0 or array.max() >= len(self.words):
            raise ValueError("ids must be in [0, %d) (the vocabulary), got "
                             "values in [%d, %d]" % (len(self.words),
                                                     array.min(),
                                                     array.max()))
        return array.astype(np.int32)

    # -- streaming --------------------------------------------------------

    def zero_state(self, batch_size=1):
        """The state before any token, for ``batch_size`` streams."""
        batch_size = check_positive_int(batch_size, "batch_size")
        return LMState(self._backend.zero_arrays(batch_size),
                       np.zeros([batch_size, 0], np.int32))

    def step(self, ids, state=None):
        """Reads tokens and returns their next-word distributions.

        Args:
          ids: int ``[batch]`` (one token per stream) or ``[batch, n]``.
          state: an `LMState` of that batch, or None for the zero state.

        Returns:
          ``(log_probs, state)``: float64 ``[batch, n, vocab]`` natural-log
          probabilities of the word after each token, and the state after
          the last token.

        Raises:
          ValueError: bad ids, or a state of another batch size.
        """
        ids = self._check_ids(ids)
        if state is None:
            state = self.zero_state(ids.shape[0])
        if not isinstance(state, LMState) or \
                state.batch_size != ids.shape[0]:
            raise ValueError("state must be an LMState of batch %d (the "
                             "ids'), got %r" % (ids.shape[0], state))
        logits, state = self._backend.advance(ids, state)
        return log_softmax(logits), state

    def _stream_log_probs(self, stream, state, hidden=False, on_chunk=None):
        """Log-probabilities of ``stream[:, 1:]`` given ``stream[:, :-1]``,
        read in chunks from ``state``: float64 ``[batch, length - 1]``, and
        the state after; with ``hidden`` also the top layer's outputs
        ``[batch, length - 1, emb_size]`` (between the two). ``on_chunk``:
        None or a callable given the tokens of each chunk read."""
        picked, tops = [], []
        chunk = self._backend.chunk(stream.shape[0], len(self.words))
        for start in range(0, stream.shape[1] - 1, chunk):
            inputs = stream[:, start:start + chunk]
            targets = stream[:, start + 1:start + chunk + 1]
            inputs = inputs[:, :targets.shape[1]]
            out = self._backend.advance(inputs, state, hidden)
            logits, state = out[0], out[-1]
            if hidden:
                tops.append(out[1])
            picked.append(np.take_along_axis(log_softmax(logits),
                                             targets[..., None],
                                             axis=2)[..., 0])
            if on_chunk is not None:
                on_chunk(targets.size)
        picked = np.concatenate(picked, axis=1)
        if hidden:
            return picked, np.concatenate(tops, axis=1), state
        return picked, state

    # -- scoring ----------------------------------------------------------

    def _lines(self, texts):
        """Lines of str / list of str as word lists (blank lines dropped).

        Raises:
          ValueError: not text, or no words at all.
        """
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, (list, tuple)) or not all(
                isinstance(t, str) for t in texts):
            raise ValueError("texts must be a str or a list of str, got %r"
                             % (type(texts).__name__,))
        lines = [line.split() for text in texts
                 for line in text.splitlines()]
        lines = [words for words in lines if words]
        if not lines:
            raise ValueError("texts: no words to score")
        return lines

    def score(self, texts, per_line=False, cache=None):
        """Scores text, line by line.

        Args:
          texts: a str (one or more lines) or a list of str.
          per_line: False: the state carries from line to line (a
            document, as the training's evaluation reads a split); True:
            each line on its own from the zero state.
          cache: None, or a `CacheConfig` (e.g. from `tune_cache`): the
            continuous cache pointer mixed into the probabilities
            (`awd_lm.graph.cache`); its history carries as the state does.

        Returns:
          `Scores`.

        Raises:
          ValueError: no words, a bad cache (named), or a cache asked of a
            TFLite file without the ``hidden`` output; OOVError: an
            unknown word and no ``<unk>``.
        """
        oov = collections.Counter()
        tokens, scored = [], []
        for words, log_probs in self.iter_scores(self._lines(texts),
                                                 per_line, oov,
                                                 cache=cache):
            tokens.append(words)
            scored.append(log_probs)
        return _scores(tokens, scored, oov)

    def iter_scores(self, lines, per_line=False, oov=None, block=256,
                    cache=None):
        """Scores lines as they come (a long file, a progress bar).

        Args:
          lines: iterable of word lists (or str, split on white space);
            empty ones are skipped.
          per_line: as in `score`.
          oov: optional Counter of the words mapped to ``<unk>``.
          block: lines read per call of the model.
          cache: as in `score`.

        Yields:
          ``(tokens, log_probs)`` per non-empty line: its words (``<unk>``
          for unknown ones) and ``<eos>``, and their float64 natural-log
          probabilities.
        """
        block = check_positive_int(block, "block")
        if cache is not None:
            cache = pointer.check_config(cache)
        carried = (self.zero_state(1), self.eos, None)  # state, last, past
        group = []
        for line in lines:
            words = line.split() if isinstance(line, str) else list(line)
            if words:
                group.append(self.encode(words, oov) + [self.eos])
            if len(group) == block:
                items, carried = self._score_group(group, per_line, carried,
                                                   cache)
                for item in items:
                    yield item
                group = []
        if group:
            for item in self._score_group(group, per_line, carried,
                                          cache)[0]:
                yield item

    def _score_group(self, lines, per_line, carried, cache):
        """(scores of a list of id lines, each ending with <eos>; what
        carries to the next group: the state after them, the token read
        next, the cache's history) from ``carried``."""
        state, last, past = carried
        if per_line:
            scored = self._score_lines(lines, cache)
        else:
            stream = np.asarray([[last] + [i for ids in lines
                                           for i in ids]], np.int32)
            if cache is None:
                flat, state = self._stream_log_probs(stream, state)
            else:
                flat, top, state = self._stream_log_probs(stream, state,
                                                          True)
                mixed, past = pointer.apply(cache, flat[0], top[0],
                                            stream[0, 1:], past)
                flat = mixed[None]
            bounds = np.cumsum([0] + [len(ids) for ids in lines])
            scored = [flat[0, a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        return [([self.words[i] for i in ids], s)
                for ids, s in zip(lines, scored)], (state, lines[-1][-1],
                                                    past)

    def _score_lines(self, lines, cache=None):
        """Each line from the zero state (and an empty cache), several rows
        per call (padded at the end: the model is causal, padding changes
        nothing before it)."""
        rows = self.batch_size or 32
        scored = []
        for first in range(0, len(lines), rows):
            group = lines[first:first + rows]
            width = max(len(ids) for ids in group) + 1
            stream = np.full([len(group), width], self.eos, np.int32)
            for row, ids in enumerate(group):
                stream[row, 1:len(ids) + 1] = ids
            out = self._stream_log_probs(stream, self.zero_state(len(group)),
                                         cache is not None)
            for row, ids in enumerate(group):
                picked = out[0][row, :len(ids)]
                if cache is not None:
                    picked = pointer.apply(cache, picked,
                                           out[1][row, :len(ids)], ids)[0]
                scored.append(picked)
        return scored

    def perplexity(self, text, per_line=False, cache=None):
        """Perplexity of a text (all its lines): ``score(...).perplexity``."""
        return self.score(text, per_line, cache).perplexity

    def tune_cache(self, texts, windows=pointer.WINDOWS,
                   thetas=pointer.THETAS, lambdas=pointer.LAMBDAS,
                   details=False, progress=None):
        """The continuous cache's parameters chosen on validation text: the
        grid point of least cross-entropy over ``texts`` read as `score`
        reads a document (state and cache carried from line to line).

        Args:
          texts: the validation text (str or list of str, as `score`).
          windows, thetas, lambdas: the grid (`awd_lm.graph.cache`'s
            defaults).
          details: also return the validation perplexities.
          progress: None or a tqdm-like class (``progress(total=, desc=,
            unit=)`` with ``update`` and ``close``, e.g.
            ``base._progress.bar``): one display over the tokens read, one
            over the grid's windows.

        Returns:
          `CacheConfig`; with ``details``, ``(CacheConfig, {"perplexity":
          with it, "base_perplexity": without, "tokens": n})``.

        Raises:
          ValueError: no words, a bad grid (named), or a TFLite file
            without the ``hidden`` output; OOVError: an unknown word and
            no ``<unk>``.
        """
        ids = [self.eos] + [i for words in self._lines(texts)
                            for i in self.encode(words) + [self.eos]]
        stream = np.asarray([ids], np.int32)
        bar = (progress(total=stream.size - 1, desc="tune-cache: read",
                        unit="tok") if progress is not None else None)
        picked, top, _ = self._stream_log_probs(
            stream, self.zero_state(1), True,
            bar.update if bar is not None else None)
        if bar is not None:
            bar.close()
            bar = progress(total=len(windows), desc="tune-cache: grid",
                           unit="window")
        config, xent, base = pointer.grid_search(
            picked[0], top[0], stream[0, 1:], windows, thetas, lambdas,
            (lambda: bar.update(1)) if bar is not None else None)
        if bar is not None:
            bar.close()
        if not details:
            return config
        return config, {"perplexity": float(np.exp(xent)),
                        "base_perplexity": float(np.exp(base)),
                        "tokens": int(picked.size)}

    def full_scores(self, sentence):
        """KenLM's ``full_scores`` in natural log: one ``(log_prob, word,
        oov)`` per word of one sentence and its ``<eos>``, scored on its own.

        Raises:
          ValueError: not one non-empty line.
        """
        lines = self._lines(sentence)
        if len(lines) != 1:
            raise ValueError("sentence must be one line, got %d lines"
                             % len(lines))
        scores = self.score(sentence, per_line=True)
        words = lines[0] + [data.EOS]
        return [(float(lp), word, word not in self.word_to_id)
                for lp, word in zip(scores.log_probs[0], words)]

    def evaluate(self, source, batch_size=None, cache=None):
        """Perplexity as the training loop evaluates a split: the token
        stream cut into ``batch_size`` rows (`data.batchify`, default the
        model's ``eval_batch_size``; the tail that fills no row dropped),
        each read from the zero state, every token but a row's first scored.

        Args:
          source: a PTB-layout file's path (e.g. a corpus' test.txt), or a
            1-D array of ids.
          batch_size: rows, an int >= 1 (None: the model's
            ``params.optimization.eval_batch_size``).
          cache: None or a `CacheConfig`: the continuous cache pointer,
            one per row (`awd_lm.graph.cache`).

        Returns:
          dict with perplexity, xent (nats per token), tokens, oov.

        Raises:
          ValueError: no such file, or bad ids; a ``batch_size`` that is not
            a positive int, or None with params that name no
            ``eval_batch_size``; data.DataError: an unreadable file or a
            stream too short for ``batch_size``.
        """
        rows = self._eval_rows(batch_size)
        oov = collections.Counter()
        if isinstance(source, str):
            if not os.path.isfile(source):
                raise ValueError("source: %r is not a file" % (source,))
            ids = self.encode(data.read_words(source), oov)
        else:
            ids = self._check_ids(source)[:, 0].tolist()
        stream = data.batchify(np.asarray(ids, np.int32), rows)
        if cache is not None:
            cache = pointer.check_config(cache)
        out = self._stream_log_probs(stream, self.zero_state(stream.shape[0]),
                                     cache is not None)
        picked = out[0]
        if cache is not None:
            picked = np.stack([pointer.apply(cache, picked[r], out[1][r],
                                             stream[r, 1:])[0]
                               for r in range(stream.shape[0])])
        xent = -float(picked.mean())
        return {"perplexity": float(np.exp(xent)), "xent": xent,
                "tokens": int(picked.size), "oov": sum(oov.values())}

    def _eval_rows(self, batch_size):
        """`evaluate`'s rows: ``batch_size`` checked, or the model's
        ``eval_batch_size`` (never a silent stand-in: 0 is refused, and
        params without it name the argument to give)."""
        if batch_size is None:
            # A config that names none (not one of a run) gets no
            # stand-in either.
            if "eval_batch_size" not in self.params.to_flat():
                raise ValueError("batch_size: the model's params name no "
                                 "eval_batch_size; give batch_size")
            batch_size = self.params.optimization.eval_batch_size
        return check_positive_int(batch_size, "batch_size")

    # -- generation -------------------------------------------------------

    def generate(self, prompt, num_words, temperature=1.0, top_k=None,
                 seed=None, oov=None):
        """Continues a prompt word by word.

        Args:
          prompt: str (may be empty: the model starts after an ``<eos>``).
          num_words: int >= 1, words to draw (an ``<eos>`` counts, and
            shows as a line break).
          temperature: float >= 0; 0 picks the most likely word.
          top_k: None or int >= 1: draw among the k most likely words
            (1: the most likely).
          seed: None or int: the same seed draws the same words.
          oov: optional Counter, incremented for each prompt word mapped to
            ``<unk>`` (as in `encode` and `score`), so a caller can say
            which words the model did not know.

        Returns:
          the continuation as text (without the prompt).

        Raises:
          ValueError: a bad argument (named); OOVError: an unknown prompt
            word and no ``<unk>``.
        """
        if not isinstance(prompt, str):
            raise ValueError("prompt must be a str, got %r" % (prompt,))
        num_words = check_positive_int(num_words, "num_words")
        temperature = check_real(temperature, "temperature", low=0.0)
        if top_k is not None:
            top_k = check_positive_int(top_k, "top_k")
        rng = np.random.RandomState(seed)
        ids = [self.eos] + self.encode(prompt.split(), oov)
        log_probs, state = self.step(np.asarray([ids]), None)
        drawn = []
        for _ in range(num_words):
            word = _draw(log_probs[0, -1], temperature, top_k, rng)
            drawn.append(word)
            log_probs, state = self.step(np.asarray([[word]]), state)
        return self.decode(drawn)


def _draw(log_probs, temperature, top_k, rng):
    """One word id from a log-distribution (greedy at temperature 0 or with
    top_k 1; ties go to the lower id)."""
    if temperature == 0 or top_k == 1:
        return int(np.argmax(log_probs))
    scaled = log_probs / temperature
    if top_k is not None and top_k < scaled.size:
        cut = np.sort(scaled)[-top_k]
        scaled = np.where(scaled >= cut, scaled, -np.inf)
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    return int(rng.choice(probs.size, p=probs))


def _scores(tokens, scored, oov):
    """`Scores` of per-line log-probability arrays."""
    totals = [float(s.sum()) for s in scored]
    counts = [int(s.size) for s in scored]
    num = sum(counts)
    return Scores(tokens, scored, totals, counts,
                  [float(np.exp(-t / c)) for t, c in zip(totals, counts)],
                  float(np.exp(-sum(totals) / num)), num,
                  sum(oov.values()), oov)
