"""Start a parameter-server cluster of the language model's distributed
command line on this machine (loopback ports), for tests, benchmarks and
trying the setup out.

Each task is a ``python examples/lm_task.py`` process (the command line of
`tf1_awd_sparse.awd_lm.estimator`, or with ``--entry monitored`` that of
`tf1_awd_sparse.awd_lm.monitored`, plus the test probe's ``--run-log``)
with its own ``TF_CONFIG``, started in the caller's working directory;
ports are picked free at start time; every process runs in its own process
group, is bounded by a timeout, and is killed when the `LocalCluster`
context exits, also on errors.

Example::

    with LocalCluster(["--model-dir", d, "--train-steps", "40"],
                      num_workers=1, timeout=120) as cluster:
        codes = cluster.wait()            # {'chief:0': 0, 'worker:0': 0}
"""
from __future__ import absolute_import, division, print_function

import json
import os
import signal
import socket
import subprocess
import sys
import time

__all__ = ["free_ports", "tf_config", "run_single", "LocalCluster",
           "ClusterError"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
TASK_SCRIPT = os.path.join(_HERE, "lm_task.py")


class ClusterError(RuntimeError):
    """A task failed or ran out of time; the message holds its log tail."""


def free_ports(n):
    """``n`` distinct TCP ports free on localhost right now.

    The sockets are held open until all ``n`` are picked, so the ports are
    distinct; another program may still take one before TensorFlow binds it
    (rare on a test machine).
    """
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("localhost", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def tf_config(cluster, task_type, task_index):
    """The ``TF_CONFIG`` JSON string of one task of ``cluster``.

    Args:
      cluster: dict job name -> list of 'host:port'.
      task_type: 'ps', 'chief' or 'worker'.
      task_index: index of the task in its job.
    """
    if task_index >= len(cluster.get(task_type, [])):
        raise ValueError("task: no %s:%d in cluster %s"
                         % (task_type, task_index, cluster))
    return json.dumps({"cluster": cluster,
                       "task": {"type": task_type, "index": task_index}})


def _env(tf_config_json=None):
    """This environment, with the project on PYTHONPATH and TF_CONFIG set
    (or removed when None)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                   if p])
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.pop("TF_CONFIG", None)
    if tf_config_json is not None:
        env["TF_CONFIG"] = tf_config_json
    return env


def _spawn(args, env, log_path, timeout, python=None):
    # --max-lifetime ends the process by itself even if its parent dies
    # without cleaning up (a ps would otherwise live forever).
    args = list(args) + ["--max-lifetime", str(timeout + 5.0)]
    with open(log_path, "w") as log:
        return subprocess.Popen(
            [python or sys.executable, TASK_SCRIPT] + args,
            # The caller's working directory: relative paths (--model-dir)
            # resolve where the caller means them.
            env=env, cwd=os.getcwd(), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)


def _kill(proc):
    """Kills a process started by this module and its process group."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()


def _tail(path, lines=30):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-lines:])
    except IOError:
        return "(no log)"


def run_single(args, timeout, log_path, python=None):
    """Runs one task process (``lm_task.py``) without TF_CONFIG, in the
    caller's working directory.

    Args:
      args: its command-line arguments.
      timeout: seconds it may run; it is killed after that, or if this call
        is interrupted.
      log_path: its output file.
      python: interpreter (default: this one).

    Raises:
      ClusterError: non-zero exit or timeout (with the log tail).
    """
    proc = _spawn(args, _env(), log_path, timeout, python)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClusterError("still running after %.0f s; log tail:\n%s"
                           % (timeout, _tail(log_path)))
    finally:
        _kill(proc)
    if code != 0:
        raise ClusterError("exited with %d; log tail:\n%s"
                           % (code, _tail(log_path)))


class LocalCluster(object):
    """One ps, a chief and ``num_workers`` workers on localhost.

    Args:
      args: command-line arguments shared by all tasks (those of
        `tf1_awd_sparse.awd_lm.estimator`, and ``--run-log``,
        ``--entry``; see ``lm_task.py``).
      num_workers: non-chief workers.
      timeout: seconds every process may live.
      log_dir: where each task's output goes (``<type>_<index>.log``).
      per_task_args: optional function ``(task_type, index) -> list`` of
        extra arguments for one task (e.g. its own ``--run-log``).
      python: interpreter (default: this one).
    """

    def __init__(self, args, num_workers=1, timeout=120.0, log_dir=".",
                 per_task_args=None, python=None):
        self.args = list(args)
        self.timeout = float(timeout)
        self.log_dir = log_dir
        self.per_task_args = per_task_args or (lambda task_type, index: [])
        self.python = python or sys.executable
        ports = free_ports(2 + num_workers)
        addr = ["localhost:%d" % p for p in ports]
        self.cluster = {"ps": addr[:1], "chief": addr[1:2],
                        "worker": addr[2:]}
        self.procs = {}
        self._deadline = None

    def task_names(self, job):
        """['job:0', ...] for one job of the cluster."""
        return ["%s:%d" % (job, i) for i in range(len(self.cluster[job]))]

    def log_path(self, name):
        """The output file of task 'type:index'."""
        return os.path.join(self.log_dir, name.replace(":", "_") + ".log")

    def start(self):
        """Starts every task (ps first)."""
        self._deadline = time.time() + self.timeout
        for job in ("ps", "chief", "worker"):
            for index in range(len(self.cluster[job])):
                name = "%s:%d" % (job, index)
                env = _env(tf_config(self.cluster, job, index))
                self.procs[name] = _spawn(
                    self.args + list(self.per_task_args(job, index)), env,
                    self.log_path(name), self.timeout, self.python)
        return self

    def wait(self):
        """Waits for the chief and workers (the ps never exits by itself).

        Returns:
          dict task name -> exit code.

        Raises:
          ClusterError: a task exited non-zero, or the timeout passed.
        """
        codes = {}
        for name in self.task_names("chief") + self.task_names("worker"):
            proc = self.procs[name]
            try:
                codes[name] = proc.wait(
                    timeout=max(0.0, self._deadline - time.time()))
            except subprocess.TimeoutExpired:
                raise ClusterError("%s still running after %.0f s; log "
                                   "tail:\n%s" % (name, self.timeout,
                                                  self.tail(name)))
            if codes[name] != 0:
                raise ClusterError("%s exited with %d; log tail:\n%s"
                                   % (name, codes[name], self.tail(name)))
        return codes

    def tail(self, name, lines=30):
        """The last lines of one task's output."""
        return _tail(self.log_path(name), lines)

    def stop(self):
        """Kills every task still running (its whole process group)."""
        for proc in self.procs.values():
            _kill(proc)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
