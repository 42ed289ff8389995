"""Shared test setup: a quiet TensorFlow and a fresh graph per test."""
import collections
import faulthandler
import os
import sys

import tf1_awd_sparse.base._quiet  # noqa: F401  (before TensorFlow is imported)

import pytest  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

# What every TF1-style program does on TensorFlow 2.x (harmless on 1.x):
# graph mode, v1 control flow and variables. tests/base/test_compat.py checks,
# in subprocesses, what the library does when this is left out.
tf.disable_v2_behavior()
from hypothesis import HealthCheck, settings  # noqa: E402

# Property-based tests (the test_properties_*.py files). Default: a fixed
# example budget and seed (derandomize), so `make test` tries the same cases
# in about a minute; `pytest --hypothesis-profile long` tries ten times as
# many, drawn afresh, and runs the long numerics (tests/layers/test_numerics.py).
# No deadline: building a TensorFlow graph per example is slow; no
# database: nothing is written into the tree.
_PROPERTY_SETTINGS = dict(
    deadline=None, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow,
                           HealthCheck.function_scoped_fixture,
                           HealthCheck.filter_too_much])
settings.register_profile("default", max_examples=50, derandomize=True,
                          **_PROPERTY_SETTINGS)
settings.register_profile("long", max_examples=500, **_PROPERTY_SETTINGS)
settings.load_profile("default")

SHARED_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                           "data")


# The costliest test files first (each over 30 s of test time on TF
# 1.13.1; docs/testing.md): under xdist's --dist loadfile a worker takes
# whole files in this order, so no long file is left to one worker at the
# end while the other idles. Only the order changes; a file not named here
# keeps its place after these.
COSTLY_FIRST = ("test_pipeline.py", "test_compose.py", "test_demo.py",
                "test_distill.py", "test_lm_script.py", "test_lm_quant.py",
                "test_compress.py",
                "test_cluster.py", "test_bench_stream.py",
                "test_readme.py")


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(COSTLY_FIRST)}
    # A stable sort: each file's tests stay together and in their order.
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.fspath)),
                                         len(rank)))


@pytest.fixture(scope="session")
def lm_models(tmp_path_factory):
    """The tiny trained language models of `support.lm_api.loaded_models`
    (a float and a QAT run, their float / uint8 TFLite files), built once
    per test process and shared by the inference tests; read only."""
    from support import lm_api
    for paths in lm_api.loaded_models(tmp_path_factory):
        yield paths


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test builds into its own default graph, so names never leak.
    The graph has a seed (issue 41, item 4: no flaky test): every random op
    without an op seed (a default initializer, a dropout mask) then draws
    the same numbers in every run of the test; a test's own
    tf.set_random_seed replaces it."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        yield graph


@pytest.fixture
def sess(fresh_graph):
    """A session on the test's graph; single-threaded ops keep 2 cores free."""
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    with tf.Session(graph=fresh_graph, config=config) as session:
        yield session


def long_runs(config):
    """True under ``--hypothesis-profile long`` or with TF1_AWD_LONG=1:
    the long versions of the numerics tests run."""
    return (config.getoption("hypothesis_profile", None) == "long"
            or os.environ.get("TF1_AWD_LONG") == "1")


@pytest.fixture
def long_run(request):
    """Whether this run is a long one (see :func:`long_runs`)."""
    return long_runs(request.config)


# A crash of the test process (a signal in native code) prints its
# traceback innermost frame first, so a log that keeps only its tail loses
# the test. With TF1_AWD_CRASH_LOG set (the Makefile's test targets set
# it), the running test's id is kept in that file and the traceback of a
# crash is written under it; the Makefile prints the file's head when the
# process dies of a signal. Under pytest-xdist each worker keeps its own
# file (the path with ".gw0", ".gw1", ... appended), so a worker's crash
# names its own test.
_CRASH_LOG = {}


def _crash_log_path():
    path = os.environ.get("TF1_AWD_CRASH_LOG")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if path and worker:
        return "%s.%s" % (path, worker)
    return path


