"""Kernel transforms: the steps from a recurrent layer's ``kernel`` variable
to the kernel that every time step of a run multiplies by.

``WeightDropLSTMCell`` (and the sequence layer ``WeightDropLSTM``) compose
an ordered list of transforms once per ``session.run``, outside the RNN
loop, so each step costs one matmul by a ready tensor:

1. :class:`SparseWeights` - sparse variational dropout or L0 gates
   (``sparse_layers``): one weight sample per run in training, the
   evaluation weights (zeros where pruned) in evaluation;
2. :class:`PruningMask` - a fixed 0/1 mask held in a variable (model
   state, saved with the weights): pruned weights stay exactly zero;
3. :class:`DropConnect` - AWD-LSTM's weight drop on the recurrent rows,
   one mask per run, drawn fresh or held in a variable
   (``variational_dropout.HeldMask``) and resampled by update ops;
4. :class:`WeightFakeQuant` - last-value fake quantization of the weights
   for quantization-aware training (zeros stay zero: 0 is on the grid).

Each transform owns its variables (created in the layer's scope through
``layer.add_weight``, with stable names) and its per-run tensors, and
belongs to one layer (a layer given transforms copies them; building one
twice raises).
"""
from __future__ import absolute_import, division, print_function

import copy as copy_module

from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.transforms.magnitude_pruning import PRUNING_COLLECTIONS
from tf1_awd_sparse.base.checks import check_keep_prob
from tf1_awd_sparse.base.scalar_checks import (
    check_bool, check_choice, check_int)
from tf1_awd_sparse.base.control_flow import run_mode, smart_cond
from tf1_awd_sparse.base.seeds import derived_seed
from tf1_awd_sparse.transforms.held_mask import (
    HeldMask, apply_mask, bernoulli_mask, scaled_mask)

__all__ = ["KernelTransform", "SparseWeights", "PruningMask", "DropConnect",
           "WeightFakeQuant", "SPARSITY_CHOICES", "sparsity_technique",
           "PRUNING_MASKS", "from_config", "serialize", "ORDER",
           "FLAG_DEFAULTS", "transforms_from_flags", "flags_of",
           "clashing_flags",
           "pruning_variable_names", "pruned_weight_name"]

#: Accepted values of the ``sparsity`` argument of the cells.
SPARSITY_CHOICES = (None, "variational_dropout", "l0")

#: Graph collection of every ``pruning_mask`` variable.
PRUNING_MASKS = "pruning_masks"


def sparsity_technique(sparsity):
    """What a ``sparsity`` choice uses for a sparse weight: the
    ``sparse_layers.techniques`` entry (``aux_name``,
    ``make_initializer()``, ``nn`` with the stateless ops, ...).

    Raises:
      ValueError: ``sparsity`` is not one of the sparse choices.
    """
    return techniques.get(sparsity, "sparsity")


class KernelTransform(object):
    """One step from the kernel variable to the per-run kernel.

    Subclasses implement :meth:`apply`; those with variables create them in
    :meth:`build`, which a layer calls before its own ``kernel`` exists
    (a ``tf.layers.Layer`` creates no new variable once built).
    """

    #: Short name, used in name scopes and configs.
    name = "transform"
    #: The cell constructor's convenience arguments that make this transform
    #: and their defaults (``{}``: given only through ``kernel_transforms``).
    FLAGS = {}
    #: Whether ``WeightDropLSTM``'s whole-sequence recurrence can run a cell
    #: with this transform (it sees only the per-run kernel, so a transform
    #: that changes the step itself must say False).
    sequence_ok = True
    _built = False

    @classmethod
    def from_flags(cls, flags, seed=None,
                   updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS):
        """The transform a cell's convenience arguments ask for, or None.

        Args:
          flags: dict with (at least) every key of :data:`FLAGS`.
          seed, updates_collection: the cell's options of those names.
        """
        del flags, seed, updates_collection
        return None

    def flags(self):
        """The values of :data:`FLAGS` that make this transform (the
        inverse of :meth:`from_flags`; what a cell's config reports)."""
        return {}

    def copy(self):
        """An unbuilt copy with the same configuration.

        Raises:
          ValueError: the transform was built (it has variables).
        """
        if self._built:
            raise ValueError("a %s that was built belongs to its layer; give "
                             "each layer its own transforms" % type(self)
                             .__name__)
        return copy_module.copy(self)

    def mark_built(self):
        """Records that the transform created its variables (layers call
        this after `build`).

        Raises:
          ValueError: it was built already, e.g. shared by two layers.
        """
        if self._built:
            raise ValueError("this %s was built already: a kernel transform "
                             "belongs to one layer" % type(self).__name__)
        self._built = True

    def build(self, add_variable, shape, input_depth, training):
        """Creates the transform's variables.

        Args:
          add_variable: callable with ``tf.layers.Layer.add_weight``'s
            signature (``name, shape, dtype=None, initializer=None,
            trainable=True, ...``), e.g. a layer's ``add_weight`` (the
            variable goes in the layer's scope and weights) or
            ``tf.get_variable`` (a weight outside layers, e.g. an embedding
            ``x``: names are then ``x/<name>``... as the caller scopes them).
          shape: ``[rows, cols]`` of the kernel (Python ints); the first
            ``input_depth`` rows multiply the input, the rest the state.
          input_depth: int (0 for a matrix without input rows).
          training: the layer's training flag (bool or bool tensor).
        """
        del add_variable, shape, input_depth, training

    def apply(self, kernel, training, variable):
        """The transformed kernel for this run (called once per run,
        outside any loop).

        Args:
          kernel: ``[rows, cols]`` tensor, the previous step's result.
          training: Python bool or scalar bool tensor.
          variable: the layer's ``kernel`` variable itself (what sparse
            pairs and pruning schedules refer to, whatever came before).

        Returns:
          A tensor of ``kernel``'s shape and dtype.
        """
        raise NotImplementedError

    def update_ops(self):
        """Ops the user runs to resample held state (default: none)."""
        return []

    def get_config(self):
        """Constructor arguments, so ``type(t)(**t.get_config())`` rebuilds
        the transform (without its variables)."""
        return {}


