"""`TFLiteRunner.run` feeds the model's own inputs (issue 42): a conv net
whose input is ``images``, quantized with `quantization.
create_training_graph` as docs/quantization.md shows and converted to
uint8, agrees with its graph row by row (the runner used to feed it zeros:
every row the same); a model with two data inputs takes a dict naming
them, and anything that would leave a data input unfed is refused naming
the model's inputs."""
import inspect
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse import quantization as quantize
from tf1_awd_sparse.export.graphdef import convert, nudged_quantization
from support.graphs import eval_graph_file
from support.versions import IS_TF2
from tf1_awd_sparse.export.runner import TFLiteRunner, is_state_input

BATCH, SIDE, FILTERS = 4, 5, 3
INPUT_RANGE = (-3.0, 3.0)


def _conv_net(images):
    """Fake-quantized input, a 3 x 3 conv with ReLU, one row per image."""
    x = tf.quantization.fake_quant_with_min_max_args(images, *INPUT_RANGE)
    h = tf.layers.conv2d(x, FILTERS, 3, padding="same",
                         activation=tf.nn.relu, name="conv")
    # The rewrite puts the activation's FakeQuant between the layer and
    # this reshape, the converted model's output.
    return tf.reshape(h, [BATCH, SIDE * SIDE * FILTERS], name="logits")


def _on_input_grid(rng, shape):
    """Values on the uint8 input grid: the graph's FakeQuant and the
    runner's quantization give both the same codes (no rounding tie)."""
    scale, zero_point = nudged_quantization(*INPUT_RANGE)
    codes = rng.randint(0, 256, shape)
    return ((codes - zero_point) * scale).astype(np.float32)


@pytest.fixture(scope="module")
def images_model(tmp_path_factory):
    """The uint8 file of the conv net (input ``images``), trained 3 steps
    with the training rewrite, and its eval graph's rows."""
    folder = str(tmp_path_factory.mktemp("images"))
    rng = np.random.RandomState(0)
    data = _on_input_grid(rng, [BATCH, SIDE, SIDE, 1])
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        step = tf.train.get_or_create_global_step()
        images = tf.placeholder(tf.float32, data.shape, "images")
        loss = tf.reduce_mean(tf.square(_conv_net(images) - 0.5))
        quantize.create_training_graph(quant_delay=0)
        train = tf.train.GradientDescentOptimizer(0.01).minimize(
            loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train, {images: data})
            checkpoint = tf.train.Saver().save(sess, os.path.join(folder,
                                                                  "qat"))
    path = os.path.join(folder, "images.tflite")
    _, expected = eval_graph_file(_conv_net, "images", data, checkpoint,
                                  INPUT_RANGE, path)
    return {"path": path, "data": data, "expected": expected}


def test_a_model_whose_input_is_images_agrees_with_its_graph_row_by_row(
        images_model):
    runner = TFLiteRunner(images_model["path"])
    assert runner.inputs["images"]["dtype"] == np.uint8
    got = runner.run(images_model["data"])["logits"]
    expected = images_model["expected"]
    step = runner.output_quantization("logits")[0]
    # Each output is the same integer conv of the same input and weight
    # codes; the graph's float32 sum and TFLite's int32 sum with a
    # fixed-point rescale differ by far less than a step, so the two round
    # to the same code or, at a rounding boundary, to the next one: at most
    # one output step (plus the float32 rounding of the dequantized value).
    tolerance = step * (1 + 1e-5)
    rows = np.abs(got - expected).max(axis=1)
    print("uint8 images model vs graph: per-row max error %s steps"
          % np.round(rows / step, 2))
    assert np.all(rows <= tolerance), rows / step
    # The rows differ: a model fed anything but its rows could not match.
    spread = np.abs(expected[:, None, :] - expected[None, :, :]).max(axis=2)
    assert np.all(spread[~np.eye(BATCH, dtype=bool)] > 2 * tolerance)
    assert runner.data_inputs == ["images"] and runner.state_inputs == []
    assert runner.output_quantization() == runner.output_quantization(
        "logits")   # the only output's


def test_a_dict_names_the_data_input_and_anything_else_is_refused(
        images_model):
    runner = TFLiteRunner(images_model["path"])
    data = images_model["data"]
    by_name = runner.run({"images": data})["logits"]
    np.testing.assert_array_equal(by_name, runner.run(data)["logits"])
    for bad, words in (({"inputs": data}, "data input of the model [images]"),
                       ({"images": data, "extra": data}, "[images]"),
                       ({}, "[images]")):
        with pytest.raises(ValueError, match=r"^inputs must name each "
                           r"data input of the model \[images\]") as error:
            runner.run(bad)
        assert words in str(error.value)
    # A data input is never fed through state (and never zero-filled).
    with pytest.raises(ValueError, match=r"state: 'images' not among the "
                       r"model's state inputs \[\] \(its data inputs "
                       r"\[images\] go in inputs\)"):
        runner.run(data, {"images": data})
    with pytest.raises(ValueError, match=r"inputs \(the model's input "
                       r"'images'\) must have the model's shape"):
        runner.run(data[:, :-1])


