"""The AWD-LSTM language model as a reusable graph builder.

`build_lm(features, mode, params)` builds embedding -> N weight-dropped LSTM
layers -> tied softmax, with AWD-LSTM's regularization when
``params.run.model == 'awd'`` and none when it is ``'plain'``.  It is the
same code for the single-process training loop (`awd_lm.training.train`)
and for an Estimator ``model_fn``: it takes tensors and returns tensors,
and owns no session, placeholder or optimizer.  `build_train_op` adds the
clipped-gradient NT-ASGD / SGD step (`graph.train_op`), and
`graph.compression_ops` the pruning, sparsity and quantization ops beside
the forward pass.

``params`` is the model's configuration, a checked
`config.params.Params`: `build_lm` and `check_params` also take a dict of
its flat keys (`presets.params_for`'s), which they check once
(`takes_params`; a missing key takes its default, `presets.DEFAULTS`);
the other functions take the `Params` `build_lm` passes them.
"""
import collections

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.base.variable_names import relative_variable_names

from tf1_awd_sparse.layers import dropout
from tf1_awd_sparse.layers import weight_drop_lstm as weight_drop_lstm
from tf1_awd_sparse.layers.sparse import losses as sparse_losses
from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.base import control_flow
from tf1_awd_sparse.base.checks import (
    check_choice, check_tensor, check_training)
from tf1_awd_sparse.base.control_flow import smart_cond
from tf1_awd_sparse.awd_lm.config.params import takes_params
from tf1_awd_sparse.awd_lm.graph import losses, tables
# The table's builder lives in graph.tables; its old public name stays.
from tf1_awd_sparse.awd_lm.graph.tables import embedding_table  # noqa: F401
# The model's parameters are checked on the config floor, where modeldir
# checks a model directory's too.
from tf1_awd_sparse.awd_lm.config import presets
from tf1_awd_sparse.awd_lm.config.presets import (  # noqa: F401 (public)
    REQUIRED_PARAMS)
from tf1_awd_sparse.awd_lm.graph.compression_ops import (
    group_lasso_loss, sparsity_weight_scale)
from tf1_awd_sparse.ops import fake_quant as fq

__all__ = ["MODELS", "REQUIRED_PARAMS", "layer_sizes", "check_params",
           "build_lm", "embedding_table", "make_layer", "decoder_logits"]

MODELS = ("awd", "plain")

LMOutputs = collections.namedtuple("LMOutputs", [
    "logits", "xent", "loss", "ar", "tar", "weight_decay", "sparsity_loss",
    "initial_state", "final_state", "cells", "hidden"])
LMOutputs.__doc__ = """What `build_lm` returns.

Fields:
  logits: float32 [batch, time, vocab].
  xent: scalar, mean cross-entropy (nats per token) of the targets.
  loss: scalar, the training objective: xent + ar + tar + weight_decay.
  ar, tar, weight_decay: scalar regularization terms (0 for 'plain').
  sparsity_loss: the weighted KL (variational_dropout) or expected L0
    norm (l0) of the sparse embedding and cells; 0 without sparsity.
  initial_state, final_state: tuples, one LSTMStateTuple(c, h) per layer
    ([batch, units] each); feed final_state back as the next window's
    initial state for stateful truncated BPTT.
  cells: the WeightDropLSTMCell of each layer.
  hidden: float32 [batch, time, emb_size], the top layer's output after
    its dropout: the decoder's input (the continuous cache's keys).
"""

@takes_params()
def check_params(params):
    """The model's parameters checked: each value (`as_params`), the keys
    a model needs given (`REQUIRED_PARAMS`) and the rules between keys
    (`presets.check_model_params`).

    Args:
      params: a `config.params.Params` or a dict of its flat keys.

    Returns:
      the checked `Params`.

    Raises:
      ValueError: the first missing or invalid parameter, named.
    """
    return presets.check_model_params(params)


def layer_sizes(params):
    """Units of each LSTM layer; the last equals emb_size (tied decoder).

    Args:
      params: the model's `Params`; its ``model`` section.

    Returns:
      list of ``num_layers`` ints.
    """
    shape = params.model
    n = shape.num_layers
    return [shape.hidden_size] * (n - 1) + [shape.emb_size]


# tf.estimator.ModeKeys' values (TRAIN, EVAL, PREDICT), spelt out: the
# model builds on TF 2.16+ too, which has no tf.estimator.
_MODES = ("train", "eval", "infer")


