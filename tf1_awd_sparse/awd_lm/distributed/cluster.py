"""Running the language model on a cluster (Estimator, or the
MonitoredTrainingSession command line `awd_lm.monitored`): start and end
barriers for asynchronous parameter-server training, and MirroredStrategy
over the devices of one machine."""
from __future__ import absolute_import, division, print_function

import time

from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base.scalar_checks import check_positive_int, check_real

__all__ = ["ClusterBarrierHook", "mirrored_strategy"]


def _counter(name):
    """An int64 scalar on the ps, in no collection: never saved, never
    initialized by a Scaffold (the chief initializes it)."""
    return tf.Variable(tf.zeros([], tf.int64), name=name, trainable=False,
                       collections=[])


class ClusterBarrierHook(tf.compat.v1.train.SessionRunHook):
    """Start and end barriers for asynchronous parameter-server training.

    Without them the chief may finish before a worker has joined (Estimator
    delays each worker 5 s or more), and a worker may still step after the
    chief wrote its final checkpoint. Every training task waits, after its
    session is up, until all have joined; and when the global step reaches
    ``max_steps`` it waits until all have finished stepping, so the chief's
    final checkpoint holds every task's steps. Counters live on the ps and
    are never saved. Each task stops right after the first of its steps
    that leaves the global step at ``max_steps`` or more, so the final step
    is at most ``max_steps + num_tasks - 1``. A barrier gives up after
    ``timeout_secs`` (a task that died must not hang the others). A chief
    restarted against the same ps finds the old counts and does not wait.

    Args:
      num_tasks: training tasks of the cluster (chief + workers).
      max_steps: the global step at which training stops.
      is_chief: whether this task initializes the counters.
      timeout_secs: how long a barrier waits.

    Raises:
      ValueError: ``num_tasks`` or ``max_steps`` not a positive int, or
        ``timeout_secs`` not a positive number.
    """

    def __init__(self, num_tasks, max_steps, is_chief, timeout_secs=120.0):
        self._num_tasks = check_positive_int(num_tasks, "num_tasks")
        self._max_steps = check_positive_int(max_steps, "max_steps")
        self._is_chief = is_chief
        self._timeout = check_real(timeout_secs, "timeout_secs", low=0.0,
                                   low_open=True)
        self._ended = False

    def begin(self):
        with tf.device("/job:ps/task:0"), \
                tf.variable_scope("cluster_barrier"):
            self._joined = _counter("joined")
            self._finished = _counter("finished")
        self._init = tf.variables_initializer([self._joined, self._finished])
        self._ready = tf.is_variable_initialized(self._finished)
        self._join = self._joined.assign_add(1)
        self._finish = self._finished.assign_add(1)
        self._global_step = tf.train.get_global_step()

    def _wait(self, session, counter_value):
        deadline = time.time() + self._timeout
        while session.run(counter_value) < self._num_tasks:
            if time.time() > deadline:
                tf.logging.warning("cluster barrier: gave up after %.0f s",
                                   self._timeout)
                return
            time.sleep(0.05)

    def after_create_session(self, session, coord):
        deadline = time.time() + self._timeout
        if self._is_chief and not session.run(self._ready):
            session.run(self._init)
        while not session.run(self._ready) and time.time() < deadline:
            time.sleep(0.05)
        session.run(self._join)
        self._wait(session, self._joined)

    def after_run(self, run_context, run_values):
        # A fresh read each step: the value fetched with the step may be
        # stale by other tasks' steps, which would let this task overshoot.
        if self._ended:
            return
        session = run_context.session
        if session.run(self._global_step) >= self._max_steps:
            self._ended = True
            session.run(self._finish)
            self._wait(session, self._finished)
            run_context.request_stop()


def mirrored_strategy(num_devices):
    """``tf.distribute.MirroredStrategy`` over ``num_devices`` GPUs, or over
    as many CPU devices when there is no GPU (the session config must create
    them, see `runtime.session_config`'s ``num_cpus``).

    The core class on every version. TF 1.13's ``tf.contrib.distribute``
    class shares its implementation (``MirroredExtended`` subclasses the
    core one) and differs only in its constructor and in not splitting a
    dataset's batches in ``make_dataset_iterator``, which neither Estimator
    nor `awd_lm.monitored` calls: both feed through
    ``make_input_fn_iterator``, so each replica takes a whole batch of the
    input, and both average the replicas' gradients.

    Args:
      num_devices: replicas (devices) to mirror the model over.

    Returns:
      a ``tf.distribute.MirroredStrategy`` (``StrategyV1`` on 2.x).

    Raises:
      ValueError: ``num_devices`` not a positive int.
    """
    num_devices = check_positive_int(num_devices, "num_devices")
    # Imported here: listing devices initializes the runtime.
    from tensorflow.python.client import device_lib
    gpus = [d.name for d in device_lib.list_local_devices()
            if d.device_type == "GPU"]
    if gpus:
        return tf.distribute.MirroredStrategy(devices=gpus[:num_devices])
    return tf.distribute.MirroredStrategy(
        devices=["/cpu:%d" % i for i in range(num_devices)])
