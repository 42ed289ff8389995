"""The PyTorch peer of the language model's training step: AWD-LSTM as a
PyTorch user would train it, to the recipe of Merity et al. (2017) as
salesforce/awd-lstm-lm implements it (written here from that description,
not copied): `WeightDropLSTM` (DropConnect on each layer's hidden-to-hidden
weight, one mask per step), `embedded_dropout` (whole words dropped by
masking the embedding matrix), `LockedDropout` (one mask per sequence),
AR / TAR, the tied decoder over the full softmax, `clip_grad_norm_` and
SGD with weight decay; the hidden state is carried, detached, from step
to step. ``nn.LSTM``'s CPU kernel runs the layers (oneDNN's when torch
has it, as the ``+cpu`` wheels do).

The sizes and rates are `bench_lm`'s ``awd`` model (the ``demo`` preset
with ``wdrop`` 0.5, `SIZES` and `RATES`): vocabulary 10,000 tied to a
200-d embedding, 2 x 200 LSTM layers, batch 20 x 35 steps (fixed bptt),
the same constant batch every step, learning rate 1.0 as bench_lm's step.

`LayerTrainer` is the peer of `bench_peer`'s layer rows: one
`WeightDropLSTM` (``nn.LSTM``, ``batch_first``, DropConnect 0.5 on
``weight_hh_l0``) on `_layer_task`'s task, from its starting weights.

Run in ``.venv-peer`` (``make bench-peer`` builds it): ``--serve`` answers
`_peer_protocol` requests for `bench_peer` (``--model``: the models served,
``lm`` and / or `_layer_task.model_name`'s ``layer-<depth>-<units>``);
without it, times a few steps of each model and prints the losses
(``.venv-peer/bin/python benchmarks/peer_awd_lstm.py --steps 20``).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _layer_task  # noqa: E402
import _peer_protocol  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

#: bench_lm's sizes: VOCAB, EMB, UNITS, LAYERS, BATCH, BPTT.
SIZES = dict(vocab=10000, emb=200, units=200, layers=2, batch=20, bptt=35)
#: bench_lm's 'awd' rates (presets 'demo', wdrop 0.5): embedding rows
#: (dropoute), embedding output (dropouti), between layers (dropouth), the
#: last layer's output (dropout), DropConnect (wdrop); AR alpha, TAR beta,
#: weight decay, the global-norm clip and the step's learning rate.
RATES = dict(dropoute=0.2, dropouti=0.4, dropouth=0.35, dropout=0.4,
             wdrop=0.5, alpha=2.0, beta=1.0, wdecay=1.2e-6, clip=0.25,
             lr=1.0)


def embedded_dropout(embedding, words, rate, training):
    """Looks up ``words`` in ``embedding`` (an ``nn.Embedding``) with whole
    words dropped: one Bernoulli(1 - ``rate``) draw per vocabulary row,
    kept rows scaled by 1 / (1 - rate), applied to the whole matrix before
    the lookup (the recipe's way: vocab x emb multiplies per step)."""
    weight = embedding.weight
    if training and rate > 0:
        keep = weight.new_empty((weight.size(0), 1)).bernoulli_(1 - rate)
        weight = weight * keep / (1 - rate)
    return F.embedding(words, weight)


def locked_dropout(x, rate, training):
    """Dropout of ``x`` ``[time, batch, features]`` with one mask per
    (batch row, feature), the same at every time step."""
    if not training or rate == 0:
        return x
    keep = x.new_empty((1,) + tuple(x.shape[1:])).bernoulli_(1 - rate)
    return x * keep / (1 - rate)


class WeightDropLSTM(nn.Module):
    """One ``nn.LSTM`` layer whose hidden-to-hidden weight is DropConnect-ed
    (``F.dropout`` of the weight, a new mask every forward while
    training). The dropped weight enters through
    ``torch.func.functional_call``, so the raw weight stays the module's
    one parameter (what the optimizer updates) and ``nn.LSTM`` keeps its
    own kernel: no parameter is deleted or re-registered, which is what
    trips torch 2.x's flattened-weights checks in the older recipe."""

    def __init__(self, inputs, units, rate, batch_first=False):
        super().__init__()
        self.lstm = nn.LSTM(inputs, units, batch_first=batch_first)
        self.rate = rate

    def forward(self, x, state):
        """``(outputs [time, batch, units], (h, c))`` of the layer on ``x``
        ``[time, batch, inputs]`` (both batch major with ``batch_first``)
        from ``state`` (None: zeros)."""
        dropped = F.dropout(self.lstm.weight_hh_l0, self.rate,
                            self.training)
        return torch.func.functional_call(
            self.lstm, {"weight_hh_l0": dropped}, (x, state))


class AWDLanguageModel(nn.Module):
    """Embedding -> WeightDropLSTM layers with locked dropout around them
    -> decoder tied to the embedding (the last layer has ``emb`` units so
    the tie works)."""

    def __init__(self, vocab, emb, units, layers, rates):
        super().__init__()
        self.rates = rates
        self.embedding = nn.Embedding(vocab, emb)
        sizes = [emb] + [units] * (layers - 1) + [emb]
        self.layers = nn.ModuleList(
            WeightDropLSTM(sizes[i], sizes[i + 1], rates["wdrop"])
            for i in range(layers))
        self.decoder = nn.Linear(emb, vocab)
        self.decoder.weight = self.embedding.weight
        # The recipe's initialization: a small uniform table, zero bias.
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def zero_state(self, batch):
        """Zero ``(h, c)`` of every layer for ``batch`` rows."""
        return [(torch.zeros(1, batch, layer.lstm.hidden_size),
                 torch.zeros(1, batch, layer.lstm.hidden_size))
                for layer in self.layers]

    def forward(self, words, states):
        """``(logits [time * batch, vocab], new states, the last layer's
        raw output, its dropped output)`` for ``words`` ``[time,
        batch]``."""
        rates, training = self.rates, self.training
        x = embedded_dropout(self.embedding, words, rates["dropoute"],
                             training)
        x = locked_dropout(x, rates["dropouti"], training)
        new_states = []
        for i, layer in enumerate(self.layers):
            raw, state = layer(x, states[i])
            new_states.append(state)
            last = i == len(self.layers) - 1
            x = locked_dropout(raw, rates["dropout" if last else "dropouth"],
                               training)
        logits = self.decoder(x.reshape(-1, x.size(-1)))
        return logits, new_states, raw, x


class Trainer(object):
    """The model, its optimizer, a constant batch and the carried state:
    `step` is one training step as the recipe's training loop runs it."""

    def __init__(self, sizes=None, rates=None, seed=0):
        sizes, self.rates = dict(SIZES, **(sizes or {})), dict(RATES,
                                                               **(rates or {}))
        torch.manual_seed(seed)
        self.model = AWDLanguageModel(sizes["vocab"], sizes["emb"],
                                      sizes["units"], sizes["layers"],
                                      self.rates)
        self.model.train()
        # Weight decay in the optimizer, as the recipe does it.
        self.optimizer = torch.optim.SGD(self.model.parameters(),
                                         lr=self.rates["lr"],
                                         weight_decay=self.rates["wdecay"])
        ids = torch.randint(0, sizes["vocab"],
                            (sizes["bptt"] + 1, sizes["batch"]))
        self.inputs, self.targets = ids[:-1], ids[1:].reshape(-1)
        self.states = self.model.zero_state(sizes["batch"])

    def step(self):
        """One training step; returns the cross-entropy (a float)."""
        # Carried state, cut from the previous step's graph.
        states = [(h.detach(), c.detach()) for h, c in self.states]
        self.optimizer.zero_grad()
        logits, self.states, raw, dropped = self.model(self.inputs, states)
        xent = F.cross_entropy(logits, self.targets)
        ar = self.rates["alpha"] * dropped.pow(2).mean()
        tar = self.rates["beta"] * (raw[1:] - raw[:-1]).pow(2).mean()
        (xent + ar + tar).backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), self.rates["clip"])
        self.optimizer.step()
        return xent.item()


