"""The cells, layers and dropouts eagerly and inside ``tf.function``
(issue 30), on every supported TensorFlow: one subprocess runs the cases of
tests/support/eager_cases.py (this process is in graph mode for good,
conftest.py), each case a test here.

What each case checks is in its docstring there. The ``tf_*`` cases mirror
TensorFlow's own tests with ``WeightDropLSTMCell`` in ``LSTMCell``'s place:

- core_rnn_test.py ``LSTMTest::testDynamicEquivalentToStaticRNN``,
  ``testDynamicEquivalentToStaticRNNWithSequenceLength``,
  ``testDynamicRNNWithTupleStates``, ``testDynamicRNNWithNestedTupleStates``;
- rnn_test.py ``RNNTest::testCellsBuild``;
- rnn_cell_test.py ``DropoutWrapperTest::testDropoutWrapper*``
  (``tf_dropout_wrapper``: KeepAll, KeepNoOutput,
  KeepNoStateExceptLSTMCellMemory, KeepNoInput, RecurrentOutput, and
  RecurrentStateInputAndOutput run; the WithSeed variants compare two
  graph-mode runs of one seed and are not mirrored);
- rnn_cell_test.py ``RNNCellTest::testSavedModel`` (``tf_saved_model``:
  a ``tf.Module`` with the cell and a ``tf.function`` step, saved and
  loaded).
"""
import json
import os
import subprocess
import sys

import pytest

from support import ROOT

PROGRAM = os.path.join(ROOT, "tests", "support", "eager_cases.py")

CASES = [
    "same_as_lstmcell_kr1", "same_as_lstmcell_eval", "layer_same_as_lstmcell",
    "dropconnect_mask_statistics", "one_run_block_is_one_run",
    "nested_one_run_blocks_are_the_outermost",
    "held_mask_resampled_by_its_update",
    "gradients_reach_the_kernel", "trains_with_a_tf_train_optimizer",
    "checkpoints_move_between_graph_and_eager",
    "sparse_cells_run", "quant_cell_refuses_with_the_fix",
    "graph_only_entry_points_refuse",
    "tf_dynamic_equivalent_to_static_rnn",
    "tf_dynamic_equivalent_to_static_rnn_with_sequence_length",
    "tf_dynamic_rnn_with_tuple_states",
    "tf_dynamic_rnn_with_nested_tuple_states", "tf_cells_build",
    "tf_dropout_wrapper", "control_flow_v2_one_mask_per_session_run",
    "function_same_as_eager_and_lstmcell", "function_one_mask_per_call",
    "function_held_mask_and_layer", "tf_saved_model",
]


@pytest.fixture(scope="module")
def results():
    """{case: record} of one run of every case."""
    proc = subprocess.run(
        [sys.executable, PROGRAM], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r["case"]: r for r in map(json.loads, proc.stdout.splitlines())}


def test_the_program_runs_exactly_these_cases(results):
    assert sorted(results) == sorted(CASES)


@pytest.mark.parametrize("name", CASES)
def test_case(results, name):
    record = results[name]
    if record["result"] == "skip":
        pytest.skip(record["message"])
    assert record["result"] == "ok", record
