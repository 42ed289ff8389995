"""The language model's training step side by side with its PyTorch peer
(issue 57): `bench_lm`'s ``awd`` step on each TensorFlow given against
`peer_awd_lstm`'s step (salesforce/awd-lstm-lm's recipe on PyTorch) at the
same sizes, in tokens per second; and one LSTM layer's training step
(``--what layer``): the library's ``WeightDropLSTM`` and
``WeightDropLSTMCell`` (under ``dynamic_rnn``) with DropConnect 0.5 and
TensorFlow's ``LSTMCell`` (under ``dynamic_rnn``, no DropConnect: the
baseline) against ``nn.LSTM`` in salesforce's ``WeightDrop``
(``weight_hh_l0`` dropped, a fresh mask each step), all on
`_layer_task`'s task (batch 20 x 35 steps, mean squared error, plain SGD)
from the same starting weights.

The sides live in different virtualenvs, so each runs in its own
long-lived worker process (`_peer_protocol`; one per environment serving
every model of the run), started with its CPU affinity set to the same
cores (core 0 for 1 thread, cores 0-1 for 2) and its thread pools held to
that many threads (TensorFlow: intra-op and inter-op threads; torch:
``set_num_threads`` / ``set_num_interop_threads``; both: OMP / MKL
variables). After each side's warm-up (whose first steps' losses are
printed: the LM's train from about ln(10000) = 9.21), every round times
``--steps`` steps of each side back to back, the order rotated by one
each round; a worker times its own steps (wall and process CPU time). A
side's ratio is the median over rounds of (its tokens/s) / (the peer's
tokens/s in the same round), so a shared machine's slow drifts cancel;
the range of the per-round ratios is printed with it. The same ratio from
process CPU times is a check at 1 thread (it is not inflated by other
jobs taking the core); at 2 threads it also counts the thread pools'
spin-waits, so the wall-time ratio is the figure. A layer's rounds time
as many steps as make about `ROUND_SECONDS` of the slowest side; before
them every layer side runs three steps without DropConnect, whose losses
must agree with each other and with `_layer_task.numpy_loss` (the check
that both sides compute the same thing).

Run: ``make bench-peer`` (builds ``.venv-peer``), or
``.venv-tf2/bin/python benchmarks/bench_peer.py --tf-python
.venv-tf2/bin/python --peer-python .venv-peer/bin/python [--rounds 12]
[--steps 5] [--threads 1 --threads 2] [--what lm --what layer]
[--layer-size 200:200 --layer-size 400:1150] [--out docs/bench-peer.md]``.
Standard library only in this process (and numpy for the check's
reference); TensorFlow is imported by the workers alone (``--serve-tf``).
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
import _layer_task  # noqa: E402
import _peer_protocol  # noqa: E402

#: Tokens of one training step on both sides: batch 20 x bptt 35
#: (bench_lm.BATCH * bench_lm.BPTT and _layer_task's BATCH * TIME, checked
#: by the TensorFlow worker).
TOKENS = 20 * 35
PEER = "torch peer"
#: The layer rows' sides of each TensorFlow: (model kind, label); the last
#: is the baseline of the "x LSTMCell" column.
LAYER_KINDS = (("layer", "WeightDropLSTM"), ("cell", "WeightDropLSTMCell"),
               ("lstmcell", "LSTMCell"))
#: A layer round's target length per side, in seconds (`steps_for`).
ROUND_SECONDS = 0.25
#: How far the check's losses may be from the float64 reference
#: (relative): float32 rounding over 35 steps and three updates.
CHECK_RTOL = 1e-4


def round_order(names, index):
    """The order of round ``index``: ``names`` rotated left by ``index``
    (so every worker is timed first, second... equally often)."""
    shift = index % len(names)
    return list(names[shift:]) + list(names[:shift])


def steps_for(seconds, target=ROUND_SECONDS, most=50):
    """Steps per round that make a round of a side taking ``seconds`` a
    step last about ``target`` seconds: at least 1, at most ``most``.

    Raises:
      ValueError: ``seconds`` not positive.
    """
    if not seconds > 0:
        raise ValueError("seconds must be > 0, got %r" % (seconds,))
    return max(1, min(most, int(round(target / seconds))))


def parse_size(text):
    """``(depth, units)`` of a ``--layer-size`` ``'DEPTH:UNITS'``.

    Raises:
      argparse.ArgumentTypeError: not two positive ints.
    """
    parts = text.split(":")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0
                                  for p in parts):
        raise argparse.ArgumentTypeError(
            "a layer size is DEPTH:UNITS (positive ints), got %r" % text)
    return int(parts[0]), int(parts[1])


def layer_sides(tf_names, depth, units, drop=True):
    """The sides of one layer size: dict side name -> ``(worker name,
    model name)``, every `LAYER_KINDS` of each TensorFlow worker in
    ``tf_names`` (``'<worker> <label>'``), then the peer's ``layer``
    (`PEER`); ``drop`` False: the models without DropConnect."""
    sides = {}
    for name in tf_names:
        for kind, label in LAYER_KINDS:
            sides["%s %s" % (name, label)] = (name, _layer_task.model_name(
                kind, depth, units, drop))
    sides[PEER] = (PEER, _layer_task.model_name("layer", depth, units,
                                                drop))
    return sides


def worker_models(groups):
    """dict worker name -> the sorted models it serves, from ``groups``
    (dicts side name -> ``(worker name, model name)``)."""
    models = {}
    for sides in groups:
        for worker, model in sides.values():
            models.setdefault(worker, set()).add(model)
    return {worker: sorted(names) for worker, names in models.items()}


def check_losses(losses, reference, rtol=CHECK_RTOL):
    """Checks the sides' losses without DropConnect: every side's first
    loss within ``rtol`` (relative) of ``reference`` (the float64 first
    step, `_layer_task.numpy_loss`), and every later one within ``rtol``
    of the first side's (the same SGD steps from the same weights).

    Args:
      losses: dict side name -> list of the first steps' losses.

    Returns:
      The largest relative deviation found.

    Raises:
      ValueError: a side out of tolerance (named, with its losses), or
        sides with different numbers of losses.
    """
    first = next(iter(losses.values()))
    worst = 0.0
    for name, values in losses.items():
        if len(values) != len(first):
            raise ValueError("check: %s has %d losses, %s" % (
                name, len(values), len(first)))
        for step, (value, want) in enumerate(zip(
                values, [reference] + list(first[1:]))):
            deviation = abs(value - want) / abs(want)
            worst = max(worst, deviation)
            if deviation > rtol:
                raise ValueError(
                    "check: %s's loss at step %d without DropConnect is "
                    "%.7g, not %.7g (%s): the sides do not compute the "
                    "same thing; all: %s" % (
                        name, step + 1, value, want,
                        "numpy's" if step == 0 else "the first side's",
                        losses))
    return worst


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


class Side(object):
    """One model of a `Worker`: its ``steps`` and ``loss`` requests name
    the model (``_peer_protocol``), others go to the worker as they are."""

    def __init__(self, worker, model):
        self.worker, self.model = worker, model

    def request(self, line):
        """The worker's reply to ``line`` (for ``steps`` / ``loss``: about
        this side's model). Raises RuntimeError as `Worker.request`."""
        if line.split()[0] in ("steps", "loss"):
            line = "%s %s" % (line, self.model)
        return self.worker.request(line)


