"""What knowledge distillation costs per training step: the training loop's
graph (`awd_lm.training.train_graph.Graph`) of the demo preset's model (a
1,000-word vocabulary tied to a 128-d embedding, 256 + 128 LSTM units,
batch 10 x 35 steps, plain SGD as in the compression fine-tuning) with and
without the
teacher (``distill_weight`` 1: the teacher's forward pass in evaluation
mode, its softmax and the distillation term), measured in the same rounds
with one intra-op and one inter-op thread (``_timing.interleaved_ratios``).
The feeds are constant ids; the teacher's variables keep their initial
values (the step's cost does not depend on them).

Run: ``.venv/bin/python benchmarks/run.py bench_distill``
(or ``python benchmarks/bench_distill.py [--rounds N]``).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import _quiet  # noqa: F401,E402

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from tf1_awd_sparse.awd_lm.config import presets  # noqa: E402
from tf1_awd_sparse.awd_lm.config.params import Params  # noqa: E402
from tf1_awd_sparse.awd_lm.training import train_graph  # noqa: E402
from _timing import interleaved_ratios  # noqa: E402

VOCAB = 1000


def params(weight):
    """The demo preset's fine-tuning parameters, distilled with
    ``weight`` (0: no teacher)."""
    p = presets.split_quant(Params.for_preset("demo", "awd"))[0]
    return p.replace(vocab_size=VOCAB, optimizer="sgd",
                     distill_weight=weight, distill_temperature=1.0,
                     distill_from="unused" if weight else None)


class _Fed(object):
    """A runner of one training step with fixed feeds."""

    def __init__(self, sess, feed):
        self.sess, self.feed = sess, feed

    def run(self, fetches):
        """One step."""
        return self.sess.run(fetches, self.feed)

    def close(self):
        """Closes the session."""
        self.sess.close()


def build_step(weight):
    """(runner, fetches) of one training step of `params(weight)`."""
    p = params(weight)
    g = train_graph.Graph(p)
    graph = g.instance(p.optimization.seed)[0]
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    sess = tf.Session(graph=graph, config=config)
    sess.run(g.init)
    batch = p.optimization.batch_size
    ids = np.random.RandomState(0).randint(
        0, VOCAB, [batch, p.optimization.bptt + 1]).astype(np.int32)
    feed = g.feed(ids[:, :-1], ids[:, 1:], g.zero_state(batch),
                  {g.lr: 1.0, g.training: True})
    feed.update(zip(g.teacher_state, g.zero_state(batch, teacher=True)))
    return _Fed(sess, feed), [g.train_op, g.xent]


def main(argv=()):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(list(argv))
    p = params(0.0)
    print("LM fine-tuning step (train.Graph), demo preset: vocab %d, %d-d "
          "embedding, LSTM %s units, batch %d x %d, 1 thread" % (
              VOCAB, p.model.emb_size, " + ".join(
                  str(n) for n in [p.model.hidden_size]
                  * (p.model.num_layers - 1) + [p.model.emb_size]),
              p.optimization.batch_size, p.optimization.bptt))
    built = [("no teacher", build_step(0.0)), ("teacher", build_step(1.0))]
    ratios, (base_wall, base_cpu) = interleaved_ratios(built, args.rounds)
    wall, cpu, cpu_min = ratios["teacher"]
    print("%-30s %7.1f ms/step (cpu %.1f ms)" % (
        "without distillation", 1e3 * base_wall, 1e3 * base_cpu))
    print("%-30s %7.2f x the step's time (cpu %.2f x, fastest rounds "
          "%.2f x)" % ("with the teacher (weight 1)", wall, cpu, cpu_min))


if __name__ == "__main__":
    main(sys.argv[1:])
