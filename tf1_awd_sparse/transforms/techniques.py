"""The sparse techniques, one registry entry each, and the pair registry.

A sparse weight is a pair `(theta, aux)`: the weights and an auxiliary
variable of the same shape (`log_sigma2` for sparse variational dropout,
`log_alpha` for L0 hard-concrete gates). Everything the library needs to
know about a technique is its entry here (`get(name)`): the auxiliary
variable's name and initial value, the naming rule that pairs them in a
checkpoint, the stateless ops, the option names of layers and cells, the
zero rule of the reports, the penalty of the losses and the numpy
evaluation weights used by `sparse_layers.strip`.

Pairs are registered per graph with `register_pair` and read back with
`registered_pairs`; the layers do it when they are built, and the losses,
reports and strip read them. A registered pair is stored as the names of
its two tensors / variables (a `bytes_list` collection), so it survives
`tf.train.export_meta_graph` / `import_meta_graph` and `Saver.save` has
nothing it cannot serialize.
"""
import json

from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.ops.sparse import common
from tf1_awd_sparse.ops.sparse import l0_regularization as l0_nn
from tf1_awd_sparse.ops.sparse import variational_dropout as vd_nn
from tf1_awd_sparse.base.checks import ParamsError, check_graph
from tf1_awd_sparse.base.scalar_checks import check_choice
from tf1_awd_sparse.base.control_flow import run_mode

__all__ = ["Technique", "NAMES", "get", "for_collection", "register_pair",
           "registered_pairs", "eval_options"]

# Checkpoint naming of a pair: `<scope>/kernel` goes with `<scope>/<aux>`
# (layers and cells), any other `<name>` with `<name>_<aux>` (embeddings,
# hand-made pairs).
_KERNEL_SUFFIX = "/kernel"


class Technique(object):
    """One sparsification technique (abstract; use `get(name)`).

    Attributes:
      name: registry name, 'variational_dropout' or 'l0'.
      short_name: 'vd' or 'l0', as in the `vd_pairs=` / `l0_pairs=`
        arguments of the checkpoint functions.
      aux_name: name of the auxiliary variable, 'log_sigma2' or
        'log_alpha' (a layer's `<scope>/<aux_name>`).
      collection: graph collection key of the registered pairs.
      nn: the module of stateless ops on `(theta, aux)`: `train_weights`,
        `eval_weights`, `matmul_train/eval`, `broadcast_matmul_train/eval`,
        `conv2d_train/eval`, `embedding_lookup_train/eval`.
      train_options: names of the keyword options layers and cells pass to
        the `nn` train ops (and `train_weights`).
      eval_options: the same for the eval ops, `eval_weights`, `zero_mask`
        and `numpy_eval_weights`.
      penalty_options: the keyword options of `penalty`.
    """

    name = short_name = aux_name = collection = nn = None
    train_options = eval_options = penalty_options = ()

    def make_initializer(self):
        """A new initializer of the auxiliary variable (its default)."""
        raise NotImplementedError

    def zero_mask(self, theta, aux, math=common.TF_MATH, **eval_options):
        """Boolean mask of the weights that are zero at evaluation.

        Args:
          theta, aux: tensors (or numpy arrays with `math=NUMPY_MATH`) of
            one shape.
          math: `common.TF_MATH` or `common.NUMPY_MATH`.
          **eval_options: the technique's `eval_options`.

        Returns:
          bool tensor/array of theta's shape.
        """
        raise NotImplementedError

    def keep_score(self, theta, aux, math=common.TF_MATH):
        """How strongly each weight is kept: the quantity a final cut at an
        exact fraction of zeros thresholds (higher: kept longer).
        Variational dropout: ``-log alpha`` (unclipped); L0: the logit of
        the gate's probability of being non-zero
        (`common.hard_concrete_nonzero_logit`, default beta / gamma / zeta).

        Args:
          theta, aux: tensors (or numpy arrays with `math=NUMPY_MATH`) of
            one shape.
          math: `common.TF_MATH` or `common.NUMPY_MATH`.

        Returns:
          float tensor/array of theta's shape.
        """
        raise NotImplementedError

    def numpy_eval_weights(self, theta, aux, **eval_options):
        """The evaluation weights of numpy arrays (what `nn.eval_weights`
        computes in a graph).

        Args:
          theta, aux: numpy arrays of one shape.
          **eval_options: the technique's `eval_options`.

        Returns:
          numpy array of theta's shape and dtype.
        """
        raise NotImplementedError

    def penalty(self, pair, **penalty_options):
        """The training penalty of one pair (summed over its weights).

        Args:
          pair: (theta, aux) tensors or variables.
          **penalty_options: the technique's `penalty_options`.

        Returns:
          float scalar tensor.
        """
        raise NotImplementedError

    def aux_variable_name(self, theta_name):
        """Name of the auxiliary variable that goes with `theta_name`.

        `<scope>/kernel` -> `<scope>/<aux_name>`; any other `<name>` ->
        `<name>_<aux_name>`. Variables created this way are paired in
        checkpoints without a graph (reports, strip).

        Args:
          theta_name: variable name without ':0' (a checkpoint key), or a
            name relative to the current variable scope.

        Returns:
          str.
        """
        if theta_name.endswith(_KERNEL_SUFFIX):
            return theta_name[:-len("kernel")] + self.aux_name
        return "%s_%s" % (theta_name, self.aux_name)

    def find_pairs(self, names):
        """The (theta, aux) name pairs among `names` by `aux_variable_name`.

        Args:
          names: iterable of variable names (e.g. a checkpoint's keys).

        Returns:
          list of (theta_name, aux_name), sorted by theta name.
        """
        names = set(names)
        return [(name, self.aux_variable_name(name)) for name in sorted(names)
                if self.aux_variable_name(name) in names]

    def select(self, options, kind):
        """The subset of `options` named by `<kind>_options`.

        Args:
          options: dict of option values (may hold other techniques').
          kind: 'train', 'eval' or 'penalty'.

        Returns:
          dict.
        """
        return {k: options[k] for k in getattr(self, kind + "_options")
                if k in options}

    def __repr__(self):
        return "<sparse technique %r>" % self.name