def measure(workers, rounds, steps, warmup=3, loss_steps=8):
    """Times ``workers`` (dict name -> `Worker` or `Side`) side by side.

    Each worker first runs ``loss_steps`` steps returning their losses,
    then ``warmup`` more; then ``rounds`` rounds, each timing ``steps``
    steps of every worker in `round_order` (``steps`` None: `steps_for`
    the slowest worker's time of one step after the warm-up).

    Returns:
      ``(infos, losses, wall, cpu, steps)``: dicts name -> the worker's
      ``info`` line, its list of losses, its per-round wall and CPU
      seconds; the steps per round.

    Raises:
      RuntimeError: a worker failed (`Worker.request`).
    """
    names = list(workers)
    infos = {n: workers[n].request("info") for n in names}
    losses = {n: [float(v) for v in workers[n].request(
        "loss %d" % loss_steps).split()] for n in names}
    for n in names:
        workers[n].request("steps %d" % warmup)
    if steps is None:
        steps = steps_for(max(float(workers[n].request("steps 1").split()[0])
                              for n in names))
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for index in range(rounds):
        for n in round_order(names, index):
            seconds = workers[n].request("steps %d" % steps).split()
            wall[n].append(float(seconds[0]))
            cpu[n].append(float(seconds[1]))
    return infos, losses, wall, cpu, steps