class LayerTrainer(object):
    """One `WeightDropLSTM` layer (batch major, DropConnect at
    ``rate``) trained on `_layer_task`'s task: `step` is its forward from
    a zero state, the mean squared error, backward and plain SGD."""

    def __init__(self, depth, units, rate=RATES["wdrop"], seed=0):
        task = _layer_task.arrays(depth, units, seed)
        torch.manual_seed(seed)
        self.layer = WeightDropLSTM(depth, units, rate, batch_first=True)
        lstm = self.layer.lstm
        with torch.no_grad():
            for name, value in zip(
                    ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                     "bias_hh_l0"),
                    _layer_task.torch_weights(task["kernel"], task["bias"],
                                              depth)):
                getattr(lstm, name).copy_(torch.from_numpy(value))
        # LSTMCell has one bias: SGD on both of nn.LSTM's would move the
        # sum by twice the step (the same gradient reaches both).
        lstm.bias_hh_l0.requires_grad_(False)
        self.layer.train()
        self.optimizer = torch.optim.SGD(
            [p for p in self.layer.parameters() if p.requires_grad],
            lr=_layer_task.LR)
        self.x = torch.from_numpy(task["x"])
        self.target = torch.from_numpy(task["target"])

    def step(self):
        """One training step; returns its loss before the update."""
        self.optimizer.zero_grad()
        outputs, _ = self.layer(self.x, None)
        loss = (outputs - self.target).pow(2).mean()
        loss.backward()
        self.optimizer.step()
        return loss.item()


