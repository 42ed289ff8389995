"""Sparse storage of a TFLite file (`export.sparse_storage`): the sparse
file computes what the dense file computes, in both interpreters, for every
weight format and layout; the stored encoding decodes back to the weights;
the int8 weights are numpy's symmetric per-tensor quantization; and what
TFLite cannot run is refused before any work, naming why.

The references: the TFLite interpreter running the dense file (built once,
from one pruned language-model checkpoint) and numpy."""
import json
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.versions import IS_TF2, builtin_only
from support.sparse import ledger_row, matmuls_file
from support.tolerances import U32, matmul_atol
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.params import as_params
from tf1_awd_sparse.awd_lm.graph import model
from tf1_awd_sparse.awd_lm.inference import (
    export, lm, lm_runner, tflite_weights)
from tf1_awd_sparse.export import sparse_format, tflite_file
from tf1_awd_sparse.export import sparse_storage as ss
from tf1_awd_sparse.export.runner import TFLiteRunner
from tf1_awd_sparse.export.tflite_schema import symmetric_int8

# Input dimensions 16 (the table) and 32 (the cells' [x, h]): every layout
# applies; a 1 x 16 block of the 16-wide table is a whole row.
VOCAB, EMB, B, T = 40, 16, 2, 3
ZEROS = 0.9

needs_schema = pytest.mark.skipif(
    not IS_TF2, reason="sparse TFLite files are written with TF 2.x's "
    "schema module and run by TF 2.x's interpreters; TF 1.x refuses them "
    "(test_tf1_refuses_sparse_storage_naming_tf2)")
INTERPRETERS = ["tf"] + (["litert"] if ss.available() and
                         __import__("importlib").util.find_spec(
                             "ai_edge_litert") else [])


def _params(quant=False):
    return dict(presets.params_for("demo", "awd", {
        "emb_size": EMB, "hidden_size": EMB, "num_layers": 2}),
        vocab_size=VOCAB, quant=quant, quant_delay=0)


def _prune(values, rng):
    """Zeroes ZEROS of each matrix by magnitude (ties broken at random)."""
    if values.ndim != 2:
        return values
    noisy = np.abs(values) + 1e-6 * rng.rand(*values.shape)
    cut = np.quantile(noisy, ZEROS)
    return np.where(noisy > cut, values, 0).astype(values.dtype)


def _pruned_checkpoint(folder, params, name, seed):
    """A checkpoint of a language model with 90 % of each matrix zero."""
    rng = np.random.RandomState(seed)
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        ids = tf.zeros([B, T], tf.int32)
        model.build_lm({"inputs": ids, "targets": ids}, True,
                       model.check_params(dict(params, use_vd=False)))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for variable in tf.trainable_variables():
                variable.load(_prune(session.run(variable), rng), session)
            return tf.train.Saver().save(session,
                                         os.path.join(folder, name))


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    """(folder, params, checkpoint prefix, dense float file bytes): a
    language model with 90 % of each matrix zero, exported once."""
    folder = str(tmp_path_factory.mktemp("sparse_storage"))
    params = _params()
    prefix = _pruned_checkpoint(folder, params, "m.ckpt", 0)
    dense = os.path.join(folder, "dense.tflite")
    export.export_lm(params, prefix, dense, B, T)
    with open(dense, "rb") as handle:
        return folder, params, prefix, handle.read()


def _ids():
    return (np.arange(B * T, dtype=np.int32).reshape(B, T) * 7) % VOCAB


def _outputs(path, interpreter):
    got = TFLiteRunner(path, builtin_only(interpreter)).run(_ids())
    return {name: got[name] for name in ("logits", "hidden")}