def _ratio(figures, name, peer=PEER):
    """A side's ratio cell: ``'1'`` for the peer, else the median ratio
    with the per-round range."""
    if name == peer:
        return "1"
    f = figures[name]
    return "%.3f x (%.2f-%.2f)" % (f["ratio"], f["low"], f["high"])


def _cpu_ratio(figures, name, peer=PEER):
    """A side's CPU-time ratio cell (``'1'`` for the peer)."""
    return "1" if name == peer else "%.3f x" % figures[name]["ratio"]


def table(threads, infos, losses, wall, cpu, steps):
    """Markdown rows of one thread setting: tokens/s, the ratio to the
    peer (per-round median and range; the same from CPU times), the
    losses of the first steps."""
    figures = summarize(wall, steps=steps)
    by_cpu = summarize(cpu, steps=steps)
    rows = []
    for name in sorted(infos, key=lambda n: (n == PEER, n)):
        rows.append("| %d | %s | %s | %.0f | %s | %s | %.3f -> %.3f |" % (
            threads, name, infos[name], figures[name]["tokens_per_s"],
            _ratio(figures, name), _cpu_ratio(by_cpu, name),
            losses[name][0], losses[name][-1]))
    return rows


HEADER = ("| threads | side | worker | tokens/s (median round) | "
          "x peer: median of per-round ratios (range) | x peer, CPU time | "
          "loss, first -> last warm-up step |\n|---|---|---|---|---|---|---|")


def layer_table(threads, sides, checked, measured):
    """Markdown rows of one layer size at one thread setting: as `table`
    (rows in ``sides``' order), plus each TensorFlow side's ratio to its
    own TensorFlow's ``LSTMCell`` (median of per-round ratios, wall time)
    and the check's losses.

    Args:
      threads: int.
      sides: `layer_sides`' dict (side name -> (worker, model)).
      checked: dict side name -> the losses without DropConnect.
      measured: `measure`'s result for ``sides``.
    """
    infos, losses, wall, cpu, steps = measured
    figures = summarize(wall, steps=steps)
    by_cpu = summarize(cpu, steps=steps)
    _, depth, units, _ = _layer_task.parse_model(sides[PEER][1])
    rows = []
    for name, (worker, _) in sides.items():
        base = "%s %s" % (worker, LAYER_KINDS[-1][1])
        to_cell = "-" if worker == PEER else _ratio(summarize(
            {n: wall[n] for n, (w, _) in sides.items() if w == worker},
            peer=base, steps=steps), name, base)
        rows.append("| %d | %d -> %d, %d steps a round | %s | %s | %.0f | "
                    "%s | %s | %s | %s | %.4f -> %.4f |" % (
                        threads, depth, units, steps, name, infos[name],
                        figures[name]["tokens_per_s"], _ratio(figures, name),
                        _cpu_ratio(by_cpu, name), to_cell,
                        " ".join("%.6f" % v for v in checked[name]),
                        losses[name][0], losses[name][-1]))
    return rows


LAYER_HEADER = (
    "| threads | layer: input -> units | side | worker | tokens/s (median "
    "round) | x peer: median of per-round ratios (range) | x peer, CPU "
    "time | x LSTMCell of the same TF (range) | loss without DropConnect, "
    "steps 1-3 | loss, first -> last warm-up step |\n"
    "|---|---|---|---|---|---|---|---|---|---|")


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


def _groups(args):
    """The run's groups of sides, each ``(kind, sides)``: ``('lm', {side
    name: (worker, 'lm')})`` and per layer size ``('layer', `layer_sides`)``
    as ``args.what`` asks."""
    names = [_tf_name(python) for python in args.tf_python]
    groups = []
    if "lm" in args.what:
        groups.append(("lm", dict([(n, (n, "lm")) for n in names]
                                  + [(PEER, (PEER, "lm"))])))
    if "layer" in args.what:
        groups += [("layer", layer_sides(names, depth, units))
                   for depth, units in args.layer_size]
    return groups


