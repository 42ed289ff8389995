"""Run by tests/base/test_compat.py in a subprocess: builds each of the
library's entry points with TensorFlow's v2 behaviour still (partly) on
and prints one JSON line per case: {"case", "result": "ok" | error type,
"message", "losses"}.

  python v2_behaviour_cases.py eager     # eager execution on (TF 2.x default)
  python v2_behaviour_cases.py v2graph   # graph mode, v2 control flow,
                                         # resource variables and shapes
  python v2_behaviour_cases.py cfv2      # v1 behaviour but v2 control flow
                                         # (tf.enable_control_flow_v2())
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
import tensorflow.compat.v1 as tf  # noqa: E402

MODE = sys.argv[1]
if MODE == "v2graph":
    tf.disable_eager_execution()
elif MODE == "cfv2":
    tf.disable_v2_behavior()
    tf.enable_control_flow_v2()   # TF 1.15 and 2.x
elif MODE == "eager" and not tf.executing_eagerly():
    tf.enable_eager_execution()   # TF 1.x: only before anything else

import tf1_awd_sparse.base._quiet  # noqa: F401,E402
import numpy as np  # noqa: E402

import variational_dropout as vd  # noqa: E402
from sparse_layers.l0_regularization import layers as l0_layers  # noqa
from sparse_layers.variational_dropout import layers as vd_layers  # noqa
from tf1_awd_sparse.awd_lm.graph import model as lm  # noqa: E402
from weight_drop_lstm import WeightDropLSTM, WeightDropLSTMCell  # noqa

LM = dict(vocab_size=7, emb_size=4, hidden_size=4, num_layers=2,
          model="awd", wdrop=0.5, dropout=0.1, dropouth=0.1, dropouti=0.1,
          dropoute=0.1, alpha=1.0, beta=1.0, wdecay=1e-6)


def _rnn(**kwargs):
    return lambda x, ids: tf.nn.dynamic_rnn(
        WeightDropLSTMCell(4, **kwargs), x, dtype=tf.float32)[0]


CASES = {
    "cell": _rnn(weight_drop_kr=0.5),
    "cell_held_mask": _rnn(weight_drop_kr=0.5, use_vd=True),
    "cell_quant": _rnn(is_quant=True),
    "cell_l0": _rnn(sparsity="l0"),
    "cell_static_rnn": lambda x, ids: tf.nn.static_rnn(
        WeightDropLSTMCell(4, weight_drop_kr=0.5, use_vd=True),
        tf.unstack(x, axis=1), dtype=tf.float32)[0][-1],
    "layer_held_mask": lambda x, ids: WeightDropLSTM(
        4, weight_drop_kr=0.5, use_vd=True)(x)[0],
    "locked_dropout": lambda x, ids: vd.locked_dropout(
        x * tf.get_variable("w", [3]), 0.8),
    "embedding_dropout": lambda x, ids: vd.embedding_dropout(
        tf.get_variable("e", [7, 3]), ids, 0.9),
    "l0_dense": lambda x, ids: l0_layers.FullyConnected(2)(
        tf.reshape(x, [-1, 3]), training=True),
    "vd_dense": lambda x, ids: vd_layers.FullyConnected(2)(
        tf.reshape(x, [-1, 3]), training=True),
    "build_lm_held_masks": lambda x, ids: lm.build_lm(
        {"inputs": ids, "targets": ids}, True, dict(LM, use_vd=True)).loss,
}


def _inputs():
    rng = np.random.RandomState(0)
    return (tf.constant(rng.randn(2, 5, 3).astype(np.float32)),
            tf.constant(rng.randint(0, 7, [2, 5]).astype(np.int32)))


def _train_twice(build):
    """Two optimizer steps with UPDATE_OPS: the two losses, and how many
    trainable variables the steps changed (of how many)."""
    with tf.Graph().as_default():
        # Seeded: unseeded, locked dropout's six-entry mask (then at keep
        # 0.5) was all zeros in one run of 64, and no gradient moved "w".
        tf.set_random_seed(0)
        loss = tf.reduce_sum(build(*_inputs()))
        with tf.control_dependencies(
                tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        weights = tf.trainable_variables()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(),
                      tf.local_variables_initializer()])
            before = sess.run(weights)
            losses = [float(sess.run([train, loss])[1]) for _ in range(2)]
            changed = sum(not np.array_equal(a, b)
                          for a, b in zip(before, sess.run(weights)))
            return losses, [changed, len(weights)]


def main():
    for name, build in sorted(CASES.items()):
        record = {"case": name, "result": "ok", "message": "", "losses": [],
                  "changed": [0, 0]}
        try:
            if MODE == "eager":
                build(*_inputs())
            else:
                record["losses"], record["changed"] = _train_twice(build)
        except Exception as error:  # pylint: disable=broad-except
            record["result"] = type(error).__name__
            record["message"] = str(error).splitlines()[0] if str(error) \
                else ""
        print(json.dumps(record))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