def _training_flag(mode):
    """A Python bool or a scalar bool tensor from an Estimator mode or flag.

    Raises:
      ValueError: a string that is not a ``tf.estimator.ModeKeys`` value
        (e.g. 'training'), or a flag the library's rule rejects.
    """
    if isinstance(mode, str):
        return check_choice(mode, _MODES, "mode") == _MODES[0]
    return check_training(mode, "mode")


def _keep(rate, regularize):
    """The keep probability of a drop ``rate`` (1 without
    regularization)."""
    return 1.0 - rate if regularize else 1.0


# LSTMCell's weight variables, by their names inside the cell's scope
# (names kept for checkpoint compatibility with tf.nn.rnn_cell.LSTMCell).
# Weight decay covers these and nothing else a cell holds: not its
# DropConnect mask, not a sparse technique's log_sigma2 / log_alpha (L2
# would pull log_sigma2 = -10 towards 0, i.e. towards more noise), not its
# quantization ranges.
_CELL_WEIGHT_NAMES = ("kernel", "bias", "w_f_diag", "w_i_diag", "w_o_diag",
                      "projection/kernel")


def _cell_weights(cell):
    """The built cell's weight variables (see _CELL_WEIGHT_NAMES)."""
    variables = cell.weights
    return [v for v, name in zip(variables,
                                 relative_variable_names(variables))
            if name in _CELL_WEIGHT_NAMES]


@takes_params()
def build_lm(features, mode, params):
    """Builds the language model's forward pass and loss.

    The graph is built in four steps: embed (the word embedding and its
    dropout), stack (the LSTM layers with locked dropout between them),
    decode (the tied softmax and the cross-entropy) and penalties (AR, TAR,
    weight decay, the sparsity loss).

    Args:
      features: dict with
        'inputs': int32 [batch, time] word ids,
        'targets': int32 [batch, time] the next word of each input,
        'state' (optional): tuple of LSTMStateTuple(c, h), one per layer,
          the carried state; zeros when absent.
      mode: a `tf.estimator.ModeKeys` string (TRAIN regularizes) or a bool
        (Python or scalar tensor) saying whether this is training.
      params: a `config.params.Params` or a dict of its flat keys (a
        missing key takes its default, but for `REQUIRED_PARAMS`):
        vocab_size, emb_size, hidden_size, num_layers,
        model ('awd' or 'plain'); for 'awd' also the drop rates dropout
        (output), dropouth (between layers), dropouti (embedding output),
        dropoute (embedding rows), wdrop (recurrent weights), and
        alpha (AR), beta (TAR), wdecay (L2 on the weights: the embedding,
        each cell's kernel and bias, the softmax bias; never the sparse
        auxiliary or quantization-range variables); use_vd (masks
        in variables, see WeightDropLSTMCell); sparsity (None,
        'variational_dropout' or 'l0': sparse embedding lookups, tied
        decoder and cells from `sparse_layers`, embedding dropout off) with
        its loss weight sparsity_weight (e.g. 1 / training tokens);
        quant (True: the cells are built with is_quant=True, same
        weight variables plus their `quant/` range variables) with
        quant_delay (global steps computed in float while the ranges are
        learned; > 0 needs a global step in the graph), weight_bits and
        activation_bits.  Random ops take their seeds from the graph-level
        seed (`tf.set_random_seed`).
    Returns:
      LMOutputs.
    Raises:
      ValueError: bad params (names the key: a missing required one, a
        bad value, a key that is no parameter) or mode; features whose
        static shapes do not fit (named, e.g. ``features['state'] must
        hold one LSTMStateTuple per layer (2), got 1``): inputs / targets
        not [batch, time] of one shape, a zero-size batch or window (the
        mean cross-entropy of 0 tokens is undefined: refused, never NaN),
        a state of another batch or width than its layer. Shapes unknown
        while building are asserted when the graph runs
        (``InvalidArgumentError`` with the same names; dropped inside XLA).
    """
    _compat.require_graph_mode("build_lm")
    params = presets.check_model_params(params)
    training = _training_flag(mode)
    awd = params.run.model == "awd"
    features, state_parts = _check_features(features, params)
    before = set(features["inputs"].consumers())
    with tf.variable_scope("lm", reuse=tf.AUTO_REUSE):
        embedding, table, sparse, x = _embed(features["inputs"], training,
                                             params, awd)
        cells, initial, final, raw, x = _stack(
            x, features["inputs"], features.get("state"), training, params,
            awd)
        bias, logits, xent = _decode(x, table, sparse, features,
                                     training, params)
    with tf.variable_scope("lm", reuse=True):
        low_rank = list(tables.table_low_rank(params))
    weights = [embedding] + low_rank + [
        v for c in cells for v in _cell_weights(c)] + [bias]
    ar, tar, wd, sparsity_loss = _penalties(x, raw, weights, training,
                                            params, awd)
    loss = xent + ar + tar + wd + sparsity_loss
    _assert_features(features, state_parts, [
        op for op in features["inputs"].consumers() if op not in before])
    return LMOutputs(logits, xent, loss, ar, tar, wd, sparsity_loss,
                     tuple(initial), tuple(final), cells, x)