def _measure_layer(sides, workers, rounds):
    """The check (`check_losses`: three steps of each side's model without
    DropConnect against `_layer_task.numpy_loss`), then `measure` of the
    sides; returns ``(checked losses, measured)``.

    Raises:
      ValueError: the check failed. RuntimeError: a worker did.
    """
    _, depth, units, _ = _layer_task.parse_model(sides[PEER][1])
    plain = layer_sides([n for n in workers if n != PEER], depth, units,
                        drop=False)
    checked = {n: [float(v) for v in Side(workers[w], m).request(
        "loss 3").split()] for n, (w, m) in plain.items()}
    worst = check_losses(checked, _layer_task.numpy_loss(
        _layer_task.arrays(depth, units)))
    print("check %d -> %d: without DropConnect every side's losses agree "
          "(largest relative deviation %.1e)" % (depth, units, worst))
    # Three warm-up losses, not the LM's eight: the check has already run
    # three steps of each graph's twin, and a layer side's first steps are
    # its slowest.
    return checked, measure({n: Side(workers[w], m)
                             for n, (w, m) in sides.items()}, rounds, None,
                            loss_steps=3)


def run(args):
    """Every thread setting's rows (see `table` and `layer_table`);
    prints them as it goes.

    Returns:
      dict ``'lm'`` / ``'layer'`` -> the table's rows (as ``args.what``
      asks).

    Raises:
      RuntimeError: a worker failed.
      ValueError: more threads than allowed cores; a failed check.
    """
    groups = _groups(args)
    # The check's models (without DropConnect) are served too.
    names = [_tf_name(python) for python in args.tf_python]
    models = worker_models(
        [sides for _, sides in groups] +
        [layer_sides(names, depth, units, drop=False)
         for depth, units in args.layer_size if "layer" in args.what])
    rows = {kind: [] for kind, _ in groups}
    printed = None   # the kind of the table printed last
    for threads in args.threads:
        cores = _cores(threads, args.first_core)
        workers = {}
        try:
            for python in args.tf_python:
                # TF >= 2.16 runs the v1 RNN cells only with tf-keras.
                workers[_tf_name(python)] = Worker(
                    _tf_name(python), [python, os.path.abspath(__file__),
                                       "--serve-tf", "--threads",
                                       str(threads)] + _model_args(
                        models[_tf_name(python)]),
                    cores, threads, {"TF_USE_LEGACY_KERAS": "1"})
            workers[PEER] = Worker(PEER, [
                args.peer_python, os.path.join(HERE, "peer_awd_lstm.py"),
                "--serve", "--threads", str(threads)] + _model_args(
                    models[PEER]), cores, threads)
            for kind, sides in groups:
                if kind == "lm":
                    new = table(threads, *measure(
                        {n: Side(workers[w], m)
                         for n, (w, m) in sides.items()},
                        args.rounds, args.steps))
                else:
                    new = layer_table(threads, sides, *_measure_layer(
                        sides, workers, args.rounds))
                if kind != printed:
                    print(HEADER if kind == "lm" else LAYER_HEADER)
                    printed = kind
                print("\n".join(new))
                sys.stdout.flush()
                rows[kind] += new
        finally:
            for worker in workers.values():
                worker.close()
    return rows


