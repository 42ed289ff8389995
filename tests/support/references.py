"""Numpy references the tests compare the library with: TensorFlow's
fake-quant nudging (the uint8 grid of a learned range, which a uint8
model's state tensors must be on) and fake quantization, last-value weight
quantization, a fake-quantized LSTM step with peepholes, projection and
clips (written from the spec of issue 5 and LSTMCell's math), LSTMCell's
float step, and a whole-sequence float LSTM over batch-major inputs."""
import numpy as np
import tensorflow.compat.v1 as tf

from support.tolerances import lstm_atol


def nudge(lo, hi, bits=8, narrow=False):
    """(nudged_min, nudged_max, scale) as tf.fake_quant_with_min_max_vars."""
    qmin, qmax = (1 if narrow else 0), 2 ** bits - 1
    scale = (np.float32(hi) - np.float32(lo)) / np.float32(qmax - qmin)
    zp_from_min = qmin - np.float32(lo) / scale
    if zp_from_min < qmin:
        zp = qmin
    elif zp_from_min > qmax:
        zp = qmax
    else:
        zp = np.floor(zp_from_min + 0.5)
    return (np.float32((qmin - zp) * scale), np.float32((qmax - zp) * scale),
            np.float32(scale))


def learned_grid(lo, hi, limit=None, bits=8):
    """Numpy ``(scale, zero_point)`` of a learned range as a uint8 model
    holds it: ``[lo, hi]`` widened to contain 0, inside ``[-limit, limit]``
    (a clip), nudged as ``tf.fake_quant_with_min_max_vars`` nudges it."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if limit is not None:
        lo, hi = max(lo, -limit), min(hi, limit)
    nudged_min, _, scale = nudge(lo, hi, bits)
    return float(scale), int(round(-nudged_min / scale))


def state_grid_errors(runner, grids):
    """What differs between a uint8 model's state tensors and the grids
    they should be on: each ``state_<l>_<c|h>`` input and its
    ``final_<l>_<c|h>`` output against ``grids[(l, 'c' | 'h')]``, a
    ``(scale, zero_point)`` (`learned_grid`).

    Args:
      runner: a ``TFLiteRunner`` (``inputs`` / ``outputs`` details).
      grids: dict ``(layer, part)`` -> ``(scale, zero_point)``, one entry
        per state input of the model.

    Returns:
      list of str, empty when every tensor is on its grid.
    """
    errors = []
    states = sorted(name for name in runner.inputs
                    if name.startswith("state_"))
    if states != sorted("state_%d_%s" % key for key in grids):
        errors.append("state inputs %s, expected %s" % (
            states, sorted("state_%d_%s" % key for key in grids)))
    for (layer, part), (scale, zero_point) in sorted(grids.items()):
        for detail in (runner.inputs.get("state_%d_%s" % (layer, part)),
                       runner.outputs.get("final_%d_%s" % (layer, part))):
            if detail is None:
                continue
            got_scale, got_zero = detail["quantization"]
            if (detail["dtype"] != np.uint8 or got_zero != zero_point
                    or abs(got_scale - scale) > 1e-5 * scale):
                errors.append("%s: %s (scale, zero point) %s, expected %s"
                              % (detail["name"], detail["dtype"].__name__,
                                 (got_scale, got_zero), (scale, zero_point)))
    return errors


def fake_quant(x, lo, hi, bits=8, narrow=False):
    """Numpy fake quantization (clamp to the nudged range, round)."""
    nmin, nmax, scale = nudge(lo, hi, bits, narrow)
    x = np.clip(np.asarray(x, np.float32), nmin, nmax)
    return (np.floor((x - nmin) / scale + np.float32(0.5)) * scale
            + nmin).astype(np.float32)


def grid_offset(x, lo, hi, bits=8):
    """Distance of each value from the nearest grid point, in steps."""
    nmin, _, scale = nudge(lo, hi, bits)
    steps = (np.asarray(x, np.float64) - nmin) / scale
    return np.abs(steps - np.round(steps))


def sigmoid(x):
    """The logistic function 1 / (1 + exp(-x)) of an array, in float64
    (a reference's precision, whatever the input's dtype); the one copy
    every test's numpy reference uses."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def closed_form_sparsity(step, begin, end, target, exponent=3.0):
    """Zhu & Gupta's gradual sparsity schedule in float64, written
    independently: ``target (1 - (1 - p) ** exponent)`` with ``p`` the
    progress from ``begin`` to ``end`` clipped to [0, 1]."""
    progress = np.clip((np.asarray(step, np.float64) - begin)
                       / float(end - begin), 0.0, 1.0)
    return target * (1.0 - (1.0 - progress) ** exponent)


def quantize_weight(w, bits=8):
    """Numpy last-value weight quantization: narrow range on the weight's
    own [min, max] widened to contain 0."""
    return fake_quant(w, min(w.min(), 0.0), max(w.max(), 0.0), bits,
                      narrow=True)


