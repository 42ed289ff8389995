"""Training loop of the language model: stateful truncated BPTT, NT-ASGD,
early stopping, checkpoints, exact resume, TensorBoard summaries, JSON.

Exact resume: every epoch runs in a fresh copy of the graph whose random
ops are seeded by (seed, epoch) and starts from the previous epoch's
checkpoint, and the Python-side state (validation history, best loss,
BPTT-length generator) is a function of the saved state and the epoch.  A
run killed at any point and resumed with ``resume=True`` therefore redoes
the interrupted epoch exactly as an uninterrupted run would.
"""
import collections
import json
import math
import os
import shutil
import time

import numpy as np
import tensorflow as tf

from tf1_awd_sparse.awd_lm import data, model
from sparse_layers import report as sparse_report

STATE_FILE = "state.json"
SUMMARY_FILE = "summary.json"


class Graph(object):
    """The training/evaluation graph of one model, built once.

    Each epoch runs in `instance(seed)`: a copy of this graph (through its
    MetaGraphDef) whose random ops are reseeded from `seed`, so an epoch's
    dropout masks depend only on (seed, epoch), never on how many epochs
    ran earlier in the same process.  Feeds and fetches go by name, so they
    work on any instance.
    """

    def __init__(self, params):
        """Builds placeholders, model, train op and savers.

        Args:
          params: the model's parameter dict (see `awd_lm.presets`).
        """
        graph = tf.Graph()
        with graph.as_default():
            inputs = tf.placeholder(tf.int32, [None, None], "inputs")
            targets = tf.placeholder(tf.int32, [None, None], "targets")
            training = tf.placeholder_with_default(False, [], "training")
            lr = tf.placeholder(tf.float32, [], "learning_rate")
            state = tuple(
                tf.nn.rnn_cell.LSTMStateTuple(
                    tf.placeholder(tf.float32, [None, n], "c%d" % i),
                    tf.placeholder(tf.float32, [None, n], "h%d" % i))
                for i, n in enumerate(model.layer_sizes(params)))
            features = {"inputs": inputs, "targets": targets,
                        "state": state}
            quant = bool(params.get("quant"))
            # quant_delay counts the steps of the quantization-aware phase.
            step = tf.train.get_or_create_global_step() if quant else None
            out = model.build_lm(features, training, params)
            # What a float checkpoint of the same model holds: the model's
            # own variables (no optimizer state, no range, no step).
            warm_vars = [v for v in tf.global_variables()
                         if v.op.name.startswith("lm/")
                         and "/quant/" not in v.op.name]
            ranges = model.quant_range_variables(out.cells)
            train_op, self.optimizer = model.build_train_op(out.loss, lr,
                                                            params, step)
            self.ntasgd = hasattr(self.optimizer, "averaging")
            init = tf.global_variables_initializer()
            self.saver_defs = [tf.train.Saver(max_to_keep=n).as_saver_def()
                               for n in (2, 1)]
            if quant:
                self.saver_defs.append(tf.train.Saver(warm_vars)
                                       .as_saver_def())
            self.range_tags = ["%s/%s" % (tag, end) for tag, _, _ in ranges
                               for end in ("min", "max")]
            self.range_values = tf.stack(
                [v.read_value() for _, lo, hi in ranges for v in (lo, hi)]
            ).name if ranges else None
            self.sparsity = None
            if params.get("sparsity"):
                report = sparse_report.sparsity_report(summaries=False)
                self.sparsity = {"global": report["global"].name,
                                 "layers": collections.OrderedDict(
                                     (k, v.name) for k, v in
                                     report["layers"].items())}
            self.meta_graph = tf.train.export_meta_graph()
        self.inputs, self.targets = inputs.name, targets.name
        self.training, self.lr = training.name, lr.name
        self.xent, self.train_op, self.init = out.xent.name, train_op.name, \
            init.name
        self.state = [t.name for s in state for t in s]
        self.final_state = [t.name for s in out.final_state for t in s]
        self.state_sizes = [t.shape[1].value for s in state for t in s]
        self.averaging = (self.optimizer.averaging.name if self.ntasgd
                          else None)

    def instance(self, seed):
        """(tf.Graph, last-epoch Saver, best Saver, warm-start Saver or None)
        with reseeded random ops; the warm-start Saver (quantized models)
        restores a float checkpoint's model variables."""
        meta = tf.MetaGraphDef()
        meta.CopyFrom(self.meta_graph)
        for node in meta.graph_def.node:
            if "seed" in node.attr and "seed2" in node.attr:
                node.attr["seed"].i = seed
        graph = tf.Graph()
        with graph.as_default():
            tf.train.import_meta_graph(meta)
            savers = [tf.train.Saver(saver_def=d) for d in self.saver_defs]
        graph.finalize()
        return graph, savers[0], savers[1], (savers[2] if len(savers) > 2
                                             else None)

    def quant_ranges(self, sess):
        """{'<layer>/<cell>/<tensor>/min|max': value} of a quantized model's
        learned ranges ({} for a float model)."""
        if self.range_values is None:
            return {}
        return dict(zip(self.range_tags, sess.run(self.range_values).tolist()))

    def zero_state(self, batch):
        """Numpy zeros for every state placeholder."""
        return [np.zeros((batch, n), np.float32) for n in self.state_sizes]

    def feed(self, x, y, state, extra=None):
        """Feed dict for inputs, targets and the flat list of state arrays."""
        feed = {self.inputs: x, self.targets: y}
        feed.update(zip(self.state, state))
        feed.update(extra or {})
        return feed


