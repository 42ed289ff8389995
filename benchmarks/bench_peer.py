"""The language model's training step side by side with its PyTorch peer
(issue 57): `bench_lm`'s ``awd`` step on each TensorFlow given against
`peer_awd_lstm`'s step (salesforce/awd-lstm-lm's recipe on PyTorch) at the
same sizes, in tokens per second.

The sides live in different virtualenvs, so each runs in its own
long-lived worker process (`_peer_protocol`), started with its CPU
affinity set to the same cores (core 0 for 1 thread, cores 0-1 for 2) and
its thread pools held to that many threads (TensorFlow: intra-op and
inter-op threads; torch: ``set_num_threads`` / ``set_num_interop_threads``;
both: OMP / MKL variables). After each worker's warm-up (whose first
steps' losses are printed: both train, from about ln(10000) = 9.21), every
round times ``--steps`` steps of each worker back to back, the order
rotated by one each round; a worker times its own steps (wall and process
CPU time). A TensorFlow side's ratio is the median over rounds of
(its tokens/s) / (the peer's tokens/s in the same round), so a shared
machine's slow drifts cancel; the range of the per-round ratios is printed
with it. The same ratio from process CPU times is a check at 1 thread (it
is not inflated by other jobs taking the core); at 2 threads it also
counts the thread pools' spin-waits, so the wall-time ratio is the figure.

Run: ``make bench-peer`` (builds ``.venv-peer``), or
``.venv-tf2/bin/python benchmarks/bench_peer.py --tf-python
.venv-tf2/bin/python --peer-python .venv-peer/bin/python [--rounds 12]
[--steps 5] [--threads 1 --threads 2] [--out docs/bench-peer.md]``.
Standard library only in this process; TensorFlow is imported by the
workers alone (``--serve-tf``).
"""
import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _peer_protocol  # noqa: E402

#: Tokens of one training step on both sides: batch 20 x bptt 35
#: (bench_lm.BATCH * bench_lm.BPTT, checked by the TensorFlow worker).
TOKENS = 20 * 35
PEER = "torch peer"


def round_order(names, index):
    """The order of round ``index``: ``names`` rotated left by ``index``
    (so every worker is timed first, second... equally often)."""
    shift = index % len(names)
    return list(names[shift:]) + list(names[:shift])


def summarize(times, peer=PEER, steps=1, tokens=TOKENS):
    """The figures of one set of rounds.

    Args:
      times: dict name -> list of per-round seconds (one entry per round,
        ``steps`` steps each), the peer's among them.
      peer: the peer's name in ``times``.
      steps, tokens: steps per round, tokens per step.

    Returns:
      dict name -> dict: ``tokens_per_s`` (the median round's), and for
      every name but the peer ``ratio`` (median over rounds of its tokens/s
      over the peer's in the same round: the peer's seconds over its
      own), ``low`` and ``high`` (the per-round ratios' range).

    Raises:
      ValueError: no rounds, a name without the peer's number of rounds,
        or the peer missing.
    """
    if peer not in times:
        raise ValueError("times: no entry for the peer %r (got %s)"
                         % (peer, sorted(times)))
    rounds = len(times[peer])
    if rounds == 0:
        raise ValueError("times: no rounds")
    result = {}
    for name, seconds in times.items():
        if len(seconds) != rounds:
            raise ValueError("times[%r]: %d rounds, the peer has %d"
                             % (name, len(seconds), rounds))
        figures = {"tokens_per_s": statistics.median(
            tokens * steps / s for s in seconds)}
        if name != peer:
            ratios = [p / s for s, p in zip(seconds, times[peer])]
            figures.update(ratio=statistics.median(ratios),
                           low=min(ratios), high=max(ratios))
        result[name] = figures
    return result