def pytest_sessionstart(session):
    path = _crash_log_path()
    if path:
        _CRASH_LOG["file"] = open(path, "w")
        faulthandler.enable(file=_CRASH_LOG["file"])


def pytest_runtest_logstart(nodeid, location):
    handle = _CRASH_LOG.get("file")
    if handle is not None:
        handle.seek(0)
        handle.truncate()
        handle.write("test: %s\n" % nodeid)
        handle.flush()


def pytest_sessionfinish(session):
    handle = _CRASH_LOG.pop("file", None)
    if handle is not None:
        handle.seek(0)
        handle.truncate()
        handle.close()
    # An xdist worker hands its counts to the controller, which prints the
    # summary (tests/conftest.py's XdistSummary).
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["tf1_awd_summary"] = _summary_of_this_process()


def _summary_of_this_process():
    """The property cases and numerics results this process recorded, as
    plain lists (xdist's workeroutput carries only builtin types)."""
    numerics = sys.modules.get("test_numerics")
    support = sys.modules.get("support.properties")
    return {
        "numerics": [list(row) for row in numerics.RESULTS]
        if numerics is not None else [],
        "cases": [[family, outcome, count] for (family, outcome), count
                  in support.CASES.items()] if support is not None else [],
    }


# What the xdist workers recorded, merged by the controller.
_WORKER_SUMMARIES = []


class XdistSummary(object):
    """Collects each worker's summary when it finishes (an xdist hook, so
    registered only where pytest-xdist is installed)."""

    @staticmethod
    def pytest_testnodedown(node, error):
        summary = getattr(node, "workeroutput", {}).get("tf1_awd_summary")
        if summary:
            _WORKER_SUMMARIES.append(summary)


class XdistOrder(object):
    """xdist's file scheduler in the collection's order (an xdist hook).

    ``--dist loadfile`` hands out files largest first by their number of
    tests, which leaves a long file of one test (the demo's) to the end;
    this one keeps the order `pytest_collection_modifyitems` made."""

    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        if config.getoption("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadFileScheduling

        class InCollectionOrder(LoadFileScheduling):
            _ordered = False

            def _assign_work_unit(self, node):
                if not self._ordered:
                    self._ordered = True
                    rank = {}
                    for nodeid in self.collection:
                        rank.setdefault(self._split_scope(nodeid), len(rank))
                    units = sorted(self.workqueue.items(),
                                   key=lambda unit: rank[unit[0]])
                    self.workqueue.clear()
                    self.workqueue.update(units)
                super(InCollectionOrder, self)._assign_work_unit(node)

        return InCollectionOrder(config, log)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistSummary(), "tf1_awd_xdist_summary")
        config.pluginmanager.register(XdistOrder(), "tf1_awd_xdist_order")


def pytest_terminal_summary(terminalreporter):
    """The property tests' count of cases tried, per function family, and
    the numerics runs' results (tests/layers/test_numerics.py), of this process or,
    under xdist, of all workers."""
    summaries = _WORKER_SUMMARIES or [_summary_of_this_process()]
    results = sorted(tuple(row) for s in summaries for row in s["numerics"])
    if results:
        terminalreporter.write_sep("-", "numerics runs")
        for model, steps, loss, largest in results:
            terminalreporter.write_line(
                "%-20s %6d steps  final loss %.4f  max |weight| %.3f"
                % (model, steps, loss, largest))
    cases = collections.Counter()
    for summary in summaries:
        for family, outcome, count in summary["cases"]:
            cases[family, outcome] += count
    if not cases:
        return
    families = sorted({family for family, _ in cases})
    outcomes = sorted({outcome for _, outcome in cases})
    terminalreporter.write_sep("-", "property cases tried")
    for family in families:
        counts = ", ".join("%d %s" % (cases[family, o], o)
                           for o in outcomes if cases[family, o])
        terminalreporter.write_line("%-28s %s" % (family, counts))
    terminalreporter.write_line("%-28s %d" % ("total", sum(cases.values())))
