"""The line protocol between `bench_peer` and its timing workers.

The two sides of the side-by-side benchmark live in different virtualenvs
(TensorFlow in ``.venv*``, PyTorch in ``.venv-peer``), so each runs in a
long-lived worker process that `bench_peer` drives over stdin / stdout,
one request a line, one reply a line (``= `` and the answer, or ``! ``
and an error; other lines on stdout, say a library's print at import,
are not replies and are skipped):

``steps K [MODEL]``  run K training steps of MODEL; reply ``<wall
                     seconds> <cpu seconds>`` (measured in the worker, so
                     the pipe's latency is not timed)
``loss N [MODEL]``   run N training steps of MODEL; reply their N losses
``info``             reply a one-line description (version, cores,
                     threads)
``quit``             exit

A worker may serve several models (say the LM and a layer at two sizes:
one process, one start-up, per thread setting); MODEL may be left out
when it serves one.

A failed request replies ``! <message>`` and the worker goes on serving.
Standard library only: it is imported by the TensorFlow workers (CPython
3.7 for TF 1.x, 3.11 for 2.x) and by the PyTorch one.
"""
import os
import sys
import time
import traceback


#: The prefixes of a reply and of an error reply.
REPLY, ERROR = "= ", "! "


def thread_env(threads):
    """The environment variables that hold OpenMP / MKL / oneDNN thread
    pools (used by torch, and by the math libraries under TensorFlow) to
    ``threads`` threads, as a dict of strings."""
    value = str(int(threads))
    return {"OMP_NUM_THREADS": value, "MKL_NUM_THREADS": value,
            "OPENBLAS_NUM_THREADS": value}


def serve(models, info, stream_in=None, stream_out=None):
    """Answers the requests on ``stream_in`` until ``quit`` or its end.

    Args:
      models: dict model name -> ``(step, loss_step)``: ``step`` a function
        of no argument running one training step, ``loss_step`` one
        running a step and returning its loss (a float).
      info: the reply to ``info`` (one line).
      stream_in, stream_out: text streams (default: this process's stdin
        and the stdout it started with; `sys.stdout` is pointed at stderr
        while serving, so a stray print cannot break the protocol).
    """
    stream_in = stream_in or sys.stdin
    if stream_out is None:
        stream_out = sys.stdout
        sys.stdout = sys.stderr
    for line in stream_in:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            reply = REPLY + _answer(words, models, info)
        except Exception:  # the parent shows it and stops
            reply = ERROR + " | ".join(
                traceback.format_exc().strip().splitlines()[-3:])
        stream_out.write(reply + "\n")
        stream_out.flush()


def _model(words, models):
    """The ``(step, loss_step)`` a ``steps`` / ``loss`` request names (its
    third word; the only model when there is none)."""
    if len(words) == 3:
        if words[2] not in models:
            raise ValueError("no model %r here (serving %s)"
                             % (words[2], ", ".join(sorted(models))))
        return models[words[2]]
    if len(models) != 1:
        raise ValueError("%r: name one of the models %s"
                         % (" ".join(words), ", ".join(sorted(models))))
    return list(models.values())[0]


def _answer(words, models, info):
    """The reply to one request (see the module's docstring)."""
    if words[0] == "info":
        return info
    if words[0] == "steps" and len(words) in (2, 3):
        step = _model(words, models)[0]
        count = int(words[1])
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            step()
        return "%.9f %.9f" % (time.perf_counter() - start_wall,
                              time.process_time() - start_cpu)
    if words[0] == "loss" and len(words) in (2, 3):
        loss_step = _model(words, models)[1]
        return " ".join("%.6f" % loss_step() for _ in range(int(words[1])))
    raise ValueError("unknown request %r" % " ".join(words))


def describe(framework, version, threads):
    """The ``info`` line of a worker: framework, version, the cores it may
    run on and its thread setting."""
    return "%s %s, cores %s, %d thread(s)" % (
        framework, version, ",".join(str(c) for c in sorted(
            os.sched_getaffinity(0))), threads)