def _check_features(features, params):
    """Checks the static shapes of ``features`` (see `build_lm`); builds no
    op.

    Returns:
      (features with inputs and targets as tensors, [((layer, 'c' or 'h'),
      state tensor, units)] for `_assert_features`).
    """
    inputs = check_tensor(features["inputs"], "features['inputs']",
                          kind="int", rank=2)
    targets = check_tensor(features["targets"], "features['targets']",
                           kind="int", rank=2)
    if not inputs.shape.is_compatible_with(targets.shape):
        raise ValueError("features['targets'] must have the shape of "
                         "features['inputs'] %s, got %s"
                         % (inputs.shape, targets.shape))
    dims = inputs.shape.merge_with(targets.shape)
    if dims.ndims is not None and 0 in dims.as_list():
        raise ValueError("features['inputs'] must have at least one row and "
                         "one step (the mean cross-entropy of 0 tokens is "
                         "undefined), got shape %s" % inputs.shape)
    state = features.get("state")
    sizes = layer_sizes(params)
    if state is not None and len(state) != len(sizes):
        raise ValueError("features['state'] must hold one LSTMStateTuple per "
                         "layer (%d, params['num_layers']), got %d"
                         % (len(sizes), len(state)))
    batch = _compat.dimension_value(inputs.shape[0])
    parts = []
    for i, units in enumerate(sizes if state is not None else ()):
        for part, tensor in zip("ch", state[i]):
            name = "features['state'][%d].%s" % (i, part)
            tensor = check_tensor(tensor, name, kind="float", rank=2)
            rows = tensor.shape.as_list() if tensor.shape.ndims else [None] * 2
            if rows[1] not in (None, units) or None not in (rows[0], batch) \
                    and rows[0] != batch:
                raise ValueError(
                    "%s must have shape [%s, %d] (the batch of "
                    "features['inputs'] and layer %d's units), got %s" % (
                        name, batch or "batch", units, i, tensor.shape))
            parts.append(((i, part), tensor, units))
    return dict(features, inputs=inputs, targets=targets), parts


def _assert_features(features, parts, consumers):
    """The run-time checks of the shapes `_check_features` could not check
    while building, made control inputs of the ops the model built on
    ``features['inputs']`` (``consumers``: those ops), which everything
    the model computes waits for. Built after the model, so that the model's
    ops (and the op seeds TensorFlow derives from their ids, i.e. its
    random streams) are those of a graph without checks. No quotes in the
    messages: TensorFlow prints them escaped."""
    inputs, targets = features["inputs"], features["targets"]
    graph = inputs.graph
    context = graph._get_control_flow_context()  # pylint: disable=W0212
    # Ops in another control-flow context cannot wait for these (none,
    # unless the caller feeds inputs built inside a loop or cond).
    consumers = [op for op in consumers
                 if op._get_control_flow_context() is context]  # noqa: W0212
    if control_flow.in_xla_context() or not consumers:
        return
    checks = [tf.debugging.assert_positive(
        tf.size(inputs), message="features.inputs must have at least one "
        "row and one step (the mean cross-entropy of 0 tokens is "
        "undefined)"), tf.debugging.assert_equal(
            tf.shape(inputs), tf.shape(targets), message="features.targets "
            "must have the shape of features.inputs")]
    for (i, part), tensor, units in parts:
        checks.append(tf.debugging.assert_equal(
            tf.shape(tensor), tf.stack([tf.shape(inputs)[0], units]),
            message="features.state[%d].%s must have shape [batch of "
            "features.inputs, %d]" % (i, part, units)))
    checked = tf.group(*checks, name="check_features")
    for op in consumers:
        # TensorFlow has no public way to add a control input to a built op.
        op._add_control_input(checked)  # pylint: disable=protected-access


