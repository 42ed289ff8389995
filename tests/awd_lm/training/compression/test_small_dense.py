"""The small-dense model's width (issue 55, item 3): the width the pure
function picks for a byte budget, against the real bytes of uint8 files
exported at that width and the next (`small_dense`)."""
import os

import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.inference import export
from tf1_awd_sparse.awd_lm.training.compression import small_dense as sd

VOCAB, BATCH, STEPS = 40, 4, 8


def _uint8_file(folder, emb, hidden, layers):
    """The bytes of the uint8 file of an untrained quantization-aware model
    of these sizes (the bytes do not depend on the weights' values)."""
    params = as_params(dict(presets.params_for("demo", "awd", {
        "emb_size": emb, "hidden_size": hidden, "num_layers": layers,
        "quant": True, "quant_delay": 0}), vocab_size=VOCAB))
    prefix = os.path.join(str(folder), "e%d_h%d_l%d" % (emb, hidden, layers))
    with tf.Graph().as_default():
        ids = tf.zeros([BATCH, STEPS], tf.int32)
        model.build_lm({"inputs": ids, "targets": ids}, "eval", params)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            checkpoint = tf.train.Saver().save(sess, prefix)
    return export.export_lm(params, checkpoint, prefix + ".tflite", BATCH,
                            STEPS), params


@pytest.mark.parametrize("emb, hidden, layers, share", [
    (12, 16, 2, 0.37), (10, 10, 1, 0.6)])
def test_the_width_fits_the_budget_by_the_exported_bytes(
        tmp_path, emb, hidden, layers, share):
    """The compressed model's uint8 file measures what does not grow with
    the width; the width picked for a budget (the file with a share of
    its weights' bytes, as a sparse file is smaller) exports to a file
    within the budget, and one width more to a file over it: within one
    width step."""
    full, params = _uint8_file(tmp_path, emb, hidden, layers)
    overhead = sd.file_overhead(full, params)
    budget = overhead + int(share * (full - overhead))
    width = sd.width_for_bytes(budget, VOCAB, layers, overhead)
    assert width >= 2
    picked, _ = _uint8_file(tmp_path, width, width, layers)
    wider, _ = _uint8_file(tmp_path, width + 1, width + 1, layers)
    assert picked <= budget < wider, (width, picked, budget, wider)


def test_a_budget_below_any_width_still_gets_one():
    overhead = 1000
    assert sd.width_for_bytes(overhead, VOCAB, 2, overhead) == 1
    one = overhead + sd.uint8_payload(VOCAB, 1, 1, 2)
    two = overhead + sd.uint8_payload(VOCAB, 2, 2, 2)
    assert sd.width_for_bytes(two - 1, VOCAB, 2, overhead) == 1
    assert sd.width_for_bytes(two, VOCAB, 2, overhead) == 2
    assert one < two


def test_the_budget_is_the_smallest_compressed_file_unless_given():
    rows = [{"stage": "qat", "bytes": 10},
            {"stage": "tflite_float", "bytes": 900},
            {"stage": "tflite_uint8", "bytes": 400},
            {"stage": "tflite_int8", "bytes": 300},
            {"stage": "small_dense_uint8", "bytes": 200}]
    assert sd.budget_of(rows) == (300, "tflite_int8")
    assert sd.budget_of(rows[:3]) == (400, "tflite_uint8")
    assert sd.budget_of(rows, budget=123) == (123, None)
    with pytest.raises(ValueError, match="small-dense"):
        sd.budget_of(rows[:1])