class SparseWeights(KernelTransform):
    """The kernel as theta of a sparse pair ``(kernel, aux)``.

    ``aux`` is ``log_sigma2`` (sparse variational dropout, Molchanov et al.
    2017) or ``log_alpha`` (L0 hard-concrete gates, Louizos et al. 2018), a
    variable of the kernel's shape next to it; the pair joins the
    ``sparse_layers`` registry, so ``sparse_layers.losses`` and
    ``sparse_layers.report`` cover it. Training: one weight sample per run
    (VD ``theta + sigma * N(0, 1)``; L0 ``theta * z``), shared by all steps
    and examples; evaluation: the evaluation weights (zeros where pruned).

    Args:
      sparsity: ``'variational_dropout'`` or ``'l0'``.

    Raises:
      ValueError: an unknown ``sparsity``.
    """

    name = "sparse_weights"
    FLAGS = {"sparsity": None}

    @classmethod
    def from_flags(cls, flags, seed=None,
                   updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS):
        """``SparseWeights(sparsity)`` unless ``sparsity`` is None."""
        sparsity = flags["sparsity"]
        return None if sparsity is None else cls(sparsity)

    def flags(self):
        """``{'sparsity': ...}``."""
        return {"sparsity": self.sparsity}

    def __init__(self, sparsity):
        self.sparsity = sparsity
        self.technique = sparsity_technique(sparsity)
        self.aux = None
        self._registered = False

    def build(self, add_variable, shape, input_depth, training):
        """Creates the auxiliary variable ``<scope>/log_sigma2|log_alpha``."""
        if self.aux is None:
            self.aux = add_variable(
                self.technique.aux_name, shape=shape,
                initializer=self.technique.make_initializer())

    def apply(self, kernel, training, variable):
        """VD / L0 weight sample in training, evaluation weights else; the
        pair ``(variable, aux)`` joins the ``sparse_layers`` registry (in
        graph mode)."""
        if not self._registered:
            techniques.register_pair(self.technique, (variable, self.aux))
            self._registered = True
        pair = (kernel, self.aux)
        nn = self.technique.nn
        return smart_cond(training, lambda: nn.train_weights(pair),
                          lambda: nn.eval_weights(pair))

    def get_config(self):
        """``{'sparsity': ...}``."""
        return {"sparsity": self.sparsity}


