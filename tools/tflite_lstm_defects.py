"""Shows the two defects of TFLite's sparse hybrid LSTM kernel that
`export.fused_lstm` works around, on this machine's interpreters
(docs/sparse_tflite.md, "One fused LSTM op per layer"):

1. the sparse recurrent product scaled by the input's scale: one LSTM op
   whose 8 weight matrices are int8 in 1 x 16 blocks (and a projection,
   see 2), against numpy's model of the hybrid arithmetic, and against
   numpy's model with that one line's scale;
2. no projection: the same op without one, run in a child process (it
   crashes when the interpreter allocates it);

and the layout the library writes (the recurrent weights folded into the
input weights, an identity projection): right.

  TF_USE_LEGACY_KERAS=1 .venv-tf2/bin/python tools/tflite_lstm_defects.py
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from tf1_awd_sparse.export import (  # noqa: E402
    fused_lstm, sparse_format, tflite_builder)
from tf1_awd_sparse.export.tflite_schema import (  # noqa: E402
    GATE_BIASES, GATE_INPUT_WEIGHTS, GATE_RECURRENT_WEIGHTS, LSTMInput, Op,
    TensorType)

INPUTS, UNITS, STEPS = 32, 64, 6


def _q(value, axis=None):
    peak = np.abs(value).max(axis=axis, keepdims=axis is not None)
    scale = np.where(peak > 0, peak / 127.0, 1.0)
    return np.clip(np.round(value / scale), -127, 127), scale


def one_op(kernel, bias, folded, projection):
    """Bytes of a model of one hybrid LSTM op, its weights int8 1 x 16:
    folded (the library's layout) or the input and recurrent matrices
    apart; with or without an identity projection."""
    schema, flatbuffers = sparse_format.schema_modules()
    layer = fused_lstm.LSTMLayer(kernel, bias, 0.0)
    build = tflite_builder.Builder(schema, "tools/tflite_lstm_defects.py")
    x = build.tensor("x", [1, INPUTS], TensorType.FLOAT32)
    build.graph.inputs = [x]
    if folded:
        out, _, _ = fused_lstm._lstm_layer(build, 0, x, layer,
                                           TensorType.INT8, True, 1, None)
    else:
        out = _unfolded(build, x, layer, projection)
    build.graph.outputs = [out]
    return build.finish(flatbuffers)


def _unfolded(build, x, layer, projection):
    schema = build.schema
    h = build.tensor("h", [1, UNITS], TensorType.FLOAT32, variable=True)
    c = build.tensor("c", [1, UNITS], TensorType.FLOAT32, variable=True)
    inputs = [-1] * len(LSTMInput)
    inputs[LSTMInput.INPUT] = x
    inputs[LSTMInput.OUTPUT_STATE], inputs[LSTMInput.CELL_STATE] = h, c
    for k, (w_x, w_h, b) in enumerate(fused_lstm._gates(layer, INPUTS,
                                                        False)):
        inputs[GATE_INPUT_WEIGHTS[k]] = build.weight(
            "wx%d" % k, w_x, TensorType.INT8, True)
        inputs[GATE_RECURRENT_WEIGHTS[k]] = build.weight(
            "wh%d" % k, w_h, TensorType.INT8, True)
        inputs[GATE_BIASES[k]] = build.tensor("b%d" % k, [UNITS],
                                              TensorType.FLOAT32, b)
    if projection:
        inputs[LSTMInput.PROJECTION_WEIGHTS] = build.weight(
            "proj", np.eye(UNITS, dtype=np.float32), TensorType.INT8, True)
    out = build.tensor("out", [1, UNITS], TensorType.FLOAT32)
    options = schema.LSTMOptionsT()
    options.fusedActivationFunction = schema.ActivationFunctionType.TANH
    options.kernelType = schema.LSTMKernelType.FULL
    options.asymmetricQuantizeInputs = False
    build.op(Op.LSTM, inputs, [out], schema.BuiltinOptions.LSTMOptions,
             options)
    return out


def numpy_hybrid(kernel, bias, xs, folded, defect):
    """h per step, numpy's model of the kernel's arithmetic; ``defect``:
    the recurrent product scaled by the input's scale."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h, c, out = np.zeros((1, UNITS)), np.zeros((1, UNITS)), []
    for x in xs:
        z = []
        for k in range(4):
            w = kernel[:, k * UNITS:(k + 1) * UNITS]
            if folded:
                (qv, sv), (qw, sw) = _q(np.concatenate([x, h], 1), 1), _q(w)
                z.append((qv @ qw) * sv * sw + bias[k * UNITS:(k + 1) * UNITS])
                continue
            (qx, sx), (qh, sh) = _q(x, 1), _q(h, 1)
            (qwx, swx), (qwh, swh) = _q(w[:INPUTS]), _q(w[INPUTS:])
            z.append((qx @ qwx) * sx * swx + (qh @ qwh) * (sx if defect
                                                          else sh) * swh
                     + bias[k * UNITS:(k + 1) * UNITS])
        i, j, f, o = z
        c = sig(f) * c + sig(i) * np.tanh(j)
        h = sig(o) * np.tanh(c)
        qh, sh = _q(h, 1)   # the identity projection
        h = qh * sh
        out.append(h)
    return np.array(out)


def run(data, xs, interpreter):
    make, resolver = interpreter
    it = make(model_content=data, num_threads=1,
              experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    index = it.get_input_details()[0]["index"]
    out = it.get_output_details()[0]["index"]
    found = []
    for x in xs:
        it.set_tensor(index, x.astype(np.float32))
        it.invoke()
        found.append(it.get_tensor(out)[:, :UNITS].copy())
    return np.array(found)


def interpreters():
    import tensorflow as tf
    found = [("tf.lite %s" % tf.__version__, (
        tf.lite.Interpreter,
        tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    ))]
    try:
        from ai_edge_litert import interpreter as litert
        found.append(("LiteRT", (
            litert.Interpreter,
            litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)))
    except ImportError:
        pass
    return found


def main():
    rng = np.random.RandomState(0)
    kernel = rng.randn(INPUTS + UNITS, 4 * UNITS).astype(np.float32) * 0.3
    kernel *= np.repeat(rng.rand((INPUTS + UNITS) // 16, 1, 4 * UNITS)
                        > 0.5, 16, axis=1).reshape(kernel.shape)
    bias = (rng.randn(4 * UNITS) * 0.1).astype(np.float32)
    xs = rng.randn(STEPS, 1, INPUTS) * 2
    if len(sys.argv) > 1 and sys.argv[1] == "--no-projection":
        run(one_op(kernel, bias, False, False), xs, interpreters()[0][1])
        print("ran")
        return
    for label, interpreter in interpreters():
        print(label)
        got = run(one_op(kernel, bias, False, True), xs, interpreter)
        for name, defect in (("the kernel as documented", False),
                             ("with the input's scale (defect 1)", True)):
            want = numpy_hybrid(kernel, bias, xs, False, defect)
            print("  8 sparse matrices + projection vs numpy %s: max |h "
                  "diff| per step %s" % (name, " ".join(
                      "%.2g" % e for e in np.abs(got - want).max(axis=(1, 2)))))
        got = run(one_op(kernel, bias, True, True), xs, interpreter)
        want = numpy_hybrid(kernel, bias, xs, True, False)
        print("  the library's layout (folded, identity projection) vs "
              "numpy: %s" % " ".join("%.2g" % e for e in
                                     np.abs(got - want).max(axis=(1, 2))))
    child = subprocess.run([sys.executable, os.path.abspath(__file__),
                            "--no-projection"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    print("sparse op without a projection (defect 2), in a child process: "
          "%s" % ("exit status %d%s" % (child.returncode, " (SIGSEGV)" if
                                        child.returncode == -11 else "")))


if __name__ == "__main__":
    main()
