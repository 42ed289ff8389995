"""The one-layer training task of `bench_peer`'s layer rows, the same on
both sides: seeded inputs, targets and starting weights as numpy arrays
(numpy only: imported by the TensorFlow workers and by the PyTorch one).

A step is: the layer over ``x`` ``[BATCH, TIME, depth]`` (batch major)
from a zero state, the loss ``mean((outputs - target) ** 2)``, its
gradient and one plain SGD update of every weight at `LR`, DropConnect on
the recurrent weight with a fresh mask each step. The weights start from
`arrays` on both sides, in TensorFlow's ``LSTMCell`` layout (one
``kernel`` ``[depth + units, 4 units]``, gates i, j, f, o, the forget
bias 1.0 added inside the cell); `torch_weights` gives the same LSTM in
``nn.LSTM``'s layout. `numpy_loss` is the loss of the first step without
DropConnect, the reference both sides are checked against.
"""
import numpy as np

#: The LM's batch and bptt (bench_lm.BATCH, BPTT).
BATCH, TIME = 20, 35
#: SGD's learning rate of a step.
LR = 0.5
#: LSTMCell's default, added to the forget gate's pre-activation.
FORGET_BIAS = 1.0
#: TensorFlow's gate blocks (i, j, f, o) in nn.LSTM's order (i, f, g, o):
#: j is the candidate, torch's g.
TORCH_GATE_ORDER = (0, 2, 1, 3)


def arrays(depth, units, seed=0):
    """The task's float32 arrays.

    Args:
      depth, units: the layer's input depth and size (positive ints).
      seed: numpy seed.

    Returns:
      dict: ``x`` ``[BATCH, TIME, depth]``, ``target`` ``[BATCH, TIME,
      units]``, ``kernel`` ``[depth + units, 4 units]`` (uniform in
      +-1/sqrt(units), nn.LSTM's default range), ``bias`` ``[4 units]``
      (zero, LSTMCell's default).

    Raises:
      ValueError: a size that is not a positive int.
    """
    for name, value in (("depth", depth), ("units", units)):
        if not isinstance(value, int) or value < 1:
            raise ValueError("%s must be a positive int, got %r"
                             % (name, value))
    rng = np.random.RandomState(seed)
    scale = 1.0 / np.sqrt(units)
    return {
        "x": rng.randn(BATCH, TIME, depth).astype(np.float32),
        "target": (0.5 * rng.randn(BATCH, TIME, units)).astype(np.float32),
        "kernel": rng.uniform(-scale, scale, [depth + units, 4 * units])
        .astype(np.float32),
        "bias": np.zeros([4 * units], np.float32)}


def torch_weights(kernel, bias, depth, forget_bias=FORGET_BIAS):
    """LSTMCell's ``kernel`` ``[depth + H, 4H]`` and ``bias`` ``[4H]`` as
    ``nn.LSTM``'s ``(weight_ih [4H, depth], weight_hh [4H, H], bias_ih
    [4H], bias_hh [4H])``: gate blocks reordered (`TORCH_GATE_ORDER`),
    matrices transposed, ``forget_bias`` folded into the forget gate's
    ``bias_ih`` (torch has no separate one), ``bias_hh`` zero.

    Raises:
      ValueError: shapes that do not fit ``depth``.
    """
    kernel, bias = np.asarray(kernel), np.asarray(bias)
    units = kernel.shape[1] // 4
    if kernel.shape != (depth + units, 4 * units) or \
            bias.shape != (4 * units,):
        raise ValueError("kernel %s and bias %s do not fit depth %d (want "
                         "[depth + H, 4H] and [4H])"
                         % (kernel.shape, bias.shape, depth))
    blocks = [slice(g * units, (g + 1) * units) for g in TORCH_GATE_ORDER]
    columns = np.concatenate([np.arange(4 * units)[b] for b in blocks])
    bias_ih = bias[columns].copy()
    bias_ih[units:2 * units] += forget_bias   # torch's f block
    return (np.ascontiguousarray(kernel[:depth, columns].T),
            np.ascontiguousarray(kernel[depth:, columns].T),
            bias_ih, np.zeros_like(bias_ih))


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_loss(task, forget_bias=FORGET_BIAS):
    """The first step's loss without DropConnect, in float64 numpy from
    ``task`` (`arrays`): LSTMCell's recurrence (gates i, j, f, o) over
    ``x`` from a zero state, then the mean squared error to ``target``."""
    x = task["x"].astype(np.float64)
    kernel = task["kernel"].astype(np.float64)
    bias = task["bias"].astype(np.float64)
    units = kernel.shape[1] // 4
    h = np.zeros([x.shape[0], units])
    c = np.zeros_like(h)
    outputs = []
    for t in range(x.shape[1]):
        gates = np.concatenate([x[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(gates, 4, axis=1)
        c = _sigmoid(f + forget_bias) * c + _sigmoid(i) * np.tanh(j)
        h = _sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return float(np.mean((np.stack(outputs, 1) - task["target"]) ** 2))


#: The suffix of a model name for the model without DropConnect (the
#: check's: its losses are `numpy_loss`'s on every side).
NO_DROP = "-nodrop"


def model_name(kind, depth, units, drop=True):
    """The protocol name of a layer model: ``'<kind>-<depth>-<units>'``
    (kind: ``layer``, ``cell``, ``lstmcell``), `NO_DROP` appended when
    not ``drop``."""
    return "%s-%d-%d%s" % (kind, depth, units, "" if drop else NO_DROP)


def parse_model(name):
    """``(kind, depth, units, drop)`` of a `model_name` (``('lm', None,
    None, True)`` for ``'lm'``).

    Raises:
      ValueError: any other name.
    """
    if name == "lm":
        return "lm", None, None, True
    drop = not name.endswith(NO_DROP)
    parts = (name if drop else name[:-len(NO_DROP)]).split("-")
    if len(parts) == 3 and parts[0] in ("layer", "cell", "lstmcell") and \
            all(p.isdigit() and int(p) > 0 for p in parts[1:]):
        return parts[0], int(parts[1]), int(parts[2]), drop
    raise ValueError("unknown model %r (want 'lm' or '<layer|cell|"
                     "lstmcell>-<depth>-<units>[%s]')" % (name, NO_DROP))