def lstm_quant_step(x, c, h, w, r, bits=8, hard=False, forget_bias=1.0,
                    cell_clip=None, proj_clip=None):
    """One fake-quantized LSTM step, LSTMCell's math (gate order i, j, f,
    o) with every tensor of the quantized step's spec on its grid.

    Peepholes (``w`` has 'w_i_diag', 'w_f_diag', 'w_o_diag'): the i and f
    pre-activations add their weight times the previous cell state, the o
    pre-activation its weight times the new one; each product and each sum
    is quantized on its own range ('peephole_<g>', 'gate_<g>'), the gate's
    input range from then on. Projection (``w`` has 'projection'): the
    cell's output is quantized on 'cell_output', multiplied by the
    projection and quantized on 'output'. The clips bound the 'state'
    (``cell_clip``) and, with a projection, 'output' (``proj_clip``)
    ranges.

    Args:
      x, c, h: [batch, ...] float arrays.
      w: dict 'kernel', 'bias' and the optional weights above (float
        arrays, before quantization).
      r: dict range name -> (lo, hi), with 'input', 'gates',
        'forget_state', 'input_state', 'state', 'output' and those above.

    Returns:
      (h_new, c_new).
    """
    n = c.shape[1]
    r = dict(r)

    def bound(name, clip):
        if clip is not None:
            r[name] = (max(r[name][0], -clip), min(r[name][1], clip))

    bound("state", cell_clip)
    bound("output", proj_clip if "projection" in w else None)
    sig_r = (0.0, 255.0 / 256.0)
    tanh_r = (-1.0, 127.0 / 128.0)
    kernel = quantize_weight(w["kernel"], bits)
    bias = w["bias"].copy()
    bias[2 * n:3 * n] += forget_bias
    concat_r = (min(r["input"][0], r["output"][0]),
                max(r["input"][1], r["output"][1]))
    c = fake_quant(c, *r["state"])
    h = fake_quant(h, *r["output"])
    joined = fake_quant(np.concatenate([x, h], 1), *concat_r)
    z = fake_quant(joined.dot(kernel) + bias, *r["gates"])
    i, j, f, o = np.split(z, 4, axis=1)

    def peephole(pre, gate, state):
        if "w_%s_diag" % gate not in w:
            return pre, r["gates"]
        product = fake_quant(quantize_weight(w["w_%s_diag" % gate], bits)
                             * state, *r["peephole_" + gate])
        return (fake_quant(pre + product, *r["gate_" + gate]),
                r["gate_" + gate])

    def gate(t, t_range):
        if hard:
            scaled = fake_quant(0.2 * t, 0.2 * t_range[0], 0.2 * t_range[1])
            return fake_quant(scaled + 0.5, *sig_r)
        return fake_quant(sigmoid(t), *sig_r)

    def squash(t, t_range):
        if hard:
            return fake_quant(np.maximum(t, 0.0), *t_range)
        return fake_quant(np.tanh(t), *tanh_r)

    i, i_range = peephole(i, "i", c)
    f, f_range = peephole(f, "f", c)
    kept = fake_quant(gate(f, f_range) * c, *r["forget_state"])
    added = fake_quant(gate(i, i_range) * squash(j, r["gates"]),
                       *r["input_state"])
    c_new = fake_quant(kept + added, *r["state"])
    o, o_range = peephole(o, "o", c_new)
    m = gate(o, o_range) * squash(c_new, r["state"])
    if "projection" in w:
        m = fake_quant(m, *r["cell_output"]).dot(
            quantize_weight(w["projection"], bits))
    return fake_quant(m, *r["output"]), c_new


def lstm_float_step(x, c, h, kernel, bias, forget_bias=1.0, hard=False):
    """Plain float LSTM step (LSTMCell's math; with ``hard``, hard sigmoid
    clip(0.2 x + 0.5, 0, 1) and ReLU instead of sigmoid and tanh)."""
    gate = (lambda t: np.clip(0.2 * t + 0.5, 0.0, 1.0)) if hard else sigmoid
    squash = (lambda t: np.maximum(t, 0.0)) if hard else np.tanh
    z = np.concatenate([x, h], 1).dot(kernel) + bias
    i, j, f, o = np.split(z, 4, axis=1)
    c = gate(f + forget_bias) * c + gate(i) * squash(j)
    return gate(o) * squash(c), c


# A whole sequence: the shapes the cell tests use.
BATCH, TIME, DEPTH, UNITS = 3, 4, 5, 6


def lstm_tolerance(dtype, evaluations=1, backward=False, steps=TIME,
                   terms=DEPTH + UNITS + UNITS + 1):
    """What the cell tests' LSTMs can differ by: ``lstm_atol`` of their
    shapes (``terms``: input, h, a peephole / projection's worth, the
    bias), their inputs (standard normal, |x| <~ 3) and weights (default
    initializers or 0.7 randn: sum |w| over a gate column <~ 7, so sum
    |term| <= 20), per ``evaluations`` not the exact one (2: two float
    graphs of the same function compared, each summed in its own order;
    1: against float64 numpy); ``backward``: the gradients too, the same
    recurrence run back (twice). Used as atol and rtol (gradients are sums
    of many terms, their error relative to their size)."""
    return (evaluations * (2 if backward else 1)
            * lstm_atol(steps, terms, 20.0, getattr(
                dtype, "as_numpy_dtype", dtype)))


def lstm_inputs(dtype=tf.float32, seed=0):
    """A [BATCH, TIME, DEPTH] constant of standard normal values."""
    rng = np.random.RandomState(seed)
    return tf.constant(rng.randn(BATCH, TIME, DEPTH), dtype=dtype)


def np_lstm(x, kernel, bias, forget_bias=1.0):
    """Plain numpy LSTM (no peepholes/projection), batch-major input."""
    units = bias.shape[0] // 4
    c = np.zeros((x.shape[0], units))
    h = np.zeros((x.shape[0], units))
    outputs = []
    for t in range(x.shape[1]):
        z = np.concatenate([x[:, t], h], 1).dot(kernel) + bias
        i, j, f, o = np.split(z, 4, axis=1)
        c = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1)