class Worker(object):
    """A worker process speaking `_peer_protocol`, started on ``cores``
    with the thread variables of ``threads`` (its stderr kept in a
    temporary file, shown if it fails). Constructing one raises OSError
    when ``argv[0]`` cannot be run or a core is not allowed."""

    def __init__(self, name, argv, cores, threads, env=None):
        self.name = name
        self.log = tempfile.TemporaryFile(mode="w+")
        full_env = dict(os.environ)
        full_env.update(_peer_protocol.thread_env(threads))
        full_env.update(env or {})
        cores = set(cores)
        # The affinity is set between fork and exec, so it holds before the
        # interpreter (and TensorFlow's or torch's thread pools) start.
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, env=full_env, universal_newlines=True,
            bufsize=1, preexec_fn=lambda: os.sched_setaffinity(0, cores))

    def request(self, line):
        """The worker's one-line reply to ``line``.

        Raises:
          RuntimeError: the worker exited or replied an error; the
            message names it and ends with its stderr's last lines.
        """
        reply = ""
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
            for reply in self.process.stdout:
                if reply.startswith((_peer_protocol.REPLY,
                                     _peer_protocol.ERROR)):
                    break
                # Not a reply (a library printing): kept with the stderr.
                self.log.write(reply)
            else:
                reply = ""
        except OSError:   # BrokenPipeError: the worker is gone
            reply = ""
        if not reply.startswith(_peer_protocol.REPLY):
            self.log.flush()
            # pread: the file offset is shared with the worker's stderr.
            fd = self.log.fileno()
            tail = "\n".join(os.pread(fd, os.fstat(fd).st_size, 0).decode(
                "utf-8", "replace").splitlines()[-15:])
            raise RuntimeError("worker %s: %r -> %s\n%s" % (
                self.name, line, reply[2:].strip() or "exited (%s)"
                % self.process.poll(), tail))
        return reply[len(_peer_protocol.REPLY):].strip()

    def close(self):
        """Asks the worker to quit; kills it if it has not within 30 s."""
        try:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
            self.process.wait(30)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.log.close()


def measure(workers, rounds, steps, warmup=3, loss_steps=8):
    """Times ``workers`` (dict name -> `Worker`) side by side.

    Each worker first runs ``loss_steps`` steps returning their losses,
    then ``warmup`` more; then ``rounds`` rounds, each timing ``steps``
    steps of every worker in `round_order`.

    Returns:
      ``(infos, losses, wall, cpu)``: dicts name -> the worker's ``info``
      line, its list of losses, its per-round wall and CPU seconds.

    Raises:
      RuntimeError: a worker failed (`Worker.request`).
    """
    names = list(workers)
    infos = {n: workers[n].request("info") for n in names}
    losses = {n: [float(v) for v in workers[n].request(
        "loss %d" % loss_steps).split()] for n in names}
    for n in names:
        workers[n].request("steps %d" % warmup)
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for index in range(rounds):
        for n in round_order(names, index):
            seconds = workers[n].request("steps %d" % steps).split()
            wall[n].append(float(seconds[0]))
            cpu[n].append(float(seconds[1]))
    return infos, losses, wall, cpu


def table(threads, infos, losses, wall, cpu, steps):
    """Markdown rows of one thread setting: tokens/s, the ratio to the
    peer (per-round median and range; the same from CPU times), the
    losses of the first steps."""
    figures = summarize(wall, steps=steps)
    by_cpu = summarize(cpu, steps=steps)
    rows = []
    for name in sorted(infos, key=lambda n: (n == PEER, n)):
        f = figures[name]
        ratio = ("%.3f x (%.2f-%.2f)" % (f["ratio"], f["low"], f["high"])
                 if name != PEER else "1")
        cpu_ratio = ("%.3f x" % by_cpu[name]["ratio"] if name != PEER
                     else "1")
        rows.append("| %d | %s | %s | %.0f | %s | %s | %.3f -> %.3f |" % (
            threads, name, infos[name], f["tokens_per_s"], ratio, cpu_ratio,
            losses[name][0], losses[name][-1]))
    return rows


HEADER = ("| threads | side | worker | tokens/s (median round) | "
          "x peer: median of per-round ratios (range) | x peer, CPU time | "
          "loss, first -> last warm-up step |\n|---|---|---|---|---|---|---|")


def _cores(threads, first=0):
    """The cores a setting of ``threads`` threads runs on: ``threads`` of
    the cores this process may use, from its ``first``-th on (e.g. 1 to
    keep off core 0 where other jobs are pinned).

    Raises:
      ValueError: fewer allowed cores than that.
    """
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < first + threads:
        raise ValueError("--threads %d from --first-core %d: only %d "
                         "core(s) allowed here (%s)"
                         % (threads, first, len(allowed), allowed))
    return allowed[first:first + threads]


def _tf_name(python):
    """A TensorFlow worker's name: ``tf <its venv's directory>``."""
    return "tf " + os.path.basename(os.path.dirname(os.path.dirname(
        os.path.abspath(python))))


