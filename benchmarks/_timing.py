"""Interleaved timing shared by the benchmarks: ratios to a baseline
measured in the same rounds, robust to a shared machine's load."""
import argparse
import time

import numpy as np
import tensorflow.compat.v1 as tf


def interleaved_ratios(built, rounds, steps_per_round=2, warmup=3):
    """Per-variant medians over rounds of the step-time ratio to the first.

    Each round times every variant back to back (rotating the order), and
    the ratio is taken within the round, so slow drifts of a shared machine
    cancel. Both wall-clock and process CPU time are measured: with one
    intra-op and one inter-op thread the CPU time is what the step costs,
    and it is not inflated when other processes take the cores. The
    sessions are closed at the end.

    Args:
      built: list of ``(name, (session, fetches))``, the baseline first.
      rounds, steps_per_round, warmup: ints.

    Returns:
      ``({name: (wall_ratio, cpu_ratio, cpu_min_ratio)}, (base wall, base
      cpu))``: ratios of every variant but the baseline (the last: fastest
      round of the variant over fastest round of the baseline, the figure
      least disturbed by other jobs), and the baseline's median wall and
      CPU seconds per step.
    """
    wall, cpu = interleaved_times(built, rounds, steps_per_round, warmup)
    for _, (sess, _) in built:
        sess.close()
    base = built[0][0]
    ratios = {}
    for name, _ in built[1:]:
        ratios[name] = tuple(
            float(np.median(np.array(t[name]) / np.array(t[base])))
            for t in (wall, cpu)) + (min(cpu[name]) / min(cpu[base]),)
    return ratios, tuple(float(np.median(t[base])) / steps_per_round
                         for t in (wall, cpu))


def interleaved_times(built, rounds, steps_per_round=2, warmup=3):
    """The per-round times of `interleaved_ratios` (which closes nothing
    here): each round runs every variant ``steps_per_round`` times, back to
    back, the order rotated by one each round.

    Args:
      built: list of ``(name, (runner, fetches))``; a runner is anything
        with ``run(fetches)`` (a session, or `Calls` for plain callables).
      rounds, steps_per_round, warmup: ints.

    Returns:
      ``(wall, cpu)``: dicts name -> list of ``rounds`` seconds (wall-clock
      and process CPU time of the round's ``steps_per_round`` runs).
    """
    for _, (runner, fetches) in built:
        for _ in range(warmup):
            runner.run(fetches)
    wall = {name: [] for name, _ in built}
    cpu = {name: [] for name, _ in built}
    for r in range(rounds):
        shift = r % len(built)
        for name, (runner, fetches) in built[shift:] + built[:shift]:
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(steps_per_round):
                runner.run(fetches)
            wall[name].append(time.perf_counter() - start_wall)
            cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu


class Calls(object):
    """A session-like runner of plain callables for `interleaved_times`:
    ``run(fn)`` calls ``fn()``; ``close()`` does nothing."""

    def run(self, fn):
        """Calls ``fn`` with no arguments."""
        return fn()

    def close(self):
        """Nothing to release."""


def regression_task(batch, time_steps, units):
    """Seeded constant inputs and targets ``[batch, time, units]`` of the
    training-step benchmarks (call inside the benchmark's graph; sets its
    graph-level seed)."""
    tf.set_random_seed(0)
    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(batch, time_steps, units).astype(np.float32))
    target = tf.constant(rng.randn(batch, time_steps, units).astype(
        np.float32))
    return x, target


def stream_arguments(doc, rounds, tokens):
    """The command line of a streaming benchmark: ``--rounds``,
    ``--tokens`` (per row per round) and ``--tiny`` (a tiny model for a
    quick check or a test)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--tokens", type=int, default=tokens,
                        help="tokens per row per round")
    parser.add_argument("--tiny", action="store_true",
                        help="a tiny model (for a quick check or a test)")
    return parser
