"""`make bench`: runs every benchmark module and prints ratios against the
baseline each measures in the same run (absolute times are noisy here)."""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _quiet  # noqa: F401,E402

# Benchmark modules, each exposing main(); filled in by the work that adds them.
MODULES = ["bench_sparse", "bench_cell", "bench_layer", "bench_quant",
           "bench_distributed"]


def main(argv):
    selected = argv[1:] or MODULES
    for name in selected:
        print("=== %s" % name)
        importlib.import_module(name).main()
    if not selected:
        print("no benchmarks registered yet")


if __name__ == "__main__":
    main(sys.argv)
