"""Report lines computed from what was made, not from what was asked
(issue 54): each test makes the request and the result differ and checks
the printed line against the graph or the file."""
import collections
import re

import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.training import records
from support.lm import make_features


def _graph_bits(flat_params):
    """{"weights": bits, "activations": bits} of the FakeQuant ops of the
    model's evaluation graph built from ``flat_params`` (weights are the
    narrow-range ones, TensorFlow's convention for weights)."""
    found = collections.defaultdict(set)
    with tf.Graph().as_default() as graph:
        features, _ = make_features()
        model.build_lm(features, "eval", dict(flat_params, vocab_size=11))
        for op in graph.get_operations():
            if op.type.startswith("FakeQuant"):
                kind = ("weights" if op.get_attr("narrow_range")
                        else "activations")
                found[kind].add(op.get_attr("num_bits"))
    return found


def test_results_table_names_the_bits_the_graph_quantized_with():
    """A run with --weight-bits 4 --activation-bits 6: the results table
    said "8-bit cells" whatever the bits; its line now names the bits the
    model's FakeQuant ops have."""
    summaries = []
    for label, changes in (("awd", {}), ("awd+q", {
            "quant": True, "quant_delay": 0, "weight_bits": 4,
            "activation_bits": 6})):
        params = as_params(presets.params_for("demo", "awd", dict(
            changes, emb_size=4, hidden_size=6))).to_flat()
        summaries.append({"model": label, "test_ppl": 10.0, "best_epoch": 1,
                          "epochs_run": 1, "train_seconds": 1.0,
                          "params": dict(params)})
    line, = [l for l in records.results_table(summaries, None)
             if "fake-quant" in l]
    graph = _graph_bits(summaries[1]["params"])
    match = re.search(r"\((\d+)-bit weights, (\d+)-bit activations\)", line)
    assert match, line
    assert {int(match.group(1))} == graph["weights"]
    assert {int(match.group(2))} == graph["activations"]
