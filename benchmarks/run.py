"""`make bench`: runs the benchmark modules, prints ratios against the
baseline each measures in the same run (absolute times are noisy here), and
writes the same output as a Markdown page, by default ``docs/bench.md``
(linked from ``docs/results.md``).

  python benchmarks/run.py                   # all; also writes docs/bench.md
  python benchmarks/run.py bench_cell        # one or more; prints only
  python benchmarks/run.py --out FILE [NAME ...]   # write FILE as well
  python benchmarks/run.py --no-out          # all, print only
  python benchmarks/run.py --update FILE NAME ...  # replace those sections

A run with named benchmarks writes no file unless ``--out`` is given, so a
partial run never replaces the full page; ``--update FILE`` replaces (or
adds, in `MODULES` order) only the named sections of an existing page,
each updated section saying the command and environment of its run. The
page is written only when every benchmark finished.
"""
import argparse
import datetime
import importlib
import io
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import _quiet  # noqa: F401,E402

# Benchmark modules, each exposing main(); `make bench` runs them in order.
MODULES = ["bench_sparse", "bench_cell", "bench_layer", "bench_lm",
           "bench_distill", "bench_stream", "bench_sparse_storage",
           "bench_fused", "bench_sparse_rows", "bench_quant",
           "bench_distributed"]
DEFAULT_OUT = os.path.join(ROOT, "docs", "bench.md")


class _Tee(object):
    """A stdout that writes to the real one and keeps a copy."""

    def __init__(self, stream):
        self.stream, self.copy = stream, io.StringIO()

    def write(self, text):
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


def environment():
    """One line: date, machine, interpreter and library versions."""
    import numpy
    import tensorflow as tf
    load = ("; load average %.2f at start" % os.getloadavg()[0]
            if hasattr(os, "getloadavg") else "")
    return ("%s UTC; %s %s, %d CPUs%s; CPython %s; TensorFlow %s; numpy %s"
            % (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
               platform.system(), platform.machine(), os.cpu_count() or 0,
               load, platform.python_version(), tf.__version__,
               numpy.__version__))


def _summary(module):
    """The first paragraph of a module's docstring, on one line."""
    doc = (module.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split())


def page(command, env, sections):
    """The Markdown page of one run.

    Args:
      command: the command line that produced it.
      env: the `environment` line.
      sections: list of (module name, summary, printed output).
    """
    lines = ["# Benchmark results", "",
             "Written by `make bench` (`benchmarks/run.py`); regenerate it "
             "rather than editing it. The figures are ratios against a "
             "baseline timed in the same run (absolute times are printed for "
             "scale only); each module's docstring gives the setup.", "",
             "- command: %s" % command, "- environment: %s" % env, ""]
    for name, summary, output in sections:
        lines += ["## %s" % name, "", summary, "", "```text",
                  output.rstrip("\n"), "```", ""]
    return "\n".join(lines)


def _sections_of(text):
    """``(head, {name: section text})`` of a `page`: the text before the
    first ``## `` heading, and each section from its heading on."""
    parts = ("\n" + text).split("\n## ")
    head = parts[0].lstrip("\n")
    return head, {p.split("\n", 1)[0].strip(): "## " + p.rstrip("\n") + "\n"
                  for p in parts[1:]}


def updated_page(text, command, env, sections):
    """``text`` (a `page`) with the named sections replaced, or added in
    `MODULES` order, each saying the command and environment of its run.

    Args:
      text: the existing page; command, env, sections: as `page`.
    """
    head, existing = _sections_of(text)
    for name, summary, output in sections:
        existing[name] = "\n".join([
            "## %s" % name, "", summary, "",
            "Updated by %s; environment: %s." % (command, env), "",
            "```text", output.rstrip("\n"), "```", ""])
    order = [n for n in MODULES if n in existing] + sorted(
        n for n in existing if n not in MODULES)
    return head.rstrip("\n") + "\n\n" + "\n".join(
        existing[n] for n in order)


def main(argv):
    parser = argparse.ArgumentParser(
        description="Runs the benchmarks (default: all, as make bench "
        "does) and writes their output as Markdown.",
        epilog="benchmarks: " + ", ".join(MODULES))
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="benchmarks to run (default: all)")
    parser.add_argument("--out", default=None,
                        help="Markdown file to write (default: %s when "
                        "every benchmark runs)" % os.path.relpath(DEFAULT_OUT,
                                                                  ROOT))
    parser.add_argument("--no-out", action="store_true",
                        help="write no file")
    parser.add_argument("--update", default=None, metavar="FILE",
                        help="replace only the named benchmarks' sections "
                        "of the existing page FILE")
    args = parser.parse_args(argv[1:])
    if args.update is not None and (args.out or args.no_out
                                    or not os.path.isfile(args.update)):
        parser.error("--update FILE: FILE must be an existing page, and "
                     "--out / --no-out are not used with it (got %r)"
                     % (args.update,))
    unknown = [n for n in args.names if n not in MODULES]
    if unknown:
        parser.error("unknown benchmark(s) %s; choose from %s"
                     % (", ".join(unknown), ", ".join(MODULES)))
    selected = args.names or MODULES
    out = None if args.no_out else (
        args.out or (DEFAULT_OUT if not args.names else None))
    command = "`%s`" % " ".join(["python benchmarks/run.py"] + argv[1:])
    if len(argv) == 1:
        command += " (what `make bench` runs)"
    env = environment()
    sections = []
    for name in selected:
        print("=== %s" % name)
        sys.stdout.flush()
        module = importlib.import_module(name)
        tee, real = _Tee(sys.stdout), sys.stdout
        sys.stdout = tee
        try:
            module.main()
        finally:
            sys.stdout = real
        sections.append((name, _summary(module), tee.copy.getvalue()))
    if args.update is not None:
        with open(args.update) as handle:
            text = updated_page(handle.read(), command, env, sections)
        out = args.update
    elif out is not None:
        text = page(command, env, sections)
    if out is not None:
        tmp = out + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(text)
        os.replace(tmp, out)
        print("written to %s" % out)


if __name__ == "__main__":
    main(sys.argv)
