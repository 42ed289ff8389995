"""Report lines computed from what was made, not from what was asked
(issue 54): each test makes the request and the result differ and checks
the printed line against the graph or the file."""
import collections
import os
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.awd_lm.config import modeldir, presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.inference import export, tflite_weights
from tf1_awd_sparse.awd_lm.training import records
from tf1_awd_sparse.awd_lm.training.compression import rows as rows_, tflite
from tf1_awd_sparse.export import sparse_storage
from support.lm import PARAMS, make_features
from support.lm_api import summary_json


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
        summaries.append(summary_json(label, 10.0, params=dict(params)))
    line, = [l for l in records.results_table(summaries, None)
             if "fake-quant" in l]
    graph = _graph_bits(summaries[1]["params"])
    match = re.search(r"\((\d+)-bit weights, (\d+)-bit activations\)", line)
    assert match, line
    assert {int(match.group(1))} == graph["weights"]
    assert {int(match.group(2))} == graph["activations"]


def _quant_checkpoint(folder):
    """An untrained quantization-aware model of support.lm's PARAMS (no
    weight is zero) saved under ``folder``: (params, prefix)."""
    params = dict(PARAMS, model="awd", quant=True, quant_delay=0)
    with tf.Graph().as_default():
        features, _ = make_features()
        model.build_lm(features, "eval", params)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return params, tf.train.Saver().save(sess, os.path.join(
                str(folder), "lm"))


def _schema_facts(path):
    """(tensors stored sparse, operators with a float tensor, operators,
    {type: constants}) of a file, read with TensorFlow's generated schema
    module (not the library's reader)."""
    from tensorflow.lite.python import schema_py_generated as schema
    with open(path, "rb") as handle:
        parsed = schema.ModelT.InitFromObj(
            schema.Model.GetRootAsModel(handle.read(), 0))
    graph = parsed.subgraphs[0]
    names = {v: k.lower() for k, v in vars(schema.TensorType).items()
             if not k.startswith("_")}
    constants = collections.Counter(
        names[t.type] for t in graph.tensors
        if parsed.buffers[t.buffer].data is not None
        and len(parsed.buffers[t.buffer].data))
    floats = sum(1 for op in graph.operators if any(
        i >= 0 and graph.tensors[i].type in (schema.TensorType.FLOAT32,
                                             schema.TensorType.FLOAT16)
        for i in list(op.inputs) + list(op.outputs)))
    return (sum(t.sparsity is not None for t in graph.tensors), floats,
            len(graph.operators), dict(constants))


@pytest.mark.skipif(not sparse_storage.available(),
                    reason="int8 sparse storage: TensorFlow 2.x")
def test_table_says_what_the_int8_file_stores(tmp_path):
    """An int8 file asked to store its weights sparse, of a model with no
    zeros, stores none sparse: the table's note said "stored sparse"
    anyway; it now says what the file holds, which TensorFlow's schema
    reader confirms (and the uint8 file's note likewise)."""
    params, checkpoint = _quant_checkpoint(tmp_path)
    rows = []
    for stage, formats in (("tflite_uint8", {}), ("tflite_int8", {
            "weights": "int8", "storage": "sparse"})):
        path = str(tmp_path / (stage + ".tflite"))
        export.export_lm(params, checkpoint, path, 2, 3, **formats)
        rows.append(rows_.tflite_row(
            stage, "magnitude", 10.0, 10.0, (0, 1), [(1, 1)],
            {"bytes": 1, "gzip_bytes": 1,
             "stored": tflite.stored(path)}))
        rows[-1]["path"] = path
    table = rows_.format_table(rows)
    for r in rows:
        note, = [l for l in table if l.startswith(r["stage"] + ":")]
        sparse, floats, operators, constants = _schema_facts(r["path"])
        said = note.split("; the file holds ")[1]
        found = re.match(r"constants (.*), (none|\d+) stored sparse, "
                         r"(\d+) of (\d+) operators in float$", said)
        assert found, note
        assert dict((k, int(v)) for k, v in (
            item.rsplit(" ", 1) for item in found.group(1).split(", "))) \
            == constants
        assert (0 if found.group(2) == "none" else int(found.group(2))) \
            == sparse
        assert (int(found.group(3)), int(found.group(4))) == (floats,
                                                              operators)
    # The case the old note got wrong: asked sparse, no weight had zeros.
    assert _schema_facts(rows[1]["path"])[0] == 0


def _float_model_dir(folder):
    """A model directory (config.json, vocab.txt, checkpoint) of an
    untrained float model of support.lm's sizes: no weight is zero."""
    params = as_params(dict(presets.params_for("demo", "awd", {
        "emb_size": PARAMS["emb_size"],
        "hidden_size": PARAMS["hidden_size"]}),
        vocab_size=PARAMS["vocab_size"]))
    with tf.Graph().as_default():
        features, _ = make_features()
        model.build_lm(features, "eval", params)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, os.path.join(str(folder), "model"))
    words = ["<eos>", "<unk>"] + ["w%d" % i for i in
                                  range(PARAMS["vocab_size"] - 2)]
    modeldir.write_config(str(folder), params, words,
                          modeldir.produced_by(params), checkpoint="model")
    return str(folder)


@pytest.mark.skipif(not sparse_storage.available(),
                    reason="sparse storage: TensorFlow 2.x")
def test_export_says_what_the_file_stores(tmp_path, capsys):
    """``awd-lm export --storage sparse`` of a model without zeros writes
    a file that stores nothing sparse: the printed line said "sparse,
    auto" and the sidecar's produced_by "storage": "sparse" (the flag);
    both now say what TensorFlow's schema reader finds in the file, and
    the sidecar's sparsity is the file's weights' zeros."""
    from tf1_awd_sparse.awd_lm.programs import export as export_program
    model_dir = _float_model_dir(tmp_path / "model")
    out = str(tmp_path / "lm.tflite")
    assert export_program.main(["--model", model_dir, "--format", "float",
                                "--storage", "sparse", "--out", out]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    sparse, _, _, _ = _schema_facts(out)
    assert sparse == 0
    described = re.search(r"\(float, (.*?)\); sidecar", line).group(1)
    assert described.startswith("dense"), line
    sidecar = modeldir.read_config(modeldir.sidecar_path(out))
    produced = sidecar["produced_by"]
    assert produced["storage"] == "dense"
    # The file's zeros, counted with numpy on the interpreter's tensors of
    # the weight matrices' shapes (a dense file: stored as they are).
    from tf1_awd_sparse.base.compat import interpreter_class
    interpreter = interpreter_class()(model_path=out)
    interpreter.allocate_tensors()
    shapes = tflite_weights.weight_shapes(sidecar["params"])
    values = [interpreter.get_tensor(d["index"])
              for d in interpreter.get_tensor_details()
              if tuple(d["shape"]) in [tuple(s) for s in shapes]]
    assert len(values) == len(shapes)
    assert produced["sparsity"] == sum(
        int(np.sum(v == 0)) for v in values) / float(
            sum(v.size for v in values))