def session_config(threads):
    """ConfigProto with `threads` intra-op threads (0: TensorFlow's choice)."""
    return tf.ConfigProto(intra_op_parallelism_threads=threads,
                          inter_op_parallelism_threads=min(threads, 2))


def window(stream, start, n):
    """(inputs, targets) of the BPTT window [start, start + n) of a stream."""
    return stream[:, start:start + n], stream[:, start + 1:start + n + 1]


def evaluate(sess, g, stream, bptt):
    """Mean cross-entropy (nats/token) of a batchified stream, state carried.

    Args:
      sess: session of `g`.
      g: Graph.
      stream: int32 [batch, length] from `data.batchify`.
      bptt: window length.
    Returns:
      float.
    """
    state = g.zero_state(stream.shape[0])
    total, count = 0.0, 0
    fetches = [g.xent] + g.final_state
    for start, n in data.bptt_windows(stream.shape[1] - 1, bptt):
        res = sess.run(fetches, g.feed(*window(stream, start, n),
                                       state=state))
        total += res[0] * n
        count += n
        state = res[1:]
    return total / count


def train_epoch(sess, g, stream, params, epoch, progress=None):
    """One pass of stateful truncated BPTT over the training stream.

    The window lengths come from a generator seeded by (seed, epoch), and
    the learning rate of a window is ``lr * length / bptt``.

    Returns:
      (mean training cross-entropy, tokens per second).
    """
    rng = np.random.RandomState([params["seed"], epoch])
    windows = data.bptt_windows(stream.shape[1] - 1, params["bptt"], rng,
                                variable=params["variable_bptt"])
    state = g.zero_state(stream.shape[0])
    fetches = [g.train_op, g.xent] + g.final_state
    total, count, start_time = 0.0, 0, time.time()
    bar = progress(total=stream.size, desc="epoch %d" % epoch) \
        if progress else None
    for start, n in windows:
        lr = params["lr"] * n / float(params["bptt"])
        res = sess.run(fetches, g.feed(*window(stream, start, n),
                                       state=state,
                                       extra={g.lr: lr, g.training: True}))
        if not np.isfinite(res[1]):
            raise FloatingPointError("training loss is %r at epoch %d; lower "
                                     "--lr or --clip" % (res[1], epoch))
        total += res[1] * n
        count += n
        state = res[2:]
        if bar is not None:
            rate = count * stream.shape[0] / max(time.time() - start_time,
                                                 1e-9)
            bar.update(n * stream.shape[0])
            bar.set_postfix(tok_s="%.0f" % rate, loss="%.3f" % res[1],
                            ppl="%.1f" % ppl(res[1]))
    if bar is not None:
        bar.close()
    elapsed = max(time.time() - start_time, 1e-9)
    return total / count, count * stream.shape[0] / elapsed


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _scalars(writer, step, **values):
    writer.add_summary(tf.Summary(value=[
        tf.Summary.Value(tag=k, simple_value=float(v))
        for k, v in sorted(values.items())]), step)
    writer.flush()