class PruningMask(KernelTransform):
    """A 0/1 mask on the kernel, held in the non-trainable variable
    ``<scope>/pruning_mask`` (ones at first), with its magnitude threshold
    ``<scope>/pruning_threshold``.

    The mask is model state (saved and restored with the weights, listed in
    :data:`PRUNING_MASKS`), applied in training and evaluation before
    DropConnect and weight fake-quant, so pruned weights stay exactly zero
    through both and through export. It changes only when something assigns
    it: the mask and threshold are registered in the pruning collections
    (mask, threshold, masked weight, weight; the names
    ``tf.contrib.model_pruning`` uses), so the library's gradual
    magnitude-pruning schedule
    (``tf1_awd_sparse.transforms.magnitude_pruning.MagnitudePruning(...)
    .conditional_mask_update_op(step)``, on every version) or, on TF 1.x,
    contrib's ``Pruning(...).conditional_mask_update_op()`` prunes the
    kernel; or assign it yourself (e.g. from a stripped sparse checkpoint:
    ``weights != 0``).
    """

    name = "pruning_mask"
    MASK_NAME = "pruning_mask"
    THRESHOLD_NAME = "pruning_threshold"
    FLAGS = {"pruning_mask": False}

    @classmethod
    def from_flags(cls, flags, seed=None,
                   updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS):
        """``PruningMask()`` when ``pruning_mask`` is True.

        Raises:
          ValueError: ``pruning_mask`` is not a bool.
        """
        return cls() if check_bool(flags["pruning_mask"],
                                   "pruning_mask") else None

    def flags(self):
        """``{'pruning_mask': True}``."""
        return {"pruning_mask": True}

    def __init__(self):
        self.mask = self.threshold = None
        self._registered = False

    def build(self, add_variable, shape, input_depth, training):
        """Creates ``<scope>/pruning_mask`` (ones) and
        ``<scope>/pruning_threshold`` (0)."""
        if self.mask is None:
            self.mask = add_variable(self.MASK_NAME, shape=shape,
                                     trainable=False,
                                     initializer=tf.ones_initializer())
            self.threshold = add_variable(self.THRESHOLD_NAME, shape=[],
                                          trainable=False,
                                          initializer=tf.zeros_initializer())
            if run_mode() == "graph" and \
                    self.mask not in tf.get_collection(PRUNING_MASKS):
                tf.add_to_collection(PRUNING_MASKS, self.mask)

    def apply(self, kernel, training, variable):
        """``kernel * pruning_mask``; the mask's magnitude schedule (if
        any) prunes by the magnitudes of ``variable``."""
        masked = tf.multiply(tf.convert_to_tensor(kernel),
                             tf.cast(self.mask, kernel.dtype),
                             name="masked_weight")
        if not self._registered and run_mode() == "graph":
            _register_for_model_pruning(variable, self.mask, self.threshold,
                                        masked)
            self._registered = True
        return masked


def pruning_variable_names(weight_name):
    """Names of a weight's `PruningMask` variables, ``(mask, threshold)``:
    ``<scope>/pruning_mask`` next to a layer's ``<scope>/kernel``, and
    ``<name>_pruning_mask`` for a weight outside layers (``lm/embedding``).
    The one place this naming is written (checkpoints are read by it)."""
    if weight_name.endswith("/kernel"):
        scope = weight_name[:-len("kernel")]
        return (scope + PruningMask.MASK_NAME,
                scope + PruningMask.THRESHOLD_NAME)
    return (weight_name + "_" + PruningMask.MASK_NAME,
            weight_name + "_" + PruningMask.THRESHOLD_NAME)


def pruned_weight_name(mask_name):
    """The weight a pruning mask belongs to (inverse of
    `pruning_variable_names`; a layer's mask gives the layer scope)."""
    for suffix in ("/" + PruningMask.MASK_NAME, "_" + PruningMask.MASK_NAME):
        if mask_name.endswith(suffix):
            return mask_name[:-len(suffix)]
    return mask_name


def _register_for_model_pruning(weight, mask, threshold, masked):
    """Adds a masked weight to the pruning collections (the four lists
    ``MagnitudePruning`` and TF 1.x contrib's ``Pruning`` read, in step),
    once."""
    masks, thresholds, masked_weights, weights = PRUNING_COLLECTIONS
    if mask in tf.get_collection(masks):
        return
    tf.add_to_collection(thresholds, threshold)
    tf.add_to_collection(masks, mask)
    tf.add_to_collection(masked_weights, masked)
    tf.add_to_collection(weights, weight)