class _VariationalDropout(Technique):
    """Sparse variational dropout (Molchanov et al. 2017)."""

    name, short_name, aux_name = "variational_dropout", "vd", "log_sigma2"
    collection = common.VD_COLLECTION
    nn = vd_nn
    train_options = ("clip_alpha", "eps")
    eval_options = ("threshold", "eps")
    penalty_options = ("clip_alpha", "eps")

    def make_initializer(self):
        # -10: almost no noise at first, the weights train as plain ones.
        return tf.constant_initializer(-10.)

    def zero_mask(self, theta, aux, math=common.TF_MATH,
                  threshold=common.THRESHOLD, eps=common.EPSILON):
        return math.logical_not(common.vd_keep_mask(aux, theta, threshold,
                                                    eps, math=math))

    def keep_score(self, theta, aux, math=common.TF_MATH):
        return -common.compute_log_alpha(aux, theta, value_limit=None,
                                         math=math)

    def numpy_eval_weights(self, theta, aux, threshold=common.THRESHOLD,
                           eps=common.EPSILON):
        return common.vd_eval_weights(theta, aux, threshold, eps,
                                      math=common.NUMPY_MATH)

    def penalty(self, pair, clip_alpha=None, eps=common.EPSILON):
        return vd_nn.negative_dkl(pair, clip_alpha, eps)