def trainer(model):
    """The trainer of `_peer_protocol` model name ``model``: `Trainer` for
    ``'lm'``, `LayerTrainer` for ``'layer-<depth>-<units>'`` (without
    DropConnect for ``'layer-<depth>-<units>-nodrop'``).

    Raises:
      ValueError: another name (a ``cell`` or ``lstmcell`` is
        TensorFlow's only).
    """
    kind, depth, units, drop = _layer_task.parse_model(model)
    if kind == "lm":
        return Trainer()
    if kind == "layer":
        return LayerTrainer(depth, units, RATES["wdrop"] if drop else 0.0)
    raise ValueError("the peer has no %r (only 'lm' and layer-D-H)" % model)


def set_threads(threads):
    """Holds torch's intra-op and inter-op pools to ``threads`` threads
    (the inter-op one can only be set before torch first uses it)."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)


def main(argv=()):
    """The peer's command line: ``--serve`` for `bench_peer`, else a
    standalone timing. Raises SystemExit on bad arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--serve", action="store_true",
                        help="answer _peer_protocol requests on stdin")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", action="append",
                        help="a model to serve or time, repeatable: 'lm' "
                             "(the default) or layer-<depth>-<units>")
    args = parser.parse_args(list(argv))
    set_threads(args.threads)
    trainers = {m: trainer(m) for m in args.model or ["lm"]}
    info = _peer_protocol.describe("torch", torch.__version__, args.threads)
    if args.serve:
        _peer_protocol.serve({m: (t.step, t.step)
                              for m, t in trainers.items()}, info)
        return
    for model, each in trainers.items():
        losses = [each.step() for _ in range(3)]
        start = time.perf_counter()
        losses += [each.step() for _ in range(args.steps)]
        seconds = (time.perf_counter() - start) / args.steps
        print("%s %s: %.0f tokens/s (%.1f ms/step), loss %.6f -> %.6f" % (
            info, model, SIZES["batch"] * SIZES["bptt"] / seconds,
            1e3 * seconds, losses[0], losses[-1]))


if __name__ == "__main__":
    main(sys.argv[1:])