class DropConnect(KernelTransform):
    """AWD-LSTM weight drop: an element-wise Bernoulli(``keep_prob``) mask
    on the recurrent (state) rows of the kernel, all rows with
    ``drop_input_weights``, scaled by ``1 / keep_prob``; the same mask at
    every step and for every example of a run; training only.

    Args:
      keep_prob: Python number in ``(0, 1]``.
      held: False: a new mask per ``session.run``. True: the mask is the
        variable ``<scope>/weight_drop_mask`` (a ``HeldMask``), changed only
        by its update op (in ``updates_collection``).
      drop_input_weights: also drop the input rows.
      seed: optional op seed.
      updates_collection: collection of a held mask's update op (default
        ``tf.GraphKeys.UPDATE_OPS``; None: none).

    Raises:
      ValueError: bad ``keep_prob``, ``held``, ``drop_input_weights`` or
        ``seed``.
    """

    name = "drop_connect"
    MASK_NAME = "weight_drop_mask"
    FLAGS = {"weight_drop_kr": 1.0, "use_vd": False,
             "drop_input_weights": False}
    # The cell's names of the constructor's arguments, for its errors.
    _FLAG_NAMES = {"keep_prob": "weight_drop_kr", "held": "use_vd"}

    @classmethod
    def from_flags(cls, flags, seed=None,
                   updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS):
        """``DropConnect(weight_drop_kr, held=use_vd, ...)`` when
        ``weight_drop_kr < 1`` (the flags are checked, under their names,
        either way).

        Raises:
          ValueError: a bad ``weight_drop_kr``, ``use_vd`` or
            ``drop_input_weights``.
        """
        drop = cls(flags["weight_drop_kr"], held=flags["use_vd"],
                   drop_input_weights=flags["drop_input_weights"], seed=seed,
                   updates_collection=updates_collection,
                   _names=cls._FLAG_NAMES)
        return drop if drop.keep_prob < 1.0 else None

    def flags(self):
        """``weight_drop_kr``, ``use_vd``, ``drop_input_weights``."""
        return {"weight_drop_kr": self.keep_prob, "use_vd": self.held,
                "drop_input_weights": self.drop_input_weights}

    def __init__(self, keep_prob, held=False, drop_input_weights=False,
                 seed=None, updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS,
                 _names=None):
        names = _names or {}
        self.keep_prob = check_keep_prob(
            keep_prob, names.get("keep_prob", "keep_prob"))
        self.held = check_bool(held, names.get("held", "held"))
        self.drop_input_weights = check_bool(drop_input_weights,
                                             "drop_input_weights")
        self.seed = check_int(seed, "seed", allow_none=True)
        self.updates_collection = updates_collection
        self._held_mask = None
        self._input_depth = None

    def active(self, training):
        """True when the graph may drop weights at all."""
        return self.keep_prob < 1.0 and training is not False

    def mask_rows(self, input_depth, state_depth):
        """Rows the mask covers."""
        return state_depth + (input_depth if self.drop_input_weights else 0)

    @property
    def mask_variable(self):
        """The held mask variable, or None."""
        return None if self._held_mask is None else self._held_mask.variable

    def create_held_mask(self, add_variable, rows, cols):
        """Creates the held mask (once); also before the layer is built, for
        the AWD-LSTM port's ``get_vd_update_op()`` before the first call."""
        if self._held_mask is None:
            self._held_mask = HeldMask(
                lambda name, shape, dtype, init: add_variable(
                    name, shape=shape, dtype=dtype, initializer=init,
                    trainable=False, use_resource=True),
                self.MASK_NAME, [rows, cols], self.keep_prob,
                seed=self.seed, updates_collection=self.updates_collection)
        return self._held_mask

    def build(self, add_variable, shape, input_depth, training):
        """Creates the held mask when ``held`` and dropping can happen.

        Raises:
          ValueError: a held mask created earlier for another input depth.
        """
        rows = self.mask_rows(input_depth, shape[0] - input_depth)
        if self._held_mask is not None:
            built = dimension_value(self._held_mask.variable.get_shape()[0])
            if built != rows:
                raise ValueError(
                    "the mask was built for input depth %d but the inputs "
                    "have depth %d" % (built - (shape[0] - input_depth),
                                       input_depth))
        elif self.held and self.active(training):
            self.create_held_mask(add_variable, rows, shape[1])
        self._input_depth = input_depth

    def apply(self, kernel, training, variable):
        """The kernel with the run's mask applied (training), else as is."""
        if not self.active(training):
            return kernel
        kernel = tf.convert_to_tensor(kernel)
        depth = self._input_depth
        rows = self.mask_rows(
            depth, dimension_value(kernel.get_shape()[0]) - depth)
        shape = [rows, dimension_value(kernel.get_shape()[1])]
        # A held mask is read outside the cond: the read is what its update
        # op is ordered against, whichever branch runs.
        held = self._held_mask.read() if self._held_mask else None

        def dropped():
            mask = held if held is not None else bernoulli_mask(
                shape, self.keep_prob, kernel.dtype,
                derived_seed(self.seed, 2))
            if self.drop_input_weights:
                return apply_mask(kernel, mask, self.keep_prob)
            # Input rows get a multiplier of exactly 1: one full-size
            # multiply (and one in the gradient) is cheaper than splitting
            # and re-concatenating the kernel.
            multiplier = tf.pad(
                scaled_mask(mask, self.keep_prob, kernel.dtype),
                [[self._input_depth, 0], [0, 0]], constant_values=1)
            return kernel * multiplier

        return smart_cond(training, dropped, lambda: tf.identity(kernel))

    def update_ops(self):
        """The held mask's update op, or ``[]``."""
        return [] if self._held_mask is None else \
            self._held_mask.update_ops()

    def get_config(self):
        """The constructor arguments."""
        return {"keep_prob": self.keep_prob, "held": self.held,
                "drop_input_weights": self.drop_input_weights,
                "seed": self.seed,
                "updates_collection": self.updates_collection}