def run(args):
    """Every thread setting's rows (see `table`); prints them as it goes.

    Raises:
      RuntimeError: a worker failed.
      ValueError: more threads than allowed cores.
    """
    rows = []
    for threads in args.threads:
        cores = _cores(threads, args.first_core)
        workers = {}
        try:
            for python in args.tf_python:
                # TF >= 2.16 runs the v1 RNN cells only with tf-keras.
                workers[_tf_name(python)] = Worker(
                    _tf_name(python), [python, os.path.abspath(__file__),
                                       "--serve-tf", "--threads",
                                       str(threads)],
                    cores, threads, {"TF_USE_LEGACY_KERAS": "1"})
            workers[PEER] = Worker(PEER, [
                args.peer_python, os.path.join(HERE, "peer_awd_lstm.py"),
                "--serve", "--threads", str(threads)], cores, threads)
            measured = measure(workers, args.rounds, args.steps)
        finally:
            for worker in workers.values():
                worker.close()
        new = table(threads, *measured, steps=args.steps)
        if not rows:
            print(HEADER)
        print("\n".join(new))
        sys.stdout.flush()
        rows += new
    return rows


def _processor():
    """The processor's model name (/proc/cpuinfo), or platform's guess."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def write_page(path, argv, started, load, rows, args):
    """Writes the Markdown page ``path`` (with ``args.append``: adds to
    it): the command, the machine (its load average at ``load`` when the
    run started and now), the table."""
    section = [
        "- command: `python benchmarks/bench_peer.py %s`" % " ".join(argv),
        "- environment: %s; %s, %d CPUs; load average %.2f at start, "
        "%.2f at the end; %d rounds x %d steps (%d tokens a step) a side"
        % (started, _processor(), os.cpu_count(), load, os.getloadavg()[0],
           args.rounds, args.steps, TOKENS), "",
        HEADER] + rows + [""]
    if args.append and os.path.exists(path):
        with open(path, "a") as f:
            f.write("\n".join([""] + section))
        return
    text = [
        "# The LM's training step against its PyTorch peer", "",
        "Written by `make bench-peer` (`benchmarks/bench_peer.py`); "
        "regenerate it rather than editing it. The setup is in the "
        "module's docstring; docs/versions.md discusses the figures.", ""]
    with open(path, "w") as f:
        f.write("\n".join(text + section))


def serve_tf(threads):
    """The TensorFlow worker: bench_lm's ``awd`` step on ``threads``
    threads, served over `_peer_protocol` (stdout is the protocol's).

    Raises:
      AssertionError: bench_lm's step is not `TOKENS` tokens.
    """
    import bench_lm  # TensorFlow: only in the worker
    assert bench_lm.BATCH * bench_lm.BPTT == TOKENS
    sess, train_op, xent = bench_lm.build_step_and_loss("awd", threads)
    version = bench_lm.tf.VERSION if hasattr(bench_lm.tf, "VERSION") \
        else bench_lm.tf.__version__
    _peer_protocol.serve(
        lambda: sess.run(train_op),
        lambda: float(sess.run([train_op, xent])[1]),
        _peer_protocol.describe("TensorFlow", version, threads))


def main(argv=()):
    """The command line (see the module's docstring). Raises SystemExit on
    bad arguments, RuntimeError when a worker fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tf-python", action="append", default=[],
                        help="a TensorFlow environment's python "
                             "(repeatable)")
    parser.add_argument("--peer-python", default=".venv-peer/bin/python")
    parser.add_argument("--threads", type=int, action="append",
                        help="threads (and cores) per side, repeatable "
                             "(default: 1 and 2)")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5,
                        help="steps per side per round")
    parser.add_argument("--first-core", type=int, default=0,
                        help="the index, among the allowed cores, of the "
                             "first core the workers run on (default 0)")
    parser.add_argument("--out", help="write the table as a Markdown page")
    parser.add_argument("--append", action="store_true",
                        help="add the table to the --out page")
    parser.add_argument("--serve-tf", action="store_true",
                        help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    args.threads = args.threads or [1, 2]
    if args.serve_tf:
        serve_tf(args.threads[0])
        return
    if not args.tf_python:
        parser.error("give at least one --tf-python")
    if args.rounds < 1 or args.steps < 1:
        parser.error("--rounds and --steps must be >= 1")
    started = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    print("LM training step (batch 20 x 35, vocab 10000, 2 x 200) against "
          "the PyTorch peer; %d rounds x %d steps; load average %.2f"
          % (args.rounds, args.steps, load))
    rows = run(args)
    if args.out:
        write_page(args.out, list(argv), started, load, rows, args)
        print("wrote %s" % args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
