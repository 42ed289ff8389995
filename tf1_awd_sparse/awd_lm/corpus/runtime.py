"""What the training paths (the single-process loop `training.train` and
the distributed command lines `programs.estimator` and
`programs.monitored`) set up the same way: the corpus and the session
configuration."""
from __future__ import absolute_import, division, print_function

from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_nonnegative_int
from tf1_awd_sparse.awd_lm.corpus import data, synthetic

__all__ = ["load_corpus", "check_corpus", "session_config"]


def load_corpus(data_dir, params):
    """The corpus of a run: a PTB-layout directory, or the embedded one.

    Args:
      data_dir: a PTB-layout directory (see `data.read_ptb`), or None for
        the embedded corpus: a sample of the seeded hidden Markov source
        that ``params.corpus`` (its ``hmm_*`` entries) describes.
      params: the run's checked parameters, a `config.params.Params`
        (`config.params.as_params` makes one of a dict; this floor is
        below the configuration's, so the caller checks them).

    Returns:
      ``(corpus, floor, description)``: a `data.Corpus`; the source's exact
      test perplexity (the floor no model can beat) for the embedded corpus,
      None for a directory; one line describing the corpus.

    Raises:
      data.DataError: unreadable, missing or empty corpus files (one line
        naming the file).
    """
    if data_dir:
        corpus = data.read_ptb(data_dir)
        return corpus, None, (
            "corpus %s: vocab %d, tokens train %d valid %d test %d; words "
            "mapped to <unk>: valid %d, test %d" % (
                data_dir, len(corpus.vocab), len(corpus.train),
                len(corpus.valid), len(corpus.test),
                corpus.unk_counts["valid"], corpus.unk_counts["test"]))
    source = params.corpus
    corpus, hmm = synthetic.hmm_corpus(
        seed=source.hmm_seed, n_train=source.hmm_train,
        n_valid=source.hmm_valid, n_test=source.hmm_test,
        n_states=source.hmm_states, vocab_size=source.hmm_vocab)
    floor = synthetic.perplexity_floor(hmm, corpus.test)
    return corpus, floor, (
        "corpus %s: tokens train %d valid %d test %d; source (floor) test "
        "perplexity %.2f" % (corpus.name, len(corpus.train),
                             len(corpus.valid), len(corpus.test), floor))


def _split_names(data_dir, flag):
    """{split: how the error names it}: the file, or the embedded corpus
    and the flag giving its length."""
    if data_dir:
        return {split: "%s split (%s)" % (split, path) for split, path in
                data.find_split_files(data_dir).items()}
    return {split: "%s split (embedded corpus, %s)" % (
        split, flag("hmm_" + split)) for split in data.SPLITS}


def check_corpus(corpus, batch_sizes, bptt, data_dir, flag,
                 fixed_windows=False):
    """Checks that each split fills its batch (and, with ``fixed_windows``,
    one window of ``bptt`` steps per stream), before anything is trained.

    Args:
      corpus: the `data.Corpus` of `load_corpus`.
      batch_sizes: ``{split: (key, batch size)}`` of the splits used, each
        checked (the configuration's, ``Params.batch_sizes()``; this floor
        is below it): ``key`` is the setting ``flag`` names in the error.
      bptt: int >= 1, the window length (``--bptt``).
      data_dir: what `load_corpus` read (None: the embedded corpus).
      flag: function ``key -> how the command line names it`` (e.g.
        ``'--eval-batch-size'`` or ``'--hparams eval_batch_size'``).
      fixed_windows: the Estimator's input pipeline (`input_fn`), which
        only has whole ``bptt`` windows; the training loop also takes a
        shorter final window, so it only needs 2 tokens per stream.

    Raises:
      data.DataError: one line naming the split (its file) and the flags
        to change, with the largest values that fit.
      ValueError: a batch size that is not an int >= 1 (naming its flag).
    """
    names = _split_names(data_dir, flag)
    for split, (key, batch) in batch_sizes.items():
        ids = getattr(corpus, split)
        streams = data.batchify(ids, batch, names[split], flag(key))
        if fixed_windows and streams.shape[1] - 1 < bptt:
            fits = len(ids) // (bptt + 1)
            raise data.DataError(
                "%s: %d tokens make %d streams of %d, too short for one "
                "window of %s %d (the Estimator uses whole windows only; "
                "the training loop also takes a shorter final window): set "
                "%s <= %d%s" % (
                    names[split], len(ids), batch, streams.shape[1],
                    flag("bptt"), bptt, flag("bptt"), streams.shape[1] - 1,
                    " or %s <= %d" % (flag(key), fits) if fits else ""))


def session_config(threads=0, task_type=None, task_id=0, num_cpus=None,
                   inter_op_threads=None):
    """The ``tf.ConfigProto`` of one training process or cluster task.

    Args:
      threads: intra-op threads (0: TensorFlow's choice).
      task_type: in a cluster, this task's job ('chief', 'worker', ...):
        training tasks then see only the ps and themselves (device
        filters), so a task never waits for another worker.
      task_id: this task's index in its job.
      num_cpus: CPU devices to create (MirroredStrategy without a GPU).
      inter_op_threads: inter-op threads (default: ``threads``).

    Returns:
      ``tf.ConfigProto`` with soft placement on.

    Raises:
      ValueError: ``threads`` or ``inter_op_threads`` not an int >= 0
        (TensorFlow aborts the process on a negative count).
    """
    threads = check_nonnegative_int(threads, "threads")
    inter = check_nonnegative_int(
        threads if inter_op_threads is None else inter_op_threads,
        "inter_op_threads")
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=inter,
                            allow_soft_placement=True)
    # Grappler's passes otherwise stop at a deadline, so which rewrites a
    # graph gets (and its last bits) would depend on the machine's load;
    # exact resume needs the same graph every time.
    config.graph_options.rewrite_options.meta_optimizer_timeout_ms = -1
    if num_cpus:
        config.device_count["CPU"] = num_cpus
    if task_type in ("chief", "master", "worker"):
        config.device_filters.extend(
            ["/job:ps", "/job:%s/task:%d" % (task_type, task_id)])
    return config