def ppl(loss):
    """Perplexity of a mean cross-entropy in nats."""
    return float(math.exp(min(loss, 700)))


def fresh_state(params):
    """The loop's Python-side state before epoch 1."""
    return {"epoch": 0, "best_valid": None, "best_epoch": 0,
            "since_best": 0, "val_history": [], "averaging_epoch": None,
            "epochs": [], "train_seconds": 0.0, "done": False,
            "params": params}


def stop_reason(state, params):
    """Why training stops after the last finished epoch, or None.

    The rule, the same for every model: stop when validation has not
    improved for `patience` epochs, or after `max_epochs`.
    """
    if state["since_best"] >= params["patience"]:
        return "no improvement for %d epochs" % params["patience"]
    if state["epoch"] >= params["max_epochs"]:
        return "max epochs (%d)" % params["max_epochs"]
    return None


def label(params):
    """A model's name in logs and tables: 'awd', or 'awd+q' quantized."""
    return params["model"] + ("+q" if params.get("quant") else "")


def best_checkpoint(run_dir):
    """Prefix of the best-validation checkpoint `run` keeps in run_dir."""
    return os.path.join(run_dir, "best", "model.ckpt")


def run(corpus, params, run_dir, resume=False, log=print, progress=None,
        threads=0, extra=None, init_from=None):
    """Trains one model until the stopping rule, then scores its best checkpoint.

    Args:
      corpus: data.Corpus.
      params: full parameter dict (`awd_lm.presets.params_for`).
      run_dir: directory for checkpoints (last/, best/), TensorBoard events,
        state.json and summary.json.
      resume: continue from run_dir's state.json if present; otherwise the
        files of an earlier run there (last/, best/, state.json,
        summary.json, events) are deleted first, and nothing else.
      log: callable printing one line.
      progress: None or a tqdm-like class for per-epoch progress bars.
      threads: intra-op threads (0 lets TensorFlow choose).
      extra: dict merged into the summary (e.g. the corpus floor).
      init_from: checkpoint prefix of a float run of the same model (e.g.
        `best_checkpoint(float_run_dir)`) whose model variables start a
        quantized run (params['quant']); optimizer state, ranges and the
        global step start fresh.  Epoch 1 of a resumed run starts from it
        again, so resume stays exact.
    Returns:
      the summary dict (also written to run_dir/summary.json).
    """
    params = dict(params, vocab_size=len(corpus.vocab))
    if init_from is not None and not params.get("quant"):
        raise ValueError("init_from: only a quantized run (params['quant']) "
                         "starts from a float checkpoint, got %r" % init_from)
    if params.get("sparsity") and params.get("sparsity_weight") is None:
        # The KL / L0 term is a sum over weights; the data term a mean
        # over tokens: weigh by 1 / tokens (the ELBO per token).
        params["sparsity_weight"] = 1.0 / len(corpus.train)
    state_path = os.path.join(run_dir, STATE_FILE)
    if resume and os.path.exists(state_path):
        with open(state_path) as f:
            state = json.load(f)
        # Only max_epochs may change: it extends or shortens a run (a
        # quantized run's max_epochs is its quant_epochs).
        changed = sorted(k for k in set(params) | set(state["params"])
                         if params.get(k) != state["params"].get(k)
                         and k not in ("max_epochs", "quant_epochs"))
        if changed:
            raise ValueError("resume: %s was made with different parameters "
                             "(%s)" % (run_dir, ", ".join(changed)))
        if state["params"]["max_epochs"] != params["max_epochs"]:
            state["params"]["max_epochs"] = params["max_epochs"]
            if state["done"] and stop_reason(state, params) is None:
                state["done"] = False  # extended past its old maximum
        log("resuming %s after epoch %d" % (run_dir, state["epoch"]))
    else:
        _clear_run(run_dir)
        state = fresh_state(params)
    os.makedirs(run_dir, exist_ok=True)
    train = data.batchify(corpus.train, params["batch_size"])
    valid = data.batchify(corpus.valid, params["eval_batch_size"])
    test = data.batchify(corpus.test, params["eval_batch_size"])
    writer = tf.summary.FileWriter(run_dir)
    last_prefix = os.path.join(run_dir, "last", "model.ckpt")
    best_prefix = best_checkpoint(run_dir)
    config = session_config(threads)
    name = label(params)

    if state["epoch"] == 0 and not state["done"]:
        log("%-7s | %5s | %9s | %9s | %6s | %7s | %s" % (
            name, "epoch", "train ppl", "valid ppl", "tok/s", "seconds",
            "note"))
    g = Graph(params)
    while not state["done"] and stop_reason(state, params) is None:
        epoch = state["epoch"] + 1
        start = time.time()
        graph, last_saver, best_saver, warm_saver = g.instance(
            params["seed"] * 1009 + epoch)
        with tf.Session(graph=graph, config=config) as sess:
            if epoch == 1:
                sess.run(g.init)
                if init_from is not None:
                    warm_saver.restore(sess, init_from)
            else:
                # The checkpoint of the last finished epoch by name: a kill
                # during a later save may have moved "latest" already.
                last_saver.restore(sess, "%s-%d" % (last_prefix,
                                                      epoch - 1))
            if g.averaging is not None:
                g.optimizer.set_history(state["val_history"])
            train_loss, tok_s = train_epoch(sess, g, train, params, epoch,
                                            progress)
            averaging = bool(g.averaging is not None
                             and sess.run(g.averaging))
            note = []
            if averaging:
                with g.optimizer.averaged_weights(sess):
                    valid_loss = evaluate(sess, g, valid, params["bptt"])
                    best = _is_best(state, valid_loss)
                    if best:
                        best_saver.save(sess, best_prefix)
            else:
                valid_loss = evaluate(sess, g, valid, params["bptt"])
                best = _is_best(state, valid_loss)
                if best:
                    best_saver.save(sess, best_prefix)
                if g.averaging is not None and g.optimizer.observe(
                        sess, valid_loss):
                    state["averaging_epoch"] = epoch
                    note.append("averaging starts")
            if g.averaging is not None:
                state["val_history"] = list(g.optimizer.history)
            else:
                state["val_history"].append(valid_loss)
            if best:
                state.update(best_valid=valid_loss, best_epoch=epoch,
                             since_best=0)
                note.insert(0, "best")
            else:
                state["since_best"] += 1
            seconds = time.time() - start
            record = {"epoch": epoch, "train_loss": train_loss,
                      "valid_loss": valid_loss, "train_ppl": ppl(train_loss),
                      "valid_ppl": ppl(valid_loss), "tokens_per_s": tok_s,
                      "seconds": seconds, "averaged": averaging,
                      "lr": params["lr"]}
            state["epochs"].append(record)
            if g.sparsity:
                record["sparsity"] = float(sess.run(g.sparsity["global"]))
            ranges = g.quant_ranges(sess)
            state["epoch"] = epoch
            state["train_seconds"] += seconds
            # Checkpoint first, state second: a kill in between redoes the
            # epoch from the previous checkpoint, which is still consistent.
            # A Saver per epoch: tell it the kept one so max_to_keep holds.
            last_saver.recover_last_checkpoints(
                ["%s-%d" % (last_prefix, e) for e in (epoch - 1,) if e > 0])
            last_saver.save(sess, last_prefix, global_step=epoch)
        _write_json(state_path, state)
        _scalars(writer, epoch, train_loss=train_loss, valid_loss=valid_loss,
                 train_ppl=ppl(train_loss), valid_ppl=ppl(valid_loss),
                 learning_rate=params["lr"], averaging=float(averaging),
                 tokens_per_s=tok_s, **({"sparsity": record["sparsity"]}
                                        if g.sparsity else {}))
        if ranges:  # the learned ranges after the epoch, min and max
            _scalars(writer, epoch, **{"quant_range/" + k: v
                                       for k, v in ranges.items()})
        log("%-7s | %5d | %9.2f | %9.2f | %6.0f | %7.1f | %s" % (
            name, epoch, ppl(train_loss), ppl(valid_loss), tok_s, seconds,
            ", ".join(note)))

    if not state["done"]:
        state["stop_reason"] = stop_reason(state, params)
        graph, _, best_saver, _ = g.instance(params["seed"] * 1009)
        with tf.Session(graph=graph, config=config) as sess:
            best_saver.restore(sess, best_prefix)
            state["quant_ranges"] = g.quant_ranges(sess) or None
            state["test_loss"] = evaluate(sess, g, test, params["bptt"])
            state["best_valid_check"] = evaluate(sess, g, valid,
                                                 params["bptt"])
            if g.sparsity:
                values = sess.run(g.sparsity)
                state["sparsity_report"] = {
                    "global": float(values["global"]),
                    "layers": collections.OrderedDict(
                        (k, float(v)) for k, v in values["layers"].items())}
        state["done"] = True
        _write_json(state_path, state)
    writer.close()
    summary = {
        "model": name, "corpus": corpus.name, "params": params,
        "epochs": state["epochs"], "epochs_run": state["epoch"],
        "best_epoch": state["best_epoch"],
        "best_valid_ppl": ppl(state["best_valid"]),
        "test_ppl": ppl(state["test_loss"]),
        "stop_reason": state["stop_reason"],
        "averaging_epoch": state["averaging_epoch"],
        "train_seconds": state["train_seconds"],
        "unk_counts": corpus.unk_counts,
        "sparsity_report": state.get("sparsity_report"),
        "quant": bool(params.get("quant")), "init_from": init_from,
        "quant_ranges": state.get("quant_ranges"),
    }
    summary.update(extra or {})
    _write_json(os.path.join(run_dir, SUMMARY_FILE), summary)
    if summary["sparsity_report"]:
        log("%s sparsity of the best checkpoint:\n%s" % (
            name, sparse_report.format_report(summary["sparsity_report"])))
    log("%-7s | stopped after epoch %d (%s); best epoch %d: valid ppl %.2f, "
        "test ppl %.2f" % (name, state["epoch"], state["stop_reason"],
                           state["best_epoch"], summary["best_valid_ppl"],
                           summary["test_ppl"]))
    return summary


