"""Numerics over long runs (issue 13): a sparse variational-dropout model, an
L0 model and a quantization-aware LSTM train with the library's defaults
(``clip_alpha=None``: log(alpha) unclipped, as documented) and end with
finite weights, losses and gradients.

`make test` runs 300 steps of each; ``--hypothesis-profile long`` (or
``TF1_AWD_LONG=1``) runs 10,000. The losses are fetched every 50 steps and
must all be finite; at the end every trainable variable and every gradient
must be finite too. Each run's numbers (steps, final loss, max |weight|)
are printed after the session (``conftest.pytest_terminal_summary``).
"""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from sparse_layers import losses
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.variational_dropout import layers as vd_layers
from weight_drop_lstm import WeightDropLSTMCell

SHORT, LONG = 300, 10000
BATCH, STEPS, DEPTH, UNITS, CLASSES, EXAMPLES = 8, 4, 3, 6, 3, 64
CONFIG = tf.ConfigProto(intra_op_parallelism_threads=1,
                        inter_op_parallelism_threads=1)

#: (model, steps, final loss, max |weight|) of each run, for the summary.
RESULTS = []


def _data(seed):
    """A fixed task: the class of the sign pattern of a random projection
    of each sequence's mean (learnable, not trivially)."""
    rng = np.random.RandomState(seed)
    x = rng.randn(EXAMPLES, STEPS, DEPTH).astype(np.float32)
    projection = rng.randn(DEPTH, CLASSES)
    y = np.argmax(x.mean(1).dot(projection), 1).astype(np.int32)
    return x, y


def _sparse_model(technique, x, y):
    """A sparse recurrent classifier: a WeightDropLSTMCell whose kernel is
    sparse (``sparsity``), then a sparse FullyConnected layer of the same
    technique, cross-entropy plus the technique's penalty (weight 1 / the
    number of examples, the README's choice)."""
    cell = WeightDropLSTMCell(UNITS, sparsity=technique, weight_drop_kr=0.8)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    layer = (vd_layers if technique == "variational_dropout"
             else l0_layers).FullyConnected(CLASSES)
    logits = layer(outputs[:, -1])
    data_loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    penalty = (losses.kl_loss if technique == "variational_dropout"
               else losses.l0_loss)(weight=1.0 / EXAMPLES, summaries=False)
    return data_loss + penalty


def _qat_model(x, y):
    """A quantization-aware LSTM (8-bit weights and activations, learned
    ranges, DropConnect) regressing the running class index."""
    cell = WeightDropLSTMCell(UNITS, is_quant=True, weight_drop_kr=0.8)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    prediction = tf.layers.dense(outputs[:, -1], 1)[:, 0]
    return tf.reduce_mean(tf.square(prediction - tf.cast(y, tf.float32)))


MODELS = {"variational_dropout": lambda x, y: _sparse_model(
    "variational_dropout", x, y),
          "l0": lambda x, y: _sparse_model("l0", x, y),
          "qat": _qat_model}


def _train(model, steps, seed=0):
    """Trains ``model`` for ``steps`` Adam steps (lr 0.01, a fast rate so
    that drifts show early); returns (losses every 50 steps, final loss,
    variable values, gradient values)."""
    data_x, data_y = _data(seed)
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph,
                                        config=CONFIG) as session:
        tf.set_random_seed(seed)
        tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [BATCH, STEPS, DEPTH])
        y = tf.placeholder(tf.int32, [BATCH])
        loss = MODELS[model](x, y)
        variables = tf.trainable_variables()
        gradients = tf.gradients(loss, variables)
        train = tf.train.AdamOptimizer(0.01).apply_gradients(
            zip(gradients, variables),
            global_step=tf.train.get_global_step())
        session.run([tf.global_variables_initializer(),
                     tf.local_variables_initializer()])
        rng = np.random.RandomState(seed)
        seen = []
        for step in range(steps):
            index = rng.randint(0, EXAMPLES, BATCH)
            feed = {x: data_x[index], y: data_y[index]}
            if step % 50 == 0:
                seen.append(session.run(loss, feed))
            session.run(train, feed)
        feed = {x: data_x[:BATCH], y: data_y[:BATCH]}
        final, values, grads = session.run([loss, variables, gradients],
                                           feed)
        names = [v.op.name for v in variables]
    return seen, final, dict(zip(names, values)), dict(zip(names, grads))


def _check_finite(model, steps):
    seen, final, values, grads = _train(model, steps)
    assert np.all(np.isfinite(seen)), (model, seen)
    assert np.isfinite(final), model
    for name, value in values.items():
        assert np.all(np.isfinite(value)), (model, name)
    for name, grad in grads.items():
        assert grad is None or np.all(np.isfinite(grad)), (model, name)
    largest = max(float(np.abs(v).max()) for v in values.values())
    RESULTS.append((model, steps, float(final), largest))
    return seen, final


@pytest.mark.parametrize("model", sorted(MODELS))
def test_short_run_stays_finite_and_learns(model):
    seen, final = _check_finite(model, SHORT)
    # The task is learnable: the loss goes down from its start.
    assert np.mean(seen[-2:] + [final]) < seen[0], (model, seen, final)


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(MODELS))
def test_long_run_stays_finite(model, long_run):
    if not long_run:
        pytest.skip("10,000 steps: run with --hypothesis-profile long or "
                    "TF1_AWD_LONG=1")
    _check_finite(model, LONG)