class _L0(Technique):
    """L0 regularization with hard-concrete gates (Louizos et al. 2018)."""

    name, short_name, aux_name = "l0", "l0", "log_alpha"
    collection = common.L0_COLLECTION
    nn = l0_nn
    train_options = ("beta", "gamma", "zeta", "eps")
    eval_options = ("gamma", "zeta")
    penalty_options = ("beta", "gamma", "zeta")

    def make_initializer(self):
        # Mean log(9): gates start mostly open, P(z != 0) close to 1.
        return tf.random_normal_initializer(mean=2.197, stddev=0.01)

    def zero_mask(self, theta, aux, math=common.TF_MATH, gamma=common.GAMMA,
                  zeta=common.ZETA):
        return math.equal(common.hard_concrete_mean(aux, gamma, zeta,
                                                    math=math), 0.)

    def keep_score(self, theta, aux, math=common.TF_MATH):
        # The logit, not the probability: the same order, and no ties at a
        # saturated 1.0 (log alpha above ~35) to leave a cut short.
        del math   # the logit is the same expression in TF and numpy
        return common.hard_concrete_nonzero_logit(aux)

    def numpy_eval_weights(self, theta, aux, gamma=common.GAMMA,
                           zeta=common.ZETA):
        return common.l0_eval_weights(theta, aux, gamma, zeta,
                                      math=common.NUMPY_MATH)

    def penalty(self, pair, beta=common.BETA, gamma=common.GAMMA,
                zeta=common.ZETA):
        return l0_nn.l0_norm(pair[1], beta, gamma, zeta)


_REGISTRY = {t.name: t for t in (_VariationalDropout(), _L0())}

#: The registered technique names, in report order.
NAMES = ("variational_dropout", "l0")


def get(name, arg_name="technique"):
    """The registry entry of a technique.

    Args:
      name: 'variational_dropout' or 'l0' (a `Technique` is returned as
        is).
      arg_name: the caller's argument name, for the error message.

    Returns:
      the `Technique`.

    Raises:
      ValueError: unknown name, naming the choices.
    """
    if isinstance(name, Technique):
        return name
    return _REGISTRY[check_choice(name, NAMES, arg_name)]


def for_collection(key):
    """The technique whose pairs live in graph collection `key`.

    Args:
      key: a collection key, `common.VD_COLLECTION` or
        `common.L0_COLLECTION`.

    Returns:
      the `Technique`.

    Raises:
      ValueError: `key` is no technique's collection.
    """
    by_key = {_REGISTRY[n].collection: _REGISTRY[n] for n in NAMES}
    return by_key[check_choice(key, sorted(by_key), "collection")]


def eval_options(threshold, eps, gamma, zeta):
    """The evaluation options of both techniques by name (for reports and
    strip, which cover pairs of either), checked.

    Raises:
      ValueError: an option out of range (see
        `tf1_awd_sparse.ops.sparse.common.check_sparse_options`).
    """
    common.check_sparse_options(threshold=threshold, eps=eps, gamma=gamma,
                                zeta=zeta)
    return {"threshold": threshold, "eps": eps, "gamma": gamma,
            "zeta": zeta}


def _graph_variables(graph):
    """{name: variable} of the global and local variables of `graph`."""
    return {v.name: v for key in (tf.GraphKeys.GLOBAL_VARIABLES,
                                  tf.GraphKeys.LOCAL_VARIABLES)
            for v in graph.get_collection(key)}


def _check_pair(pair):
    if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(
            hasattr(p, "graph") and hasattr(p, "shape") for p in pair):
        raise ValueError("pair must be a 2-tuple (theta, aux) of variables "
                         "or tensors, got %r" % (pair,))
    theta, aux = pair
    if theta.graph is not aux.graph:
        raise ValueError("pair: theta %s and aux %s are in different graphs"
                         % (theta.name, aux.name))
    if not theta.shape.is_compatible_with(aux.shape):
        raise ValueError("pair: theta %s and aux %s must have one shape, got "
                         "%s and %s" % (theta.name, aux.name, theta.shape,
                                        aux.shape))
    variables = _graph_variables(theta.graph)
    for part in pair:
        # Variables (also distributed ones) are read back by name from the
        # variable collections, so that a resource variable comes back as
        # a variable after import_meta_graph.
        if not isinstance(part, tf.Tensor) and \
                variables.get(part.name) is not part:
            raise ValueError(
                "pair: variable %s is in neither tf.GraphKeys."
                "GLOBAL_VARIABLES nor LOCAL_VARIABLES, so it could not be "
                "found again by name" % part.name)
    return theta, aux


