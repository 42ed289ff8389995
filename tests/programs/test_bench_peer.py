"""benchmarks/bench_peer.py without torch: its figures from known
per-round times, its workers over the real line protocol (a stand-in
worker, and the TensorFlow worker on the suite's TensorFlow), pinned to
the cores asked for; the PyTorch peer itself only where .venv-peer is
built."""
import os
import subprocess
import sys
import textwrap

import pytest

from support import BENCHMARKS, ROOT, load_program

bench = load_program(os.path.join(BENCHMARKS, "bench_peer.py"))


def test_the_ratio_is_the_median_of_per_round_ratios():
    # Round 2 is disturbed on the TF side only: the median ignores it,
    # the range shows it.
    times = {"tf": [1.0, 4.0, 1.0], bench.PEER: [2.0, 2.0, 3.0]}
    figures = bench.summarize(times, steps=2, tokens=10)
    tf_side, peer = figures["tf"], figures[bench.PEER]
    assert tf_side["ratio"] == 2.0
    assert (tf_side["low"], tf_side["high"]) == (0.5, 3.0)
    assert tf_side["tokens_per_s"] == 20.0   # 2 steps x 10 tokens / 1 s
    assert peer["tokens_per_s"] == 10.0
    assert "ratio" not in peer


def test_summarize_refuses_uneven_rounds_and_a_missing_peer():
    with pytest.raises(ValueError, match="2 rounds, the peer has 3"):
        bench.summarize({"tf": [1.0, 1.0], bench.PEER: [1.0, 1.0, 1.0]})
    with pytest.raises(ValueError, match="no entry for the peer"):
        bench.summarize({"tf": [1.0]})
    with pytest.raises(ValueError, match="no rounds"):
        bench.summarize({"tf": [], bench.PEER: []})


def test_every_worker_leads_a_round_in_turn():
    names = ["a", "b", "c"]
    orders = [bench.round_order(names, i) for i in range(4)]
    assert orders == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"],
                      ["a", "b", "c"]]


_STAND_IN = textwrap.dedent("""
    import sys
    sys.path.insert(0, %r)
    import _peer_protocol
    losses = iter([9.0, 8.5, 8.0, 7.5])
    print("a stray print goes to stderr, not into the protocol")
    _peer_protocol.serve(lambda: sum(range(1000)), lambda: next(losses),
                         _peer_protocol.describe("stand-in", "0", 1))
""")


def test_workers_answer_over_the_protocol_on_their_core(tmp_path):
    script = tmp_path / "stand_in.py"
    script.write_text(_STAND_IN % BENCHMARKS)
    core = min(os.sched_getaffinity(0))
    workers = {name: bench.Worker(name, [sys.executable, str(script)],
                                  [core], 1)
               for name in ("tf", bench.PEER)}
    try:
        infos, losses, wall, cpu = bench.measure(workers, rounds=3, steps=2,
                                                 warmup=1, loss_steps=2)
        with pytest.raises(RuntimeError, match="unknown request 'bogus'"):
            workers["tf"].request("bogus")
        # An error leaves the worker serving.
        assert workers["tf"].request("steps 1").count(" ") == 1
    finally:
        for worker in workers.values():
            worker.close()
    assert infos["tf"] == "stand-in 0, cores %d, 1 thread(s)" % core
    assert losses == {"tf": [9.0, 8.5], bench.PEER: [9.0, 8.5]}
    for times in (wall, cpu):
        assert all(len(t) == 3 and min(t) >= 0 for t in times.values())
    rows = bench.table(1, infos, losses, wall, cpu, steps=2)
    assert rows[0].startswith("| 1 | tf | stand-in 0")
    assert rows[1].startswith("| 1 | %s |" % bench.PEER)
    assert rows[1].endswith("| 9.000 -> 8.500 |")


def test_a_worker_that_dies_is_named_with_its_stderr():
    worker = bench.Worker("broken", [sys.executable, "-c",
                                     "import sys; sys.exit('no such model')"],
                          sorted(os.sched_getaffinity(0))[:1], 1)
    try:
        with pytest.raises(RuntimeError, match="(?s)broken.*no such model"):
            worker.request("info")
    finally:
        worker.close()


def test_the_tensorflow_worker_trains_bench_lm_s_step():
    """The TF side on the suite's TensorFlow: bench_lm's awd step, its
    loss from about ln(10000) and falling, steps timed."""
    worker = bench.Worker(
        "tf", [sys.executable, os.path.join(BENCHMARKS, "bench_peer.py"),
               "--serve-tf", "--threads", "1"],
        sorted(os.sched_getaffinity(0))[:1], 1,
        {"TF_USE_LEGACY_KERAS": "1"})
    try:
        assert worker.request("info").startswith("TensorFlow ")
        losses = [float(v) for v in worker.request("loss 3").split()]
        wall, cpu = map(float, worker.request("steps 1").split())
    finally:
        worker.close()
    assert abs(losses[0] - 9.21) < 0.05 and losses[2] < losses[0]
    assert wall > 0 and cpu > 0


@pytest.mark.skipif(not os.path.exists(os.path.join(
    ROOT, ".venv-peer", "bin", "python")), reason="the PyTorch peer's "
    "environment is built by make bench-peer only")
def test_the_peer_trains():
    out = subprocess.check_output(
        [os.path.join(ROOT, ".venv-peer", "bin", "python"), "-W", "error",
         os.path.join(BENCHMARKS, "peer_awd_lstm.py"), "--steps", "2"],
        universal_newlines=True)
    first, last = (float(v) for v in out.split("loss ")[1].split(" -> "))
    assert abs(first - 9.21) < 0.05 and last < first