def _write(folder, name, model_bytes):
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(model_bytes)
    return path


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
@pytest.mark.parametrize("weights", ["float", "int8"])
@pytest.mark.parametrize("layout", list(ss.LAYOUTS))
def test_the_sparse_file_computes_what_the_dense_file_does(
        pruned, weights, layout, interpreter):
    folder, _, _, dense = pruned
    # The dense reference of int8 weights: the same int8 weights, dense.
    reference = dense if weights == "float" else ss.store_sparse(
        dense, "int8", min_zeros=None)[0]
    want = _outputs(_write(folder, "ref_%s.tflite" % weights, reference),
                    interpreter)
    sparse, report = ss.store_sparse(dense, weights, layout)
    got = _outputs(_write(folder, "%s_%s.tflite" % (weights, layout),
                          sparse), interpreter)
    for name in want:
        # Another order of the same products (the sparse kernels): float32
        # rounding relative to the outputs' size (a sum's error is
        # relative to sum |terms|, here of the size of the largest output).
        np.testing.assert_allclose(got[name], want[name], rtol=0,
                                   atol=1e-5 * np.abs(want[name]).max(),
                                   err_msg=name)
    dtype = "float32" if weights == "float" else "int8"
    # The table and both cell kernels, each stored sparse, and read by the
    # kernel exactly where TFLite's fully-connected kernel computes the
    # layout right (else through DENSIFY).
    assert sorted(r["shape"] for r in report) == [
        [VOCAB, EMB], [4 * EMB, 2 * EMB], [4 * EMB, 2 * EMB]]
    want_layout = {"fast": "1x16" if weights == "int8" else "1x4"}.get(
        layout, layout)
    for record in report:
        assert record["dtype"] == dtype
        if layout != "auto":
            assert record["layout"] == want_layout
        kernel = (dtype, record["layout"]) in ss.KERNEL_LAYOUTS
        table = record["shape"] == [VOCAB, EMB]
        assert ("kernel" in record["read_by"]) == kernel, record
        assert ("densify" in record["read_by"]) == (table or not kernel)
    # 1 x k blocks of unstructured zeros keep most blocks; CSR does not.
    assert len(sparse) < (0.5 if layout in ("auto", "csr") else 1) * len(
        dense)


def _pruned_file(folder, emb):
    """The dense float file of a pruned model of width ``emb``."""
    params = dict(_params(), emb_size=emb, hidden_size=emb)
    prefix = _pruned_checkpoint(folder, params, "w.ckpt", 1)
    path = os.path.join(folder, "dense%d.tflite" % emb)
    export.export_lm(params, prefix, path, B, T)
    return path


def _op_names(model_bytes):
    """``(parsed model, [(builtin name, operator)])`` in the run order."""
    schema, _ = sparse_format.schema_modules()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(
        model_bytes, 0))
    names = {v: k for k, v in vars(schema.BuiltinOperator).items()
             if not k.startswith("_")}
    return parsed, [(names[max(parsed.operatorCodes[o.opcodeIndex]
                               .builtinCode, parsed.operatorCodes[
                                   o.opcodeIndex].deprecatedBuiltinCode)], o)
                    for o in parsed.subgraphs[0].operators]


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
def test_fast_pads_to_1x16_where_16_does_not_divide(pruned, interpreter):
    """Width 20 (the table) and 40 (the cells' [x, h]): "fast" in an int8
    file pads each weight with zero columns to 32 and 48 and stores it int8
    1 x 16 (the hybrid kernel reads it), a PAD before each fully-connected
    op and a SLICE after the lookup; the file computes what the dense int8
    file of the same weights computes, and decodes to those weights."""
    folder = pruned[0]
    with open(_pruned_file(folder, 20), "rb") as handle:
        dense = handle.read()
    sparse, report = ss.store_sparse(dense, "int8", "fast")
    assert sorted((r["shape"], r["dtype"], r["layout"], "kernel" in
                   r["read_by"]) for r in report) == [
        ([VOCAB, 32], "int8", "1x16", True)] + [
        ([80, 48], "int8", "1x16", True)] * 2
    reference = ss.store_sparse(dense, "int8", min_zeros=None)[0]
    want = _outputs(_write(folder, "int8_20.tflite", reference),
                    interpreter)
    got = _outputs(_write(folder, "fast20.tflite", sparse), interpreter)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0,
                                   atol=1e-5 * np.abs(want[name]).max())
    unpadded = {n: v for n, v, _ in ss.constant_arrays(reference)
                if v.dtype == np.int8}
    for name, value, _ in ss.constant_arrays(sparse):
        if value.dtype == np.int8:
            cols = unpadded[name].shape[1]
            np.testing.assert_array_equal(value[:, :cols], unpadded[name])
            assert not value[:, cols:].any()
    # Read back, the padding is no weight.
    shapes = tflite_weights.weight_shapes(as_params(dict(
        _params(), emb_size=20, hidden_size=20)))
    assert tflite_weights.weight_sparsity_of_tflite(
        _write(folder, "fast20.tflite", sparse), shapes) == \
        tflite_weights.weight_sparsity_of_tflite(_write(
            folder, "int8_20.tflite", reference), shapes)
    _, ops = _op_names(sparse)
    kinds = [name for name, _ in ops]
    assert kinds.count("PAD") == kinds.count("FULLY_CONNECTED")
    gather = kinds.index("GATHER")
    assert kinds[gather + 1:gather + 3] == ["SLICE", "DEQUANTIZE"]