def _model_args(models):
    """A worker's ``--model`` arguments."""
    return [word for model in models for word in ("--model", model)]


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
    run started and now), the tables (``rows``: `run`'s)."""
    section = [
        "- command: `python benchmarks/bench_peer.py %s`" % " ".join(argv),
        "- environment: %s; %s, %d CPUs; load average %.2f at start, "
        "%.2f at the end; %d rounds (%d tokens a step)%s"
        % (started, _processor(), os.cpu_count(), load, os.getloadavg()[0],
           args.rounds, TOKENS, ", the LM's %d steps a side a round"
           % args.steps if "lm" in rows else ""), ""]
    for kind, title, header in (
            ("lm", "The LM's training step", HEADER),
            ("layer", "One layer's training step (`--what layer`)",
             LAYER_HEADER)):
        if kind in rows:
            section += ["%s:" % title, "", header] + rows[kind] + [""]
    if args.append and os.path.exists(path):
        with open(path, "a") as f:
            f.write("\n".join([""] + section))
        return
    text = [
        "# The LM's and the layer's training step against their PyTorch "
        "peers", "",
        "Written by `make bench-peer` (`benchmarks/bench_peer.py`); "
        "regenerate it rather than editing it. The setup is in the "
        "module's docstring; docs/versions.md discusses the figures.", ""]
    with open(path, "w") as f:
        f.write("\n".join(text + section))


def serve_tf(threads, models):
    """The TensorFlow worker: ``models`` (`_layer_task.model_name`s, or
    ``'lm'``: bench_lm's ``awd`` step) on ``threads`` threads, served over
    `_peer_protocol` (stdout is the protocol's). The layer models are
    `_layer_step_tf`'s, DropConnect at the peer's rate (keep 0.5) unless
    named without it.

    Raises:
      AssertionError: a step is not `TOKENS` tokens.
      ValueError: an unknown model name.
    """
    import bench_lm  # TensorFlow: only in the worker
    import _layer_step_tf
    assert bench_lm.BATCH * bench_lm.BPTT == TOKENS
    assert _layer_task.BATCH * _layer_task.TIME == TOKENS
    served = {}
    for model in models:
        kind, depth, units, drop = _layer_task.parse_model(model)
        if kind == "lm":
            sess, train_op, loss = bench_lm.build_step_and_loss("awd",
                                                                threads)
        else:
            sess, train_op, loss = _layer_step_tf.build_step(
                kind, depth, units, threads, keep=0.5 if drop else 1.0)
        served[model] = (
            lambda sess=sess, op=train_op: sess.run(op),
            lambda sess=sess, op=train_op, loss=loss: float(
                sess.run([op, loss])[1]))
    version = bench_lm.tf.VERSION if hasattr(bench_lm.tf, "VERSION") \
        else bench_lm.tf.__version__
    _peer_protocol.serve(served, _peer_protocol.describe(
        "TensorFlow", version, threads))


def main(argv=()):
    """The command line (see the module's docstring). Raises SystemExit on
    bad arguments, RuntimeError when a worker fails, ValueError when the
    layer's check does."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tf-python", action="append", default=[],
                        help="a TensorFlow environment's python "
                             "(repeatable)")
    parser.add_argument("--peer-python", default=".venv-peer/bin/python")
    parser.add_argument("--threads", type=int, action="append",
                        help="threads (and cores) per side, repeatable "
                             "(default: 1 and 2)")
    parser.add_argument("--what", action="append", choices=("lm", "layer"),
                        help="the LM's step, one layer's, repeatable "
                             "(default: both)")
    parser.add_argument("--layer-size", type=parse_size, action="append",
                        metavar="DEPTH:UNITS",
                        help="the layer's input depth and units, "
                             "repeatable (default 200:200, the LM's)")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5,
                        help="the LM's steps per side per round (a "
                             "layer's: about %.2f s of the slowest side)"
                             % ROUND_SECONDS)
    parser.add_argument("--first-core", type=int, default=0,
                        help="the index, among the allowed cores, of the "
                             "first core the workers run on (default 0)")
    parser.add_argument("--out", help="write the tables as a Markdown page")
    parser.add_argument("--append", action="store_true",
                        help="add the tables to the --out page")
    parser.add_argument("--serve-tf", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--model", action="append", default=[],
                        help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    args.threads = args.threads or [1, 2]
    if args.serve_tf:
        serve_tf(args.threads[0], args.model or ["lm"])
        return
    args.what = args.what or ["lm", "layer"]
    args.layer_size = args.layer_size or [(200, 200)]
    if not args.tf_python:
        parser.error("give at least one --tf-python")
    if args.rounds < 1 or args.steps < 1:
        parser.error("--rounds and --steps must be >= 1")
    started = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    print("Training steps against the PyTorch peer (%s); %d rounds; load "
          "average %.2f" % (", ".join(
              ["LM: batch 20 x 35, vocab 10000, 2 x 200, %d steps a round"
               % args.steps] * ("lm" in args.what) +
              ["layer %d -> %d" % size for size in args.layer_size] *
              ("layer" in args.what)), args.rounds, load))
    rows = run(args)
    if args.out:
        write_page(args.out, list(argv), started, load, rows, args)
        print("wrote %s" % args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
