"""`awd_lm.training.train_graph.Graph`: an instance's random ops depend
only on its seed (the same seed, the same initial weights and dropout
masks; another, others), the state and feeds follow the model's layers,
the warm-start Saver restores only the model's variables the checkpoint
holds, and a quantization-aware model's learned ranges are read back as
its variables hold them."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from support.lm_api import tiny_params
from tf1_awd_sparse.awd_lm.config.params import Params
from tf1_awd_sparse.awd_lm.training import train_graph

VOCAB = 9
STREAM = np.random.RandomState(0).randint(0, VOCAB, [2, 6]).astype(np.int32)


def _params(**changes):
    return Params.from_flat(dict(tiny_params(), vocab_size=VOCAB, **changes))


def _training_losses(g, seed, runs=3):
    """The training cross-entropy of ``runs`` runs of one window in a
    fresh instance of ``seed`` (fresh dropout masks each run)."""
    graph = g.instance(seed)[0]
    with tf.Session(graph=graph) as sess:
        sess.run(g.init)
        feed = g.feed(STREAM[:, :-1], STREAM[:, 1:], g.zero_state(2),
                      extra={g.training: True})
        return [float(sess.run(g.xent, feed)) for _ in range(runs)]


@pytest.fixture(scope="module")
def dropped():
    return train_graph.Graph(_params(model="awd", dropout=0.4, dropouth=0.3,
                                     dropouti=0.3, wdrop=0.5))


def test_an_instance_draws_what_its_seed_draws(dropped):
    first = _training_losses(dropped, 7)
    assert len(set(first)) == 3   # the masks change from run to run ...
    assert _training_losses(dropped, 7) == first   # ... as the seed says
    assert _training_losses(dropped, 8) != first


def test_the_state_and_the_feeds_follow_the_layers(dropped):
    # Two layers: 12 units, then the embedding's 8 (tied decoder).
    assert dropped.state_sizes == [12, 12, 8, 8]
    zeros = dropped.zero_state(3)
    assert [z.shape for z in zeros] == [(3, 12), (3, 12), (3, 8), (3, 8)]
    assert all(z.dtype == np.float32 and not z.any() for z in zeros)
    assert dropped.zero_state(3, teacher=True) == []
    feed = dropped.feed(STREAM[:, :-1], STREAM[:, 1:], zeros,
                        extra={dropped.lr: 0.5})
    assert feed[dropped.inputs] is not None and feed[dropped.lr] == 0.5
    assert [feed[name] is z for name, z in zip(dropped.state, zeros)] == [
        True] * 4
    assert len(feed) == 2 + 4 + 1
    graph, last, best, warm, teacher = dropped.instance(0)
    assert graph.finalized and warm is None and teacher is None
    assert last.saver_def.max_to_keep == 2 and best.saver_def.max_to_keep == 1
    with tf.Session(graph=graph) as sess:
        sess.run(dropped.init)
        assert dropped.quant_ranges(sess) == {}


def test_a_warm_start_restores_only_the_model_variables_it_names(tmp_path):
    saved = {"lm/embedding": np.full([VOCAB, 8], 0.25, np.float32),
             "lm/softmax_bias": np.arange(VOCAB, dtype=np.float32)}
    prefix = str(tmp_path / "warm.ckpt")
    with tf.Graph().as_default():
        variables = [tf.Variable(v, name=n) for n, v in saved.items()]
        with tf.Session() as sess:
            sess.run(tf.variables_initializer(variables))
            tf.train.Saver(variables).save(sess, prefix)
    g = train_graph.Graph(_params(), warm_names=sorted(saved) + [
        "not/in/the/model"])
    graph, _, _, warm, _ = g.instance(0)
    with tf.Session(graph=graph) as sess:
        sess.run(g.init)
        kernel = graph.get_tensor_by_name("lm/layer_0/lstm_0/kernel:0")
        before = sess.run(kernel)
        warm.restore(sess, prefix)
        for name, value in saved.items():
            np.testing.assert_array_equal(
                sess.run(graph.get_tensor_by_name(name + ":0")), value)
        np.testing.assert_array_equal(sess.run(kernel), before)


def test_a_quantized_models_ranges_are_its_variables():
    g = train_graph.Graph(_params(quant=True, quant_delay=0, num_layers=1))
    graph = g.instance(0)[0]
    with tf.Session(graph=graph) as sess:
        sess.run(g.init)
        ranges = g.quant_ranges(sess)
        # ``lm/<scope>/quant/<tensor>/min`` is the range ``<scope>/<tensor>/
        # min``.
        expected = {
            v.op.name.split("/", 1)[1].replace("/quant/", "/"): v
            for v in graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
            if "/quant/" in v.op.name and v.op.name.endswith(("/min",
                                                              "/max"))}
        assert ranges and sorted(ranges) == sorted(expected)
        for tag, variable in expected.items():
            assert ranges[tag] == pytest.approx(float(sess.run(variable)))