@needs_schema
def test_fast_keeps_float_where_a_padded_weight_has_another_reader():
    """A weight read by a fully-connected op and by an op that is no
    lookup of its rows cannot be padded: "fast" stores it float 1 x 4."""
    rng = np.random.RandomState(2)
    weight = rng.randn(8, 20).astype(np.float32)   # [out, in], as the table
    weight[np.abs(weight) < 1.2] = 0
    from tf1_awd_sparse.export import graphdef
    with tf.Graph().as_default(), tf.Session() as session:
        x = tf.placeholder(tf.float32, [1, 20], name="x")
        z = tf.placeholder(tf.float32, [8, 20], name="z")
        w = tf.constant(weight)
        y = tf.matmul(x, w, transpose_b=True, name="y")
        dense = graphdef.convert(session, [x, z], [y, tf.multiply(
            w, z, name="m")], None)
    _, ops = _op_names(dense)
    fc = [o for name, o in ops if name == "FULLY_CONNECTED"][0]
    assert any(fc.inputs[1] in o.inputs for name, o in ops if name == "MUL")
    _, report = ss.store_sparse(dense, "int8", "fast", min_zeros=0.3)
    assert [(r["shape"], r["dtype"], r["layout"]) for r in report] == [
        ([8, 20], "float32", "1x4")]


@needs_schema
def test_auto_takes_the_fewest_bytes_and_the_report_counts_them(pruned):
    _, _, _, dense = pruned
    reports = {layout: {r["name"]: r for r in ss.store_sparse(
        dense, "float", layout)[1]} for layout in ss.LAYOUTS}
    for name, record in reports["auto"].items():
        fewest = min(reports[layout][name]["bytes"]
                     for layout in ("csr", "1x4", "1x16"))
        assert record["bytes"] == fewest
        # values (4 bytes each) + 1-byte indices: segments of rows + 1, an
        # index per stored block.
        block = 1 if record["layout"] == "csr" else int(
            record["layout"][2:])
        blocks = record["stored_values"] // block
        assert record["bytes"] == (4 * record["stored_values"] + blocks
                                   + record["shape"][0] + 1)


@needs_schema
def test_int8_weights_are_symmetric_per_tensor_of_the_float_ones(pruned):
    _, _, _, dense = pruned
    floats = {name: value for name, value, _ in ss.constant_arrays(dense)}
    sparse, _ = ss.store_sparse(dense, "int8")
    schema, _ = sparse_format.schema_modules()
    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(sparse,
                                                                   0))
    scales = {t.name.decode(): t.quantization for t in
              parsed.subgraphs[0].tensors if t.type == 9}
    int8 = [(n, v) for n, v, _ in ss.constant_arrays(sparse)
            if v.dtype == np.int8]
    assert len(int8) == 3
    for name, got in int8:
        want = floats[name]
        scale = np.abs(want).max() / 127.0
        # Stored as float32: at most two roundings (a float32 division, the
        # store) of the float64 figure.
        assert scales[name].scale[0] == pytest.approx(scale, rel=2 * U32)
        assert list(scales[name].zeroPoint) == [0]
        np.testing.assert_array_equal(
            got, np.clip(np.round(want / scale), -127, 127))
        assert np.array_equal(got == 0, want == 0)  # no zero lost or made


@needs_schema
@pytest.mark.parametrize("min_zeros", [None, 0.5])
def test_an_int8_lookup_dequantizes_the_rows_it_gathers(pruned, min_zeros):
    """Not the table: DEQUANTIZE of a densified table (no constant) would
    redo the whole table on every call."""
    _, _, _, dense = pruned
    parsed, ops = _op_names(ss.store_sparse(dense, "int8",
                                            min_zeros=min_zeros)[0])
    graph = parsed.subgraphs[0]
    dequantized = [list(graph.tensors[o.outputs[0]].shape)
                   for name, o in ops if name == "DEQUANTIZE"]
    assert dequantized == [[B, T, EMB]] or dequantized == [[B * T, EMB]]
    gather = [o for name, o in ops if name == "GATHER"][0]
    assert graph.tensors[gather.inputs[0]].type == 9   # int8 rows
    position = [o for _, o in ops].index(gather)
    assert ops[position + 1][0] == "DEQUANTIZE"


