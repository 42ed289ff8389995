"""A test probe for the language model's distributed tasks, and the
command line that adds it: ``python examples/lm_task.py`` is
``python -m tf1_awd_sparse.awd_lm.estimator`` (``--entry estimator``, the
default where ``tf.estimator`` exists) or
``python -m tf1_awd_sparse.awd_lm.monitored`` (``--entry monitored``, the
default on TensorFlow 2.16+), plus ``--run-log FILE``.

`RunLogHook` records what one task did (its steps, losses, timing, where
its mask variables live and whether anything but this task changed them)
for the distributed tests and the throughput benchmark. It is not part of
the library: users watch training through TensorBoard and the log.
`LocalCluster` (``local_cluster.py``) starts its tasks with this command.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402  (before TensorFlow)

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from tf1_awd_sparse.base import compat as _compat  # noqa: E402
from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.awd_lm import estimator, monitored  # noqa: E402

#: The command lines this probe extends, by ``--entry``.
ENTRIES = {"estimator": estimator.main, "monitored": monitored.main}


class RunLogHook(tf.train.SessionRunHook):
    """Writes what one task did to a JSON file at the end of training:
    its own step count, the training losses of its steps, ``[time, own
    step]`` after ``warmup`` steps ('first') and after the last ('last'),
    for throughput, the device and a digest of each mask variable, and how
    often a mask changed between this task's own steps (it never should:
    only this task's update op writes its masks).

    Args:
      path: output JSON file.
      loss: the training loss tensor.
      warmup: steps excluded from the timing window.
    """

    def __init__(self, path, loss, warmup=3):
        self._path = path
        self._loss = loss
        self._warmup = warmup
        self._log = {"steps": 0, "losses": [], "foreign_mask_changes": 0}
        self._last_masks = None

    def begin(self):
        self._masks = mask_placement.mask_variables()
        self._mask_values = [_replica_values(v) for v in self._masks]

    def before_run(self, run_context):
        if self._mask_values and self._last_masks is not None:
            now = run_context.session.run(self._mask_values)
            if not _same(now, self._last_masks):
                self._log["foreign_mask_changes"] += 1
        return tf.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        # The step's update ops have already resampled this task's masks:
        # remember them.
        if self._mask_values:
            self._last_masks = run_context.session.run(self._mask_values)
        self._log["steps"] += 1
        self._log["losses"].append(float(run_values.results))
        mark = [time.time(), self._log["steps"]]
        if self._log["steps"] == self._warmup:
            self._log["first"] = mark
        self._log["last"] = mark

    def end(self, session):
        masks = session.run(self._mask_values) if self._mask_values else []
        self._log["masks"] = [
            {"name": v.name, "devices": _devices(v),
             "digest": [float(np.sum(m * np.arange(1, m.size + 1).reshape(
                 m.shape))) for m in values],
             "kept_fraction": [float(m.mean()) for m in values]}
            for v, values in zip(self._masks, masks)]
        with open(self._path, "w") as f:
            json.dump(self._log, f)


def _replica_values(variable):
    """Read tensors of every replica's copy of ``variable`` (one when not
    replicated)."""
    copies = _compat.replica_values(variable)
    if len(copies) > 1:
        return [v.read_value() for v in copies]
    return [tf.convert_to_tensor(variable)]


def _devices(variable):
    return [v.device for v in _compat.replica_values(variable)]


def _same(a, b):
    return all(np.array_equal(x, y) for xs, ys in zip(a, b)
               for x, y in zip(xs, ys))


RUN_LOG_FLAG = ("--run-log", dict(help="write this task's JSON run log here "
                                  "(steps, losses, timing, masks)"))


def _hooks(args, loss):
    return [RunLogHook(args.run_log, loss)] if args.run_log else []


def default_entry():
    """'estimator' where ``tf.estimator`` exists, else 'monitored'."""
    return "estimator" if _compat.estimator_available() else "monitored"


ENTRY_FLAG = ("--entry", dict(choices=sorted(ENTRIES),
                              default=default_entry(),
                              help="the command line to run (default: "
                              "estimator where tf.estimator exists)"))


def main(argv=None):
    """The command line ``--entry`` names, with ``--run-log``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    entry_parser = argparse.ArgumentParser(add_help=False)
    entry_parser.add_argument(ENTRY_FLAG[0], **ENTRY_FLAG[1])
    entry = entry_parser.parse_known_args(argv)[0].entry
    return ENTRIES[entry](argv, extra_flags=(RUN_LOG_FLAG, ENTRY_FLAG),
                          make_hooks=_hooks)


if __name__ == "__main__":
    sys.exit(main())