class WeightFakeQuant(KernelTransform):
    """Last-value fake quantization of the kernel (narrow range, the
    kernel's own min / max per run), through a quantized cell's
    ``LSTMQuantizer`` (which also decides whether quantization is active:
    ``quant_delay``)."""

    name = "weight_fake_quant"
    # The quantized step is the cell's own, which the sequence layer lacks.
    sequence_ok = False

    def __init__(self, quantizer):
        self.quantizer = quantizer

    def apply(self, kernel, training, variable):
        """The fake-quantized kernel."""
        return self.quantizer.quantize_weight(kernel)

    def get_config(self):
        """Built by the cell from its quantization arguments."""
        return {}


#: The library's transforms in the order a cell applies them. This tuple is
#: the one place a new transform is added: the cell's flags, its config,
#: ``from_config`` and the sequence layer's fast path all read it.
ORDER = (SparseWeights, PruningMask, DropConnect)

#: Every convenience flag of the cell that makes a transform, with its
#: default (the cell's signature has the same defaults; a test checks).
FLAG_DEFAULTS = {}
for _cls in ORDER:
    FLAG_DEFAULTS.update(_cls.FLAGS)
del _cls

_CLASSES = {cls.__name__: cls for cls in ORDER}


def transforms_from_flags(flags, seed=None,
                          updates_collection=tf.compat.v1.GraphKeys.UPDATE_OPS):
    """The transforms a cell's convenience arguments make, in :data:`ORDER`.

    Args:
      flags: dict of some keys of :data:`FLAG_DEFAULTS` (the rest default).
      seed, updates_collection: the cell's options.

    Returns:
      A list of unbuilt transforms (empty when every flag is its default).

    Raises:
      ValueError: a bad flag value (named), or an unknown flag.
    """
    unknown = sorted(set(flags) - set(FLAG_DEFAULTS))
    if unknown:
        raise ValueError("unknown kernel transform flags %s; known: %s"
                         % (unknown, sorted(FLAG_DEFAULTS)))
    full = dict(FLAG_DEFAULTS, **flags)
    made = [cls.from_flags(full, seed=seed,
                           updates_collection=updates_collection)
            for cls in ORDER]
    return [transform for transform in made if transform is not None]


def flags_of(transforms):
    """The convenience flags that describe ``transforms`` (defaults for the
    flags none of them sets): what a cell's ``get_config`` reports beside
    its ``kernel_transforms`` record."""
    flags = dict(FLAG_DEFAULTS)
    for transform in transforms:
        flags.update(transform.flags())
    return flags


def clashing_flags(flags):
    """The flags in ``flags`` that differ from their defaults: given together
    with a ``kernel_transforms`` list, they would make transforms too."""
    return sorted(key for key, value in flags.items()
                  if key in FLAG_DEFAULTS and value != FLAG_DEFAULTS[key])


def from_config(config):
    """Rebuilds a transform from ``{'class_name': ..., 'config': ...}``.

    Raises:
      ValueError: not such a dict, an unknown class name, or a ``config``
        the class does not take (its arguments named).
    """
    if not isinstance(config, dict) or not isinstance(
            config.get("config", {}), dict):
        raise ValueError("config must be a dict {'class_name': ..., "
                         "'config': {...}}, got %r" % (config,))
    check_choice(config.get("class_name"), sorted(_CLASSES),
                 "kernel transform class_name")
    cls = _CLASSES[config["class_name"]]
    try:
        return cls(**config.get("config", {}))
    except TypeError as error:
        raise ValueError("config of %s: %s" % (cls.__name__, error))


def serialize(transform):
    """``{'class_name': ..., 'config': ...}`` of a transform."""
    return {"class_name": type(transform).__name__,
            "config": transform.get_config()}
