"""The language model's Estimator input pipeline: fixed-length BPTT windows
of a token stream, a disjoint share per worker."""
from __future__ import absolute_import, division, print_function

import numpy as np
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_positive_int
from tf1_awd_sparse.awd_lm.corpus import data

__all__ = ["bptt_batches", "make_input_fn"]


def bptt_batches(ids, batch_size, bptt):
    """Inputs and targets of consecutive fixed-length BPTT windows.

    Args:
      ids: 1-D int array, a token stream.
      batch_size: parallel streams per batch.
      bptt: window length (time steps).

    Returns:
      (inputs, targets): int32 arrays ``[n_windows, batch_size, bptt]``;
      targets are the inputs shifted by one token. A final window shorter
      than ``bptt`` is dropped.

    Raises:
      ValueError: ``batch_size`` or ``bptt`` not a positive int, or a
        stream too short for one window.
    """
    bptt = check_positive_int(bptt, "bptt")
    streams = data.batchify(ids, batch_size)
    n_windows = (streams.shape[1] - 1) // bptt
    if n_windows < 1:
        raise ValueError("ids: %d tokens make streams of %d, too short for "
                         "one window of bptt %d" % (len(ids), streams.shape[1],
                                                    bptt))
    starts = np.arange(n_windows) * bptt
    offsets = starts[:, None] + np.arange(bptt)[None, :]
    inputs = streams[:, offsets].transpose(1, 0, 2)
    targets = streams[:, offsets + 1].transpose(1, 0, 2)
    return inputs, targets


def make_input_fn(ids, batch_size, bptt, num_shards=1, shard_index=0,
                  repeat=True):
    """An Estimator ``input_fn`` over the BPTT windows of ``ids``.

    Args:
      ids: 1-D int array, the token stream.
      batch_size, bptt: as for `bptt_batches`.
      num_shards, shard_index: this worker takes windows ``shard_index``,
        ``shard_index + num_shards``, ... (a disjoint share per worker).
      repeat: cycle forever (training) or one pass (evaluation).

    Returns:
      A function returning a ``tf.data.Dataset`` of
      ``({'inputs': [batch, bptt]}, targets [batch, bptt])``, int32.

    Raises:
      ValueError: bad shard arguments, or fewer windows than shards.
    """
    num_shards = check_positive_int(num_shards, "num_shards")
    if not 0 <= shard_index < num_shards:
        raise ValueError("shard_index: expected 0 <= shard_index < "
                         "num_shards=%d, got %r" % (num_shards, shard_index))
    inputs, targets = bptt_batches(ids, batch_size, bptt)
    if len(inputs) < num_shards:
        raise ValueError("ids: %d windows cannot be shared by %d workers"
                         % (len(inputs), num_shards))

    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices(
            ({"inputs": inputs}, targets)).shard(num_shards, shard_index)
        return dataset.repeat() if repeat else dataset

    return input_fn