def _clear_run(run_dir):
    """Deletes what an earlier run wrote in run_dir, and nothing else."""
    if not os.path.isdir(run_dir):
        return
    for name in os.listdir(run_dir):
        path = os.path.join(run_dir, name)
        if name in ("last", "best") and os.path.isdir(path):
            shutil.rmtree(path)
        elif (name in (STATE_FILE, SUMMARY_FILE)
              or name.startswith("events.out.tfevents.")):
            os.remove(path)


def _is_best(state, valid_loss):
    return state["best_valid"] is None or valid_loss < state["best_valid"]


def plot_curves(summaries, path, floor=None):
    """PNG of validation perplexity per epoch, one line per model.

    Args:
      summaries: list of summary dicts from `run`.
      path: output .png path.
      floor: optional float, the source's perplexity, drawn as a line.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in summaries:
        ep = [r["epoch"] for r in s["epochs"]]
        ax.plot(ep, [r["valid_ppl"] for r in s["epochs"]], marker=".",
                label="%s (test %.1f)" % (s["model"], s["test_ppl"]))
    if floor:
        ax.axhline(floor, color="gray", linestyle="--",
                   label="source floor %.1f" % floor)
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation perplexity")
    ax.set_title(summaries[0]["corpus"] if summaries else "")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