@needs_schema
def test_refusals_name_the_argument_or_the_reason(pruned, tmp_path):
    _, _, _, dense = pruned
    for kwargs, words in (({"weights": "uint8"}, "weights"),
                          ({"layout": "2x2"}, "layout"),
                          ({"min_zeros": 1.5}, "min_zeros"),
                          ({"min_zeros": True}, "min_zeros")):
        with pytest.raises(ss.SparseStorageError, match=words):
            ss.store_sparse(dense, **kwargs)
    sparse, _ = ss.store_sparse(dense)
    with pytest.raises(ss.SparseStorageError, match="already stores"):
        ss.store_sparse(sparse)
    # Bytes that are not a TFLite file: the file check's error, as for
    # every reader of a file (export.tflite_file).
    with pytest.raises(tflite_file.TFLiteFileError, match="TFL3"):
        ss.store_sparse(b"not a model at all")


@needs_schema
def test_a_uint8_file_is_refused_naming_uint8(tmp_path):
    params = _params(quant=True)
    with tf.Graph().as_default():
        ids = tf.zeros([B, T], tf.int32)
        loss = model.build_lm({"inputs": ids, "targets": ids}, True,
                              model.check_params(dict(params,
                                                      use_vd=False))).loss
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            session.run(loss)
            prefix = tf.train.Saver().save(session, str(tmp_path / "q"))
    path = str(tmp_path / "u.tflite")
    export.export_lm(params, prefix, path, B, T)
    with open(path, "rb") as handle:
        with pytest.raises(ss.SparseStorageError,
                           match="is uint8, not float32"):
            ss.store_sparse(handle.read())
    with pytest.raises(ss.SparseStorageError, match="no sparse uint8"):
        export.export_lm(params, prefix, str(tmp_path / "v.tflite"), B, T,
                         storage="sparse")
    assert not (tmp_path / "v.tflite").exists()
    # int8 of a quantization-aware model: its float graph's weights (not
    # pruned here: nothing to store sparse).
    export.export_lm(params, prefix, str(tmp_path / "i.tflite"), B, T,
                     weights="int8", storage="sparse")
    stored = ss.constant_arrays(str(tmp_path / "i.tflite"))
    assert sum(value.dtype == np.int8 for _, value, _ in stored) == 3
    assert not ss.stores_sparse(str(tmp_path / "i.tflite"))


@needs_schema
@pytest.mark.parametrize("weights", ["float", "int8"])
def test_the_lm_exports_scores_and_records_its_sparse_file(pruned, weights):
    folder, params, prefix, dense = pruned
    path = os.path.join(folder, "lm_%s.tflite" % weights)
    export.export_lm(params, prefix, path, B, T, weights=weights,
                     storage="sparse")
    dense_path = _write(folder, "lm_dense.tflite", dense)
    stream = np.random.RandomState(3).randint(0, VOCAB, [B, 20])
    want = lm_runner.tflite_perplexity(dense_path, stream)[0]
    got = lm_runner.tflite_perplexity(path, stream)[0]
    # float: the same model; int8: 8-bit weights of the same model.
    assert got == pytest.approx(want, rel=1e-5 if weights == "float"
                                else 2e-2)
    shapes = tflite_weights.weight_shapes(as_params(params))
    assert tflite_weights.weight_sparsity_of_tflite(path, shapes) == \
        tflite_weights.weight_sparsity_of_tflite(dense_path, shapes)
    timed = lm_runner.LMRunner(path)
    seen, run = [], timed.runner.run
    timed.runner.run = lambda ids, state=None: seen.append(
        (ids.copy(), dict(state or {}))) or run(ids, state)
    # The invoke alone: each call's seconds, recorded by the runner.
    invokes = []
    run_and_record = timed.runner.run
    timed.runner.run = lambda ids, state=None: (
        run_and_record(ids, state), invokes.append(
            timed.runner.last_invoke_seconds))[0]
    per_token = timed.time_per_token(repeats=3)
    assert per_token > 0 and per_token == pytest.approx(
        np.median(invokes) / (timed.batch_size * timed.num_steps))
    # Random ids, the state carried: zeros would let the hybrid kernels
    # skip every product of a block-pruned model.
    assert all(0 <= ids.min() and ids.max() < VOCAB for ids, _ in seen)
    assert len({ids.tobytes() for ids, _ in seen}) == 3
    assert not seen[0][1] and sorted(seen[1][1]) == timed.state_names