def register_pair(technique, pair):
    """Registers a sparse weight so the losses, reports and strip cover it.

    Layers register their `(kernel, aux)` when built; call this for pairs
    you create yourself (e.g. for the RNN cells, or an embedding). A pair
    already registered (e.g. layers rebuilt with reuse) is added once. The
    registry is a graph collection: eagerly and inside ``tf.function``
    nothing is registered (compute the losses from the pairs themselves:
    ``nn.negative_dkl`` / ``nn.l0_norm``).

    Args:
      technique: 'variational_dropout', 'l0' or a `Technique`.
      pair: (theta, aux): variables (in the global or local variables
        collection) or tensors of one graph and shape.

    Raises:
      ValueError: unknown technique; `pair` not a 2-tuple of variables /
        tensors of one graph and shape; a variable outside the variable
        collections.
    """
    technique = get(technique)
    if run_mode() != "graph":
        return
    theta, aux = _check_pair(pair)
    item = json.dumps([theta.name, aux.name]).encode("utf-8")
    if item not in theta.graph.get_collection(technique.collection):
        theta.graph.add_to_collection(technique.collection, item)


def _resolve(graph, variables, name, key):
    if name in variables:
        return variables[name]
    try:
        return graph.get_tensor_by_name(name)
    except (KeyError, ValueError):
        raise ValueError(
            "collection %r registers %r, which is neither a variable nor a "
            "tensor of the graph (a MetaGraph imported with import_scope "
            "keeps the registered names unscoped)" % (key, name))


def registered_pairs(technique, graph=None):
    """The registered (theta, aux) pairs of a technique, in order.

    Args:
      technique: 'variational_dropout', 'l0' or a `Technique`.
      graph: default `tf.get_default_graph()`.

    Returns:
      list of (theta, aux): variables as the graph's variable objects
      (also after `import_meta_graph`), other tensors as tensors.

    Raises:
      ValueError: unknown technique, `graph` not a `tf.Graph`, or a
        registered name missing from the graph.
      ParamsError (a ValueError): the collection holds something that is
        not a pair (e.g. a bare tensor, or a 3-tuple, put there with
        `tf.add_to_collection`), naming the collection and the item.
    """
    technique = get(technique)
    graph = check_graph(graph)
    variables = _graph_variables(graph)
    pairs = []
    for item in graph.get_collection(technique.collection):
        pair = _collection_pair(item, graph, variables, technique)
        if not any(p[0] is pair[0] and p[1] is pair[1] for p in pairs):
            pairs.append(pair)
    return pairs


def _collection_pair(item, graph, variables, technique):
    """The (theta, aux) of one item of a technique's collection: the JSON
    names `register_pair` stores, or a tuple added by older code.

    Raises:
      ParamsError: any other item.
    """
    key = technique.collection
    if isinstance(item, tuple) and len(item) == 2 and all(
            hasattr(p, "graph") and hasattr(p, "shape") for p in item):
        # Added with tf.add_to_collection by older code: usable here,
        # but it makes the whole collection unexportable.
        tf.logging.warning(
            "collection %r holds a (theta, aux) tuple; register pairs "
            "with sparse_layers.techniques.register_pair so they "
            "survive a MetaGraph export", key)
        return item
    names = None
    if isinstance(item, (bytes, str)):
        try:
            names = json.loads(tf.compat.as_text(item))
        except ValueError:
            pass
    if not (isinstance(names, list) and len(names) == 2
            and all(isinstance(n, str) for n in names)):
        raise ParamsError(
            "collection %r holds %r, which is not a registered (theta, %s) "
            "pair: register pairs with sparse_layers.techniques."
            "register_pair(%r, (theta, %s)), not tf.add_to_collection"
            % (key, item, technique.aux_name, technique.name,
               technique.aux_name))
    return tuple(_resolve(graph, variables, name, key) for name in names)