def _embed(inputs, training, params, awd):
    """The embedding variable, the table used (`tables.embedding_table`), the
    sparse technique and (embedding, aux) pair (or None) and the embedded
    inputs after embedding dropout (dropoute) and locked dropout
    (dropouti): [batch, time, emb_size]."""
    embedding, table = tables.embedding_table(params, training)
    sparse = _sparse_embedding(embedding, params.sparse.sparsity)
    if sparse is not None:
        technique, pair = sparse
        x = smart_cond(
            training,
            lambda: technique.nn.embedding_lookup_train(pair, inputs),
            lambda: technique.nn.embedding_lookup_eval(pair, inputs))
    elif awd and params.regularization.dropoute > 0:
        x = dropout.embedding_dropout(
            table, inputs, 1.0 - params.regularization.dropoute,
            training=training)
    else:
        x = tf.nn.embedding_lookup(table, inputs)
    return embedding, table, sparse, _locked(
        x, _keep(params.regularization.dropouti, awd), training)


def make_layer(i, units, training, params):
    """Layer ``i`` of the stack: a ``WeightDropLSTM`` (cell name
    ``lstm_<i>``; its variables are those of a ``WeightDropLSTMCell`` under
    ``dynamic_rnn`` in scope ``layer_<i>``) with the model's DropConnect,
    held-mask, sparsity, pruning-mask and quantization settings.

    Args:
      i: the layer's index.
      units: its width.
      training: Python bool or scalar bool tensor.
      params: the model's `Params`.

    Returns:
      a ``WeightDropLSTM``.
    """
    awd = params.run.model == "awd"
    return weight_drop_lstm.WeightDropLSTM(
        units, weight_drop_kr=_keep(params.regularization.wdrop, awd),
        use_vd=bool(params.stage.use_vd),
        sparsity=params.sparse.sparsity, is_train=training,
        pruning_mask=bool(params.prune.pruning), name="lstm_%d" % i,
        **_quant_args(params))


def _stack(x, inputs, state_in, training, params, awd):
    """The LSTM layers over x, each a `make_layer` (the whole-sequence
    layer; quantized cells run under dynamic_rnn) in scope layer_<i>, with
    locked dropout after each (dropouth between layers, dropout after the
    last).

    Returns:
      (cells, initial states, final states, the last layer's output before
      its dropout, the output after it).
    """
    batch = tf.shape(inputs)[0]
    sizes = layer_sizes(params)
    cells, initial, final = [], [], []
    raw = x
    for i, units in enumerate(sizes):
        layer = make_layer(i, units, training, params)
        cells.append(layer.cell)
        s0 = (state_in[i] if state_in is not None
              else layer.cell.zero_state(batch, tf.float32))
        initial.append(s0)
        raw, s1 = layer(x, initial_state=s0, scope="layer_%d" % i)
        final.append(s1)
        last = i == len(sizes) - 1
        x = _locked(raw, _keep(
            params.regularization.dropout if last
            else params.regularization.dropouth, awd), training)
    return cells, initial, final, raw, x


def decoder_logits(flat, table, params, training, sparse=None):
    """The tied decoder on ``flat`` ``[n, emb_size]``: ``flat @ table^T +
    softmax_bias``, ``[n, vocab]``; with ``params.quantization.quant`` the
    logits are fake-quantized on a learned range
    (``lm/decoder/quant/logits/min|max``, an EMA once per run as the
    cells' ranges), which is what the 8-bit TFLite model outputs. Call
    inside the ``lm`` variable scope.

    Args:
      flat: float32 ``[n, emb_size]``.
      table: the table of `embedding_table`.
      params: the model's `Params`.
      training: Python bool or scalar bool tensor.
      sparse: None, or the sparse technique and (embedding, aux) pair.

    Returns:
      ``(softmax_bias variable, logits)``.
    """
    bias = tf.get_variable("softmax_bias", [params.model.vocab_size],
                           initializer=tf.zeros_initializer())
    if sparse is not None:
        technique, pair = sparse
        decoded = smart_cond(
            training,
            lambda: technique.nn.matmul_train(flat, pair, transpose_b=True),
            lambda: technique.nn.matmul_eval(flat, pair, transpose_b=True))
    else:
        decoded = tf.matmul(flat, table, transpose_b=True)
    logits = tf.nn.bias_add(decoded, bias)
    if params.quantization.quant:
        logits = _quantized_logits(logits, params, training)
    return bias, logits