@needs_schema
def test_export_model_writes_the_storage_into_the_sidecar(pruned, tmp_path):
    folder, params, prefix, _ = pruned
    from tf1_awd_sparse.awd_lm.config import modeldir
    run = str(tmp_path / "model")
    os.makedirs(run)
    for name in os.listdir(folder):
        if name.startswith("m.ckpt") or name == "checkpoint":
            os.link(os.path.join(folder, name), os.path.join(run, name))
    words = ["<unk>", "<eos>"] + ["w%d" % i for i in range(VOCAB - 2)]
    params = as_params(params)
    modeldir.write_config(run, params, words,
                          modeldir.produced_by(params), checkpoint="m.ckpt")
    path = str(tmp_path / "out" / "lm.tflite")
    os.makedirs(os.path.dirname(path))
    sidecar = lm.export_model(run, path, weights="int8", storage="sparse")
    with open(sidecar) as handle:
        config = json.load(handle)
    assert config["produced_by"]["stage"] == "tflite_int8"
    assert config["produced_by"]["storage"] == "sparse"
    assert config["tflite"]["storage"] == ss.describe(path)
    assert len(config["tflite"]["storage"]) == 3
    loaded = lm.LanguageModel.load(path)
    assert np.isfinite(loaded.score(["w1 w2 w3 w4"]).perplexity)


def test_the_command_line_spells_the_librarys_choices():
    from tf1_awd_sparse.awd_lm.programs import export as command
    assert command.FORMATS == export.WEIGHT_FORMATS
    assert command.STORAGES == export.STORAGES
    assert command.LAYOUTS == ss.LAYOUTS


def test_the_reader_finds_no_sparse_tensor_in_a_dense_file(pruned):
    _, _, _, dense = pruned
    assert ss.sparse_tensors(dense) == [] and ss.describe(dense) == []


@pytest.mark.skipif(IS_TF2, reason="TF 1.x's refusal; TF 2.x writes them")
def test_tf1_refuses_sparse_storage_naming_tf2(pruned, tmp_path):
    _, params, prefix, dense = pruned
    with pytest.raises(ss.SparseStorageError, match="TensorFlow 2.x"):
        ss.store_sparse(dense)
    with pytest.raises(ss.SparseStorageError, match="TensorFlow 2.x"):
        export.export_lm(params, prefix, str(tmp_path / "s.tflite"), B, T,
                         storage="sparse")
    assert not (tmp_path / "s.tflite").exists()   # refused before work


@needs_schema
def test_weights_sharing_a_buffer_and_an_all_zero_one(tmp_path):
    """The converter may give two equal-byte weights one buffer: each is
    rewritten on its own copy. An all-zero weight stays dense (a sparse
    one would have no values, which TFLite takes for no constant)."""
    rng = np.random.RandomState(0)
    first = rng.randn(16, 8).astype(np.float32)
    first[np.abs(first) < 1.0] = 0
    # The second fully-connected weight ([out, in] = first.T reshaped)
    # holds the first one's bytes.
    second = np.ascontiguousarray(first.T).reshape(16, 8).T.copy()
    zero = np.zeros([8, 4], np.float32)
    dense = matmuls_file(first, second, zero)
    sparse, report = ss.store_sparse(dense, "float", "csr", min_zeros=0.3)
    assert sorted(r["shape"] for r in report) == [[8, 16], [16, 8]]
    path = str(tmp_path / "s.tflite")
    with open(path, "wb") as handle:
        handle.write(sparse)
    runner = TFLiteRunner(path, builtin_only("tf"))
    interpreter = runner.interpreter
    for i, weight in enumerate((first, second, zero)):
        x = rng.randn(1, weight.shape[0]).astype(np.float32)
        detail = [d for d in interpreter.get_input_details()
                  if d["name"] == "x%d" % i][0]
        interpreter.set_tensor(detail["index"], x)
    interpreter.invoke()
    got = {d["name"]: interpreter.get_tensor(d["index"])
           for d in interpreter.get_output_details()}
    inputs = {d["name"]: interpreter.get_tensor(d["index"])
              for d in interpreter.get_input_details()}
    for i, weight in enumerate((first, second, zero)):
        x = inputs["x%d" % i].astype(np.float64)
        # The exact product (float64) against the kernel's float32 sum of
        # 8 or 16 products in its order; zero stays exactly zero.
        np.testing.assert_allclose(got["y%d" % i], x @ weight, rtol=0,
                                   atol=matmul_atol(x, weight))
    bad = first.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ss.SparseStorageError, match="non-finite"):
        ss.store_sparse(matmuls_file(bad))