def _two_inputs_model(folder):
    """A float model of two data inputs, ``x * scale + 1`` (state-like
    names that are not states included)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], "x")
        scale = tf.placeholder(tf.float32, [2, 3], "state_scale")
        out = tf.identity(x * scale + 1.0, name="out")
        with tf.Session() as sess:
            model = convert(sess, [x, scale], [out], None)
    path = os.path.join(folder, "two.tflite")
    with open(path, "wb") as handle:
        handle.write(model)
    return path


def test_two_data_inputs_take_a_dict_and_one_array_is_refused(tmp_path):
    runner = TFLiteRunner(_two_inputs_model(str(tmp_path)))
    rng = np.random.RandomState(1)
    x, scale = rng.randn(2, 2, 3).astype(np.float32)
    got = runner.run({"x": x, "state_scale": scale})["out"]
    # One float32 product and one sum, each correctly rounded: float32's
    # relative rounding twice over.
    np.testing.assert_allclose(got, x * scale + 1.0, rtol=2 * 2.0 ** -24,
                               atol=2 * 2.0 ** -24)
    with pytest.raises(ValueError, match=r"^inputs: the model has 2 data "
                       r"inputs \[.*state_scale.*\], not one: pass a dict"):
        runner.run(x)
    with pytest.raises(ValueError, match=r"^inputs must name each data "
                       r"input of the model"):
        runner.run({"x": x})   # the other one is never filled in
    assert sorted(runner.data_inputs) == ["state_scale", "x"]
    with pytest.raises(ValueError, match=r"^name: 'outputs' is not an "
                       r"output of the model; its outputs: out"):
        runner.output_quantization("outputs")


def test_only_the_exporters_state_names_are_states():
    assert is_state_input("state_0_c") and is_state_input("state_12_h")
    for name in ("inputs", "images", "state_scale", "state_0", "state_0_x",
                 "final_0_c", "my_state_0_c"):
        assert not is_state_input(name), name


@pytest.mark.skipif(not IS_TF2, reason="int8 files: TF 1.13's converter has "
                    "no int8 type and TF 1.15's interpreter cannot run its "
                    "int8 files")
def test_an_int8_output_with_a_nonzero_zero_point_is_dequantized(tmp_path):
    """An int8 file whose output's zero point is not 0 (a range of
    [-1, 5]): the runner's floats are numpy's dequantization of the
    interpreter's codes, ``(code - zero_point) * scale``, and agree with the
    graph's FakeQuant (a flipped zero point would be ``2 * zero_point``
    steps off)."""
    low, high = -1.0, 5.0
    data = np.random.RandomState(3).uniform(-2, 6, [2, 6]).astype(np.float32)
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, data.shape, "x")
        out = tf.reshape(tf.quantization.fake_quant_with_min_max_args(
            x, low, high), data.shape, name="out")
        with tf.Session() as sess:
            expected = sess.run(out, {x: data})
        converter = tf.lite.TFLiteConverter(graph.as_graph_def(), [x], [out])
    converter.inference_type = converter.inference_output_type = tf.int8
    scale, zero_point = nudged_quantization(low, high)
    converter.quantized_input_stats = {"x": (zero_point - 128, 1.0 / scale)}
    path = str(tmp_path / "int8.tflite")
    with open(path, "wb") as handle:
        handle.write(converter.convert())
    runner = TFLiteRunner(path)
    name, = runner.outputs
    detail = runner.outputs[name]
    out_scale, out_zero = detail["quantization"]
    assert detail["dtype"] == np.int8 and out_zero != 0, detail
    got = runner.run(data)[name]
    codes = runner.interpreter.get_tensor(detail["index"])
    np.testing.assert_array_equal(
        got, (codes.astype(np.float32) - out_zero) * np.float32(out_scale))
    # The file's input codes are the graph's FakeQuant codes (one grid):
    # the same values, at most one step apart at a rounding tie.
    assert np.abs(got - expected).max() <= out_scale * (1 + 1e-5)


@pytest.mark.parametrize("num_threads", [None, 1, 2])
def test_num_threads_reaches_the_interpreter_and_invoke_is_timed(
        tmp_path, num_threads):
    """``num_threads`` is passed to the interpreter only when given (the
    pipeline times on one thread), and ``last_invoke_seconds`` is None
    until a call, then that call's CPU seconds of ``invoke``."""
    from tf1_awd_sparse.base.compat import interpreter_class
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], "x")
        out = tf.multiply(x, 2.0, name="out")
        with tf.Session() as sess:
            model = convert(sess, [x], [out], None)
    path = str(tmp_path / "double.tflite")
    with open(path, "wb") as handle:
        handle.write(model)
    base = interpreter_class(None)
    seen = []

    class Recording(base):
        def __init__(self, *args, **kwargs):
            seen.append(kwargs.get("num_threads", "absent"))
            super(Recording, self).__init__(*args, **kwargs)

    runner = TFLiteRunner(path, Recording, num_threads)
    # TF 1.x's interpreter takes no num_threads: never passed to it.
    takes = "num_threads" in inspect.signature(base.__init__).parameters
    assert seen == ["absent" if num_threads is None or not takes
                    else num_threads]
    assert runner.last_invoke_seconds is None
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(runner.run(data)["out"], 2.0 * data)
    assert runner.last_invoke_seconds >= 0.0