def _quantized_logits(logits, params, training):
    """Logits fake-quantized on a learned (EMA) range."""
    ranges = fq.RangeSet(["logits"])
    with tf.variable_scope("decoder"):
        ranges.create_variables(fq.range_variable_creator(tf.get_variable))
    run = ranges.run_ranges(training)["logits"]
    bits = int(params.quantization.activation_bits)
    weight = fq.observe_weight(training)
    if weight is not None:
        with tf.control_dependencies(
                [ranges.observe({"logits": logits}, weight=weight)]):
            logits = tf.identity(logits)
    return tables.maybe_quantized(
        params, training, lambda: fq.fake_quant(logits, run[0], run[1], bits),
        logits)


def _decode(x, table, sparse, features, training, params):
    """The tied decoder: (softmax bias variable, logits [batch, time,
    vocab], mean cross-entropy of the targets)."""
    vocab, emb_size = params.model.vocab_size, params.model.emb_size
    flat = tf.reshape(x, [-1, emb_size])
    bias, logits = decoder_logits(flat, table, params, training, sparse)
    xent = tf.reduce_mean(losses.sparse_cross_entropy(
        logits, tf.reshape(features["targets"], [-1])))
    logits = tf.reshape(logits, tf.concat([tf.shape(features["inputs"]),
                                           [vocab]], 0))
    return bias, logits, xent


def _penalties(x, raw, weights, training, params, awd):
    """(AR, TAR, weight decay, sparsity loss): scalars, 0 where off. AR and
    TAR are training-time penalties; weight decay covers ``weights``
    only; the sparsity loss is the KL / L0 loss plus, while magnitude
    pruning runs, the group lasso (`group_lasso_loss`)."""
    zero = tf.constant(0.0)
    ar = tar = wd = zero
    regularization, sparse = params.regularization, params.sparse
    if awd:
        # build_lm refuses 0 tokens (`_assert_features`): the plain mean.
        ar = losses.activation_regularization(
            x, regularization.alpha, None, None, nonempty=True)
        tar = losses.temporal_activation_regularization(
            raw, regularization.beta)
        if regularization.wdecay > 0:
            wd = regularization.wdecay * tf.add_n(
                [tf.nn.l2_loss(v) for v in weights])
        ar, tar = (smart_cond(training, lambda t=t: t, lambda: zero)
                   for t in (ar, tar))
    sparsity_loss = zero
    if sparse.sparsity:
        penalty = (sparse_losses.kl_loss if sparse.sparsity
                   == "variational_dropout" else sparse_losses.l0_loss)
        # Linear ramp of the weight from 0 over sparsity_ramp_steps steps.
        ramp = int(sparse.sparsity_ramp_steps)
        sparsity_loss = penalty(weight=sparse.sparsity_weight,
                                end_step=ramp, summaries=False)
        if params.stage.sparsity_controller:
            # The controller's factor on the weight (`train`, per epoch).
            sparsity_loss = sparsity_loss * sparsity_weight_scale()
    lasso = group_lasso_loss(params)
    if lasso is not None:
        sparsity_loss = sparsity_loss + lasso
    return ar, tar, wd, sparsity_loss


def _sparse_embedding(embedding, sparsity):
    """(technique, (theta, aux)) for a sparse embedding, or None.

    The auxiliary variable (log_sigma2 or log_alpha), its initial value and
    the collection the pair joins are the ones WeightDropLSTMCell uses for
    its kernel, so the sparse_layers losses and report cover both.
    """
    if sparsity is None:
        return None
    technique = techniques.get(sparsity, "params['sparsity']")
    name = technique.aux_variable_name(embedding.op.name).rsplit("/", 1)[-1]
    aux = tf.get_variable(name, embedding.shape,
                          initializer=technique.make_initializer())
    pair = (embedding, aux)
    techniques.register_pair(technique, pair)
    return technique, pair


def _quant_args(params):
    """WeightDropLSTMCell quantization arguments from params (none: float)."""
    quantization = params.quantization
    if not quantization.quant:
        return {}
    return {"is_quant": True,
            "quant_delay": int(quantization.quant_delay),
            "weight_bits": int(quantization.weight_bits),
            "activation_bits": int(quantization.activation_bits)}


def _locked(x, keep, training):
    """Locked (variational) dropout over time, skipped when keep is 1."""
    if keep >= 1.0:
        return x
    return dropout.locked_dropout(x, keep, training=training,
                                              time_axis=1)
