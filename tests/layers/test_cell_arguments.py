"""The cell's one record: the ordered kernel transforms are what get_config
stores and build composes; the constructor's flags only make them."""
import inspect

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.transforms import kernel
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell


def test_the_signature_defaults_are_the_flag_defaults():
    signature = inspect.signature(WeightDropLSTMCell.__init__).parameters
    for flag, default in kernel.FLAG_DEFAULTS.items():
        assert signature[flag].default == default, flag


def _record_of(config):
    return [(c["class_name"], c["config"]) for c in
            config["kernel_transforms"]]


def test_get_config_stores_the_ordered_record_and_rebuilds_from_it():
    cell = WeightDropLSTMCell(8, weight_drop_kr=0.5, use_vd=True,
                              sparsity="l0", pruning_mask=True, seed=3)
    config = cell.get_config()
    assert [name for name, _ in _record_of(config)] == [
        "SparseWeights", "PruningMask", "DropConnect"]
    assert _record_of(config)[2][1]["keep_prob"] == 0.5
    assert _record_of(config)[2][1]["held"] is True
    # the flags beside the record describe it
    assert (config["weight_drop_kr"], config["use_vd"], config["sparsity"],
            config["pruning_mask"]) == (0.5, True, "l0", True)
    clone = WeightDropLSTMCell.from_config(config)
    assert _record_of(clone.get_config()) == _record_of(config)
    assert [type(t) for t in clone.kernel_transforms] == [
        kernel.SparseWeights, kernel.PruningMask, kernel.DropConnect]


def test_a_flag_edited_against_the_record_is_refused_by_name():
    config = WeightDropLSTMCell(8, weight_drop_kr=0.5).get_config()
    config["weight_drop_kr"] = 0.9   # edited by hand, record unchanged
    with pytest.raises(ValueError, match="'weight_drop_kr'.*makes "
                       "weight_drop_kr=0.5"):
        WeightDropLSTMCell.from_config(config)
    del config["kernel_transforms"]   # the flags alone: they build it
    assert WeightDropLSTMCell.from_config(config).weight_drop_kr == 0.9


def test_a_config_of_flags_only_still_rebuilds():
    config = WeightDropLSTMCell(8).get_config()
    del config["kernel_transforms"]
    config.update(weight_drop_kr=0.25, pruning_mask=True)
    cell = WeightDropLSTMCell.from_config(config)
    assert [type(t) for t in cell.kernel_transforms] == [
        kernel.PruningMask, kernel.DropConnect]
    assert cell.weight_drop_kr == 0.25


@pytest.mark.parametrize("flags, name", [
    ({"weight_drop_kr": 1.5}, "weight_drop_kr"),
    ({"weight_drop_kr": 0.5, "use_vd": "yes"}, "use_vd"),
    ({"use_vd": 1}, "use_vd"),
    ({"drop_input_weights": None}, "drop_input_weights"),
    ({"pruning_mask": "on"}, "pruning_mask"),
    ({"sparsity": "dense"}, "sparsity")])
def test_a_bad_flag_is_named_once_by_the_transform_it_makes(flags, name):
    with pytest.raises(ValueError, match=name):
        WeightDropLSTMCell(8, **flags)


def test_flags_and_a_given_record_clash_by_name():
    with pytest.raises(ValueError, match="pruning_mask, weight_drop_kr"):
        WeightDropLSTMCell(8, weight_drop_kr=0.5, pruning_mask=True,
                           kernel_transforms=[kernel.DropConnect(0.5)])


class _Scale(kernel.KernelTransform):
    """A transform the sequence recurrence can run (it only scales)."""
    name = "scale"

    def apply(self, kernel_tensor, training, variable):
        return kernel_tensor * 0.5


class _StepChanging(_Scale):
    sequence_ok = False


@pytest.mark.parametrize("transform, fast", [(_Scale(), True),
                                             (_StepChanging(), False)])
def test_the_fast_path_is_answered_by_the_transforms(transform, fast):
    layer = WeightDropLSTM(6, kernel_transforms=[transform])
    assert layer.fast_path is fast
    x = tf.constant(np.random.RandomState(0).randn(2, 5, 3), tf.float32)
    outputs, _ = layer(x)
    reference = tf.nn.rnn_cell.LSTMCell(6, name="reference")
    expected, _ = tf.nn.dynamic_rnn(reference, x, dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # LSTMCell with the halved kernel computes the same outputs
        kernel_value, bias = sess.run(layer.cell.weights[:2])
        sess.run([reference.weights[0].assign(kernel_value * 0.5),
                  reference.weights[1].assign(bias)])
        got, want = sess.run([outputs, expected])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{"is_quant": True}, {"use_peepholes": True},
                                    {"cell_clip": 1.0}, {"num_proj": 3},
                                    {"forget_bias": float("inf")}])
def test_the_fast_path_is_answered_by_the_cells_options(kwargs):
    assert not WeightDropLSTMCell(6, **kwargs).sequence_fast_path
    assert WeightDropLSTMCell(6, weight_drop_kr=0.5,
                              pruning_mask=True).sequence_fast_path
