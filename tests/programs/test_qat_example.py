"""examples/qat_lstm.py: its dense head is in the form tf.contrib.quantize
rewrites, and bad flag combinations end in one named line, exit 2."""
import pytest
import tensorflow.compat.v1 as tf

from support import example
from support.versions import contrib, needs_contrib

qat_lstm = example("qat_lstm")


def _fake_quant_ops(graph, scope):
    return [op.name for op in graph.get_operations()
            if op.type.startswith("FakeQuant") and op.name.startswith(scope)]


@needs_contrib
@pytest.mark.parametrize("rewrite", ["create_training_graph",
                                     "create_eval_graph"])
def test_head_on_rnn_outputs_gets_fake_quant(fresh_graph, rewrite):
    rewrite = getattr(contrib.quantize, rewrite)
    outputs = tf.placeholder(tf.float32, [None, 5, 6])
    _, logits = qat_lstm.classify(outputs, 6, 3)
    # The plain 3-D use of a dense layer, for contrast: left in float.
    tf.layers.Dense(3, name="head_3d")(outputs)
    rewrite(fresh_graph)
    assert logits.shape.as_list() == [None, 5, 3]
    assert set(_fake_quant_ops(fresh_graph, "head/")) == {
        "head/weights_quant/FakeQuantWithMinMaxVars",
        "head/act_quant/FakeQuantWithMinMaxVars"}
    assert _fake_quant_ops(fresh_graph, "head_3d/") == []


@pytest.mark.parametrize("argv,names", [
    (["--depth", "3"], ["--classes 4", "--depth 3"]),
    (["--classes", "9"], ["--classes 9", "--depth 8"]),
    (["--units", "0"], ["--units"]),
    (["--lr", "-1"], ["--lr"]),
    (["--quant-delay-steps", "-2"], ["--quant-delay-steps"]),
    (["--batch", "x"], ["--batch"]),
    (["--threads", "-1"], ["--threads"]),
])
def test_bad_arguments_exit_2_with_one_line(capsys, argv, names):
    with pytest.raises(SystemExit) as stop:
        qat_lstm.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    for name in names:
        assert name in err[0]


def test_threads_flag_sets_the_session_threads():
    """--threads as in examples/awd_lm.py (the example had none: always 1)."""
    assert qat_lstm.parse_args([]).threads == 1
    args = qat_lstm.parse_args(["--threads", "3"])
    config = qat_lstm.session_config(args.threads)
    assert (config.intra_op_parallelism_threads,
            config.inter_op_parallelism_threads) == (3, 3)
