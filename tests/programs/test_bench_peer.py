"""benchmarks/bench_peer.py without torch: its figures from known
per-round times, its workers over the real line protocol (a stand-in
worker, and the TensorFlow worker on the suite's TensorFlow), pinned to
the cores asked for; the layer rows' task, its weights in nn.LSTM's
layout and its check; the PyTorch peer itself only where .venv-peer is
built."""
import argparse
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from support import BENCHMARKS, ROOT, load_program
from support.references import lstm_float_step, sigmoid

bench = load_program(os.path.join(BENCHMARKS, "bench_peer.py"))
task = load_program(os.path.join(BENCHMARKS, "_layer_task.py"))
PEER_PYTHON = os.path.join(ROOT, ".venv-peer", "bin", "python")
needs_peer = pytest.mark.skipif(
    not os.path.exists(PEER_PYTHON), reason="the PyTorch peer's "
    "environment is built by make bench-peer only")


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
    _peer_protocol.serve({"m": (lambda: sum(range(1000)),
                                lambda: next(losses))},
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
        infos, losses, wall, cpu, steps = bench.measure(
            workers, rounds=3, steps=2, warmup=1, loss_steps=2)
        with pytest.raises(RuntimeError, match="unknown request 'bogus'"):
            workers["tf"].request("bogus")
        # An error leaves the worker serving.
        assert workers["tf"].request("steps 1").count(" ") == 1
    finally:
        for worker in workers.values():
            worker.close()
    assert infos["tf"] == "stand-in 0, cores %d, 1 thread(s)" % core
    assert losses == {"tf": [9.0, 8.5], bench.PEER: [9.0, 8.5]}
    assert steps == 2
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


def test_a_worker_serves_models_by_name(tmp_path):
    script = tmp_path / "two.py"
    script.write_text(textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import _peer_protocol
        _peer_protocol.serve({"a": (lambda: None, lambda: 1.0),
                              "b": (lambda: None, lambda: 2.0)}, "two")
    """) % BENCHMARKS)
    worker = bench.Worker("two", [sys.executable, str(script)],
                          sorted(os.sched_getaffinity(0))[:1], 1)
    try:
        side = bench.Side(worker, "b")
        assert side.request("loss 2") == "2.000000 2.000000"
        assert bench.Side(worker, "a").request("loss 1") == "1.000000"
        assert side.request("info") == "two"
        assert side.request("steps 3").count(" ") == 1
        with pytest.raises(RuntimeError, match="name one of the models a, b"):
            worker.request("loss 1")
        with pytest.raises(RuntimeError, match="no model 'c' here"):
            bench.Side(worker, "c").request("steps 1")
    finally:
        worker.close()


def test_a_layer_round_lasts_about_a_quarter_second():
    assert bench.steps_for(0.05) == 5
    assert bench.steps_for(2.0) == 1
    assert bench.steps_for(1e-6) == 50
    assert bench.steps_for(0.1, target=1.0, most=4) == 4
    with pytest.raises(ValueError, match="> 0"):
        bench.steps_for(0.0)


def test_layer_sizes_and_model_names_round_trip():
    assert bench.parse_size("400:1150") == (400, 1150)
    for bad in ("400", "0:10", "a:b", "1:2:3"):
        with pytest.raises(argparse.ArgumentTypeError, match="DEPTH:UNITS"):
            bench.parse_size(bad)
    for kind in ("layer", "cell", "lstmcell"):
        for drop in (True, False):
            name = task.model_name(kind, 400, 1150, drop)
            assert task.parse_model(name) == (kind, 400, 1150, drop)
    assert task.parse_model("lm") == ("lm", None, None, True)
    for bad in ("gru-1-2", "layer-1", "layer-0-2", "lm-nodrop"):
        with pytest.raises(ValueError, match="unknown model"):
            task.parse_model(bad)


def test_each_tensorflow_has_three_layer_sides_and_the_peer_one():
    sides = bench.layer_sides(["tf a", "tf b"], 20, 30)
    assert list(sides) == [
        "tf a WeightDropLSTM", "tf a WeightDropLSTMCell", "tf a LSTMCell",
        "tf b WeightDropLSTM", "tf b WeightDropLSTMCell", "tf b LSTMCell",
        bench.PEER]
    assert sides["tf b WeightDropLSTMCell"] == ("tf b", "cell-20-30")
    assert sides[bench.PEER] == (bench.PEER, "layer-20-30")
    plain = bench.layer_sides(["tf a"], 20, 30, drop=False)
    assert plain["tf a LSTMCell"] == ("tf a", "lstmcell-20-30-nodrop")
    models = bench.worker_models([sides, plain, {"tf a": ("tf a", "lm")}])
    assert models["tf a"] == sorted(
        ["lm", "layer-20-30", "cell-20-30", "lstmcell-20-30",
         "layer-20-30-nodrop", "cell-20-30-nodrop",
         "lstmcell-20-30-nodrop"])
    assert models[bench.PEER] == ["layer-20-30", "layer-20-30-nodrop"]


def test_the_check_names_the_side_that_computes_something_else():
    good = {"a": [1.0, 0.9, 0.8], "b": [1.00000001, 0.9, 0.80000002]}
    assert bench.check_losses(good, 1.0) < 1e-7
    with pytest.raises(ValueError, match="b's loss at step 1 .*numpy's"):
        bench.check_losses({"a": [1.0, 0.9], "b": [1.01, 0.9]}, 1.0)
    # A side that learns differently (another update): the later steps.
    with pytest.raises(ValueError, match="b's loss at step 2 .*first side"):
        bench.check_losses({"a": [1.0, 0.9], "b": [1.0, 0.95]}, 1.0)
    with pytest.raises(ValueError, match="b has 1 losses"):
        bench.check_losses({"a": [1.0, 0.9], "b": [1.0]}, 1.0)


def test_the_layer_table_compares_each_side_with_its_own_lstmcell():
    sides = bench.layer_sides(["tf a"], 20, 30)
    names = list(sides)   # WeightDropLSTM, WeightDropLSTMCell, LSTMCell, peer
    # Per-round seconds of 2 steps: the layer twice as fast as LSTMCell in
    # round 1, 4 x in round 2; the peer 1 s.
    wall = dict(zip(names, ([1.0, 0.5], [3.0, 3.0], [2.0, 2.0],
                            [1.0, 1.0])))
    measured = ({n: "info %s" % n for n in names},
                {n: [0.3, 0.2] for n in names}, wall, wall, 2)
    rows = bench.layer_table(1, sides, {n: [0.3, 0.29, 0.28]
                                        for n in names}, measured)
    cells = [row.strip("|").split(" | ") for row in rows]
    assert [c[2] for c in cells] == names
    assert cells[0][1] == "20 -> 30, 2 steps a round"
    assert cells[0][4] == "2100"   # median of 2 x 700 tokens / 1 s, 0.5 s
    assert cells[0][5] == "1.500 x (1.00-2.00)"   # the peer's 1 s / 1, 0.5
    assert cells[0][7] == "3.000 x (2.00-4.00)"   # LSTMCell's 2 s / 1, 0.5
    assert cells[1][7] == "0.667 x (0.67-0.67)"
    assert cells[2][7] == "1" and cells[3][7] == "-" and cells[3][5] == "1"
    assert cells[3][8] == "0.300000 0.290000 0.280000"


def _torch_layout_step(x, c, h, w_ih, w_hh, b_ih, b_hh):
    """nn.LSTM's step as its documentation writes it (gates i, f, g, o)."""
    z = x.dot(w_ih.T) + b_ih + h.dot(w_hh.T) + b_hh
    i, f, g, o = np.split(z, 4, axis=1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def test_the_torch_layout_is_the_same_lstm():
    depth, units = 3, 5
    rng = np.random.RandomState(1)
    kernel = rng.randn(depth + units, 4 * units)
    bias = rng.randn(4 * units)
    x, c, h = (rng.randn(2, n) for n in (depth, units, units))
    for forget_bias in (1.0, 0.3):
        weights = task.torch_weights(kernel, bias, depth, forget_bias)
        assert [w.shape for w in weights] == [
            (4 * units, depth), (4 * units, units), (4 * units,),
            (4 * units,)]
        want = lstm_float_step(x, c, h, kernel, bias, forget_bias)
        got = _torch_layout_step(x, c, h, *weights)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="do not fit depth 4"):
        task.torch_weights(kernel, bias, 4)


def test_the_task_s_arrays_are_seeded_and_shaped():
    a, b = task.arrays(7, 9), task.arrays(7, 9)
    assert {k: v.shape for k, v in a.items()} == {
        "x": (20, 35, 7), "target": (20, 35, 9), "kernel": (16, 36),
        "bias": (36,)}
    assert all(np.array_equal(a[k], b[k]) and a[k].dtype == np.float32
               for k in a)
    assert np.abs(a["kernel"]).max() <= 1 / 3.0
    assert not np.array_equal(a["x"], task.arrays(7, 9, seed=1)["x"])
    with pytest.raises(ValueError, match="units must be a positive int"):
        task.arrays(7, 0)


def _layer_worker(models):
    return bench.Worker(
        "tf", [sys.executable, os.path.join(BENCHMARKS, "bench_peer.py"),
               "--serve-tf", "--threads", "1"] + bench._model_args(models),
        sorted(os.sched_getaffinity(0))[:1], 1, {"TF_USE_LEGACY_KERAS": "1"})


def test_the_tensorflow_worker_trains_the_three_layers_alike():
    """Without DropConnect, WeightDropLSTM, WeightDropLSTMCell and
    LSTMCell from the task's weights: the first loss is numpy's, the
    next ones (after the same SGD steps) agree; with it, the loss moves
    off the plain one."""
    depth, units = 6, 10
    plain = bench.layer_sides(["tf"], depth, units, drop=False)
    dropped = bench.layer_sides(["tf"], depth, units)
    worker = _layer_worker(bench.worker_models([plain, dropped])["tf"])
    try:
        losses = {name: [float(v) for v in bench.Side(worker, model).request(
            "loss 3").split()] for name, (_, model) in plain.items()
            if name != bench.PEER}
        with_drop = float(bench.Side(
            worker, dropped["tf WeightDropLSTM"][1]).request("loss 1"))
    finally:
        worker.close()
    reference = task.numpy_loss(task.arrays(depth, units))
    assert bench.check_losses(losses, reference) < bench.CHECK_RTOL
    assert abs(with_drop - reference) > 10 * bench.CHECK_RTOL * reference


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


def _peer_losses(model):
    out = subprocess.check_output(
        [PEER_PYTHON, "-W", "error",
         os.path.join(BENCHMARKS, "peer_awd_lstm.py"), "--steps", "2",
         "--model", model], universal_newlines=True)
    return [float(v) for v in out.split("loss ")[1].split(" -> ")]


@needs_peer
def test_the_peer_trains():
    first, last = _peer_losses("lm")
    assert abs(first - 9.21) < 0.05 and last < first


@needs_peer
def test_the_peer_layer_without_dropconnect_is_numpy_s_lstm():
    first, last = _peer_losses("layer-6-10-nodrop")
    reference = task.numpy_loss(task.arrays(6, 10))
    assert abs(first - reference) < bench.CHECK_RTOL * reference
    assert last < first
