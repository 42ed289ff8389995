"""The training graph of one language model, and its reseeded copies.

`Graph` builds a model's training / evaluation graph once (with a
distillation teacher when ``distill_weight > 0``); each epoch of a run
(`train.Trainer`) runs in `Graph.instance`, a copy whose random ops are
reseeded from (seed, epoch), so that an epoch's dropout masks depend only
on those, never on how many epochs ran earlier in the same process:
what makes a resumed run exact.
"""
import collections

import numpy as np
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.awd_lm.graph import compression_ops, distill, model, ntasgd
from tf1_awd_sparse.awd_lm.graph.train_op import build_train_step
from tf1_awd_sparse.awd_lm.training import controller

__all__ = ["Graph"]


class Graph(object):
    """The training/evaluation graph of one model, built once (with
    ``params.distill.distill_weight > 0`` also its teacher, see `_distil`).

    Each epoch runs in `instance(seed)`: a copy of this graph (through its
    MetaGraphDef) whose random ops are reseeded from `seed`, so an epoch's
    dropout masks depend only on (seed, epoch), never on how many epochs
    ran earlier in the same process.  Feeds and fetches go by name, so they
    work on any instance.
    """

    def __init__(self, params, warm_names=None):
        """Builds placeholders, model, train op and savers.

        Args:
          params: the model's `config.params.Params` (the run's, checked
            by `train.Trainer`).
          warm_names: names of the variables a warm-start checkpoint holds
            (`train.Trainer`'s ``init_from``); the warm-start Saver restores
            the model's variables among them. None: no warm start.
        """
        graph = tf.Graph()
        with graph.as_default():
            # A graph-level seed gives every random op its own stream
            # (seed2); `instance` then rewrites only the op seed per epoch.
            # Without it every op would draw the same sequence (the layers'
            # dropout masks alike).
            tf.set_random_seed(params.optimization.seed)
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
            # Steps of this run: quant_delay, the magnitude-pruning
            # schedule and the sparsity-loss ramp count them.
            step = (tf.train.get_or_create_global_step()
                    if compression_ops.needs_global_step(params) else None)
            out = model.build_lm(features, training, params)
            loss = self._distil(out, features, params)
            # A warm start restores the model's own variables that the
            # checkpoint holds (never optimizer state, ranges or the step).
            quant_vars = set(mask_placement.quant_variables())
            warm_vars = [v for v in tf.global_variables()
                         if v.op.name.startswith("lm/")
                         and not ntasgd.is_slot_name(v.op.name)
                         and v not in quant_vars
                         and v.op.name in set(warm_names or ())]
            ranges = compression_ops.quant_range_variables()
            train_op, self.optimizer = build_train_step(loss, lr,
                                                        params, step)
            self.ntasgd = hasattr(self.optimizer, "averaging")
            self.controller = controller.controller_ops(params)
            init = tf.group(tf.global_variables_initializer(),
                            tf.local_variables_initializer())
            self.saver_defs = [tf.train.Saver(max_to_keep=n).as_saver_def()
                               for n in (2, 1)]
            if warm_names is not None:
                self.saver_defs.append(tf.train.Saver(warm_vars)
                                       .as_saver_def())
            self.range_tags = ["%s/%s" % (tag, end) for tag, _, _ in ranges
                               for end in ("min", "max")]
            self.range_values = tf.stack(
                [v.read_value() for _, lo, hi in ranges for v in (lo, hi)]
            ).name if ranges else None
            self.sparsity = None
            report = compression_ops.sparsity_report(params)
            if report is not None:
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
        self.state_sizes = [dimension_value(t.shape[1])
                            for s in state for t in s]
        self.loss, self.logits = loss.name, out.logits.name
        self.averaging = (self.optimizer.averaging.name if self.ntasgd
                          else None)

    def _distil(self, out, features, params):
        """The training loss: ``out.loss`` and, with ``params.distill.
        distill_weight > 0``, the weighted distillation term of a
        teacher built here (`awd_lm.graph.distill`) on the same windows.
        Sets the names of the teacher's state placeholders (``teacher_state``,
        carried by `epochs.train_epoch`), final state, logits, the term and
        the KL (empty / None without a teacher) and the def of the Saver that
        restores it from ``params.stage.distill_from`` every epoch (it is not
        in the model's checkpoints). Evaluation fetches (``xent``,
        ``final_state``) never compute the teacher."""
        self.teacher_state, self.teacher_final_state = [], []
        self.teacher_logits = self.distill_term = self.distill_kl = None
        self.teacher_saver_def = None
        if not distill.enabled(params):
            return out.loss
        teacher = distill.build_teacher(features["inputs"],
                                        features["targets"], params)
        term, kl = distill.distill_terms(
            out.logits, teacher.logits, params.distill.distill_temperature)
        self.teacher_saver_def = tf.train.Saver(
            teacher.variables, name="teacher_saver").as_saver_def()
        self.teacher_state = [t.name for s in teacher.state for t in s]
        self.teacher_final_state = [t.name for s in teacher.final_state
                                    for t in s]
        self.teacher_logits = teacher.logits.name
        self.distill_term, self.distill_kl = term.name, kl.name
        return out.loss + params.distill.distill_weight * term

    def instance(self, seed):
        """(tf.Graph, last-epoch Saver, best Saver, warm-start Saver or None,
        teacher Saver or None) with reseeded random ops; the warm-start
        Saver (quantized models) restores a float checkpoint's model
        variables, the teacher Saver the teacher's (``distill_from``)."""
        meta = tf.MetaGraphDef()
        meta.CopyFrom(self.meta_graph)
        for node in meta.graph_def.node:
            if "seed" in node.attr and "seed2" in node.attr:
                node.attr["seed"].i = seed
        graph = tf.Graph()
        with graph.as_default():
            tf.train.import_meta_graph(meta)
            savers = [tf.train.Saver(saver_def=d) for d in self.saver_defs]
            teacher = (tf.train.Saver(saver_def=self.teacher_saver_def)
                       if self.teacher_saver_def is not None else None)
        graph.finalize()
        return graph, savers[0], savers[1], (savers[2] if len(savers) > 2
                                             else None), teacher

    def quant_ranges(self, sess):
        """{'<layer>/<cell>/<tensor>/min|max': value} of a quantized model's
        learned ranges ({} for a float model)."""
        if self.range_values is None:
            return {}
        return dict(zip(self.range_tags, sess.run(self.range_values).tolist()))

    def zero_state(self, batch, teacher=False):
        """Numpy zeros for every state placeholder (``teacher``: the
        teacher's, [] without one)."""
        if teacher and not self.teacher_state:
            return []
        return [np.zeros((batch, n), np.float32) for n in self.state_sizes]

    def feed(self, x, y, state, extra=None):
        """Feed dict for inputs, targets and the flat list of state arrays."""
        feed = {self.inputs: x, self.targets: y}
        feed.update(zip(self.state, state))
        feed.update(extra or {})
        return feed