def test_the_format_names_are_importable_from_sparse_storage():
    """`sparse_storage` keeps the names that moved to `sparse_format`."""
    for name in ss.__all__:
        assert hasattr(ss, name), name
        if hasattr(sparse_format, name):
            assert getattr(ss, name) is getattr(sparse_format, name), name


@needs_schema
@pytest.mark.parametrize("layout", ["1x16", "fast", "auto"])
@pytest.mark.parametrize("cols, blocks, message", [
    (4096, 256, r"row 0 holds 256 non-zero blocks of 16, more than the 255"),
    (4097, 16, r"4,112 columns exceed the 4,096 columns"),   # fast pads
    (4112, 16, r"4,112 columns exceed the 4,096 columns"),
])
def test_store_sparse_refuses_what_the_int8_kernel_miscounts(
        cols, blocks, message, layout):
    """TFLite's hybrid sparse kernel keeps a row's block count and each
    block's column index in one byte: past them it computed wrong values
    without an error (256 blocks: max |error| 136 against outputs of at
    most 141); the rewrite refuses any layout argument that would store
    such a weight int8 1 x 16, naming the tensor and the limit."""
    dense = matmuls_file(ledger_row(cols, blocks))
    if layout != "fast" and cols % 16:
        # 16 does not divide 4,097: stored csr, read through DENSIFY
        _, report = ss.store_sparse(dense, "int8", layout, min_zeros=0.5)
        assert [r["layout"] for r in report] == ["csr"]
        return
    if layout == "auto":
        # auto takes the fewest bytes: 1 x 16 for these whole blocks
        with pytest.raises(ss.SparseStorageError, match=message):
            ss.store_sparse(dense, "int8", layout, min_zeros=0.5)
        return
    with pytest.raises(ss.SparseStorageError,
                       match=r"model: fully-connected weight .*int8 1x16.*"
                       + message):
        ss.store_sparse(dense, "int8", layout, min_zeros=0.5)
    # float, and int8 in layouts read through DENSIFY, have no ledger
    ss.store_sparse(dense, "float", layout, min_zeros=0.5)
    ss.store_sparse(dense, "int8", "csr", min_zeros=0.5)


@needs_schema
@pytest.mark.parametrize("interpreter", INTERPRETERS)
@pytest.mark.parametrize("cols, blocks", [(4096, 255), (4096, 16)])
def test_the_widest_int8_1x16_weight_computes_right(tmp_path, interpreter,
                                                     cols, blocks):
    """255 non-zero blocks in a row, and a 4,096-wide weight of fewer:
    the most the ledger holds; read by the kernel (not densified), the
    file computes the int8 product: numpy's, to the hybrid kernel's
    quantized input (one code of x times the row's weights)."""
    weight = ledger_row(cols, blocks)
    sparse, report = ss.store_sparse(matmuls_file(weight), "int8", "1x16",
                                     min_zeros=0.5)
    assert [(r["layout"], r["read_by"]) for r in report] == [
        ("1x16", ["kernel"])]
    path = _write(str(tmp_path), "w.tflite", sparse)
    interpreter = TFLiteRunner(path, builtin_only(interpreter)).interpreter
    x = np.random.RandomState(1).randn(1, cols).astype(np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    codes, scale = symmetric_int8(weight)
    want = x.astype(np.float64) @ (codes * np.float64(scale))
    one_code = np.abs(x).max() / 127 * np.abs(codes * scale).sum(0)
    assert np.all(np.abs(got - want) <= one_code + 1e-5), (
        np.abs(got - want).max(), np.abs(want).max())
