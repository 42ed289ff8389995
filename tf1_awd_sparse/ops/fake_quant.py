"""Fake-quantization building blocks: fixed activation ranges, weight
quantization, and learned activation ranges held in resource variables.

Everything here is graph-mode TensorFlow 1.13.  Quantization is simulated with
``tf.fake_quant_with_min_max_vars`` (round to the ``2**bits`` grid of
``[min, max]``, nudged so that 0 is on the grid), the op that
``tf.contrib.quantize`` inserts and TOCO turns into uint8 tensors.

Learned ranges (:class:`RangeSet`) follow a once-per-``session.run`` life
cycle so that every time step of a recurrent loop sees the same range:

* once per run, outside any while loop, :meth:`RangeSet.run_ranges` reads the
  range variables; in training it first folds the previous run's observations
  into their exponential moving averages (EMA) and clears the accumulator;
* inside the loop every time step quantizes with those run ranges and, in
  training, adds its per-tensor minima / maxima to one accumulator variable
  (:meth:`RangeSet.observe`, a single ``assign_add`` per step).

The range variables are resource variables, read once with ``read_value``:
a ref variable read through ``tf.identity`` aliases the variable's memory, so
assignments made while a loop runs would change a "frozen" range between
time steps.
"""
from tf1_awd_sparse.base.compat import TENSOR_TYPES, tf

from tf1_awd_sparse.base import checks as _checks
from tf1_awd_sparse.base import scalar_checks as _scalar_checks
from tf1_awd_sparse.base.control_flow import smart_cond

__all__ = ["MIN_RANGE_WIDTH", "quantization_active", "observe_weight",
           "range_variable_creator", "variable_sync", "fixed_output_range",
           "fake_quant", "quantize_weight", "sanitize_range", "ema_fold",
           "ema_frozen", "RangeSet"]

# Width given to a range that collapsed to a point: a [0, 0] range has a zero
# quantization scale, which TOCO rejects ("quantization scale ... is 0").
MIN_RANGE_WIDTH = 1e-3

def quantization_active(quant_delay, training):
    """Whether fake quantization is on this run: True, or a scalar bool
    tensor that is False in training while the global step is below
    ``quant_delay`` (ranges are learned meanwhile).

    Args:
      quant_delay: int >= 0.
      training: Python bool or scalar bool tensor.

    Raises:
      ValueError: ``quant_delay > 0`` and no global step while training
        may be on.
    """
    if quant_delay == 0 or training is False:
        return True
    step = tf.train.get_global_step()
    if step is None:
        raise ValueError(
            "quant_delay=%d needs a global step: call "
            "tf.train.get_or_create_global_step() before building the "
            "model" % quant_delay)
    reached = tf.greater_equal(step, quant_delay)
    if training is True:
        return reached
    return tf.logical_or(tf.logical_not(training), reached)


def observe_weight(training):
    """The 0/1 weight of a run's range statistics: None for an evaluation
    graph (nothing observed), 1.0 in training, a float tensor for a train
    flag tensor (no cond around the statistics)."""
    if training is False:
        return None
    if training is True:
        return 1.0
    return tf.cast(training, tf.float32)


def range_variable_creator(add_variable):
    """``add(name, shape, initializer)`` for :meth:`RangeSet.
    create_variables`: a non-trainable resource variable made by
    ``add_variable`` (a layer's ``add_weight`` or ``tf.get_variable``,
    given also the keyword arguments of :func:`variable_sync`) and listed in
    ``mask_placement.QUANT_VARIABLES``."""
    from tf1_awd_sparse.ops import mask_placement

    def add(name, shape, init):
        variable = add_variable(name, shape=shape, initializer=init,
                                trainable=False, use_resource=True,
                                **variable_sync(name))
        tf.add_to_collection(mask_placement.QUANT_VARIABLES, variable)
        return variable
    return add


def variable_sync(name):
    """How a quantization variable is kept under a distribution strategy.

    The per-step accumulator (``quant/observed``) is replica-local scratch:
    each replica adds its own observations inside the RNN loop, where a
    cross-replica write cannot go. The ranges (and ``quant/initialized``)
    are model state: every write is averaged over the replicas, so all
    replicas hold the same ranges. No effect without a strategy.

    Returns:
      dict of ``synchronization`` / ``aggregation`` keyword arguments.
    """
    if name.endswith("/observed"):
        return {"synchronization": tf.VariableSynchronization.ON_READ,
                "aggregation": tf.VariableAggregation.SUM}
    return {"aggregation": tf.VariableAggregation.MEAN}


def fixed_output_range(kind, num_bits):
    """The output range TFLite's quantized kernels impose on an activation.

    TFLite's uint8 Logistic writes scale 1/256, zero point 0, i.e.
    [0, 255/256]; its uint8 Tanh writes scale 1/128, zero point 128, i.e.
    [-1, 127/128]. The same grids generalize to ``num_bits``.

    Args:
      kind: ``'sigmoid'`` (also used for hard-sigmoid) or ``'tanh'``.
      num_bits: activation bit width.

    Returns:
      ``(min, max)`` Python floats.

    Raises:
      ValueError: for an unknown ``kind`` or bad ``num_bits``.
    """
    _scalar_checks.check_choice(kind, ("sigmoid", "tanh"), "kind")
    levels = float(2 ** _scalar_checks.check_num_bits(num_bits))
    if kind == "sigmoid":
        return 0.0, (levels - 1.0) / levels
    return -1.0, 1.0 - 2.0 / levels


def fake_quant(x, range_min, range_max, num_bits, narrow_range=False,
               name=None):
    """Fake-quantizes ``x`` to ``num_bits`` on ``[range_min, range_max]``.

    Args:
      x: float32 tensor of any shape.
      range_min, range_max: float32 scalars (tensors or Python floats); no
        gradient flows into them (ranges are learned by EMA, not by SGD).
      num_bits: bit width in [2, 8].
      narrow_range: use ``[1, 2**bits - 1]`` (weights) instead of
        ``[0, 2**bits - 1]``.
      name: optional op name.

    Returns:
      A tensor like ``x`` whose values lie on the quantization grid; its
      gradient is the straight-through estimator inside the range.

    Raises:
      TypeError: ``x`` not float32 (the op's only dtype).
      ValueError: bad ``num_bits``; range bounds given as Python values
        that are not finite numbers, or not ``range_min < range_max`` in
        float32 (an empty range gave NaN; tensor bounds are the caller's: the cells' learned ranges are
        sanitized, see :func:`sanitize_range`).
    """
    num_bits = _scalar_checks.check_num_bits(num_bits)
    x = _checks.check_tensor(x, "x", dtype=tf.float32,
                             dtype_of="fake quantization is float32 only")
    given = {"range_min": range_min, "range_max": range_max}
    numbers_given = [n for n in sorted(given) if not isinstance(
        given[n], TENSOR_TYPES)]
    if len(numbers_given) == 2:
        _scalar_checks.check_interval(range_min, range_max, "range_min",
                                      "range_max", tf.float32)
    for name in numbers_given:
        _scalar_checks.check_real(given[name], name)
    range_min = tf.stop_gradient(tf.convert_to_tensor(range_min, x.dtype))
    range_max = tf.stop_gradient(tf.convert_to_tensor(range_max, x.dtype))
    return tf.fake_quant_with_min_max_vars(
        x, range_min, range_max, num_bits=num_bits,
        narrow_range=narrow_range, name=name)


def quantize_weight(weight, num_bits, name=None):
    """Last-value weight quantization: the range is the weight's own min/max.

    Args:
      weight: float32 tensor (e.g. a kernel after its DropConnect mask).
      num_bits: bit width in [2, 8].
      name: optional op name.

    Returns:
      ``weight`` on the narrow-range grid of ``[min(weight), max(weight)]``
      (widened to contain 0 and to at least ``MIN_RANGE_WIDTH``: an
      all-zero, e.g. fully pruned, matrix has no zero-width range, which
      TOCO rejects).

    Raises:
      TypeError: ``weight`` not float32.
      ValueError: bad ``num_bits``.
    """
    weight = _checks.check_tensor(weight, "weight", dtype=tf.float32,
                                  dtype_of="fake quantization is float32 "
                                  "only")
    low, high = sanitize_range(tf.reduce_min(weight), tf.reduce_max(weight))
    return fake_quant(weight, low, high, num_bits, narrow_range=True,
                      name=name)


def sanitize_range(range_min, range_max, limit=None):
    """Makes a learned range usable by TOCO: contains 0, never empty, and
    inside ``[-limit, limit]`` when a clip limit applies.

    Args:
      range_min, range_max: float32 tensors of equal shape.
      limit: optional positive float clip value (cell_clip / proj_clip):
        quantizing to a range inside it performs the clip.

    Returns:
      ``(min, max)`` tensors.

    Raises:
      ValueError: ``limit`` not None or a finite number > 0.
    """
    limit = _scalar_checks.check_real(limit, "limit", low=0, low_open=True,
                                      allow_none=True)
    range_min = tf.minimum(range_min, 0.0)
    range_max = tf.maximum(range_max, 0.0)
    if limit is not None:
        range_min = tf.maximum(range_min, -float(limit))
        range_max = tf.minimum(range_max, float(limit))
    range_max = tf.maximum(range_max, range_min + MIN_RANGE_WIDTH)
    return range_min, range_max


def ema_fold(ema, observed_sum, count, initialized, decay):
    """Train-mode range update: one EMA step from one run's observations.

    ``new = ema + w * (observed_sum / count - ema)`` where ``w`` is
    ``1 - decay``, or 1 for the first observation (the initial guess is then
    replaced, not averaged).  Without observations (``count == 0``) the EMA
    is returned unchanged.

    Args:
      ema: float32 vector of current EMA values.
      observed_sum: float32 vector, the sum over time steps of the per-step
        statistic for each entry of ``ema``.
      count: float32 scalar, number of time steps observed.
      initialized: float32 scalar, 0 before the first fold, 1 after.
      decay: Python float in [0, 1).

    Returns:
      The updated float32 vector.

    Raises:
      ValueError: ``decay`` not a number in [0, 1).
    """
    decay = _scalar_checks.check_real(decay, "decay", low=0, high=1,
                                      high_open=True)
    mean = observed_sum / tf.maximum(count, 1.0)
    weight = tf.where(initialized > 0.0, 1.0 - decay, 1.0)
    return tf.where(tf.fill(tf.shape(ema), count > 0.0),
                    ema + weight * (mean - ema), ema)


def ema_frozen(ema):
    """Eval-mode counterpart of :func:`ema_fold`: ranges stay as they are.

    Args:
      ema: float32 EMA value(s).

    Returns:
      ``ema`` unchanged.
    """
    return ema


class RangeSet(object):
    """Learned quantization ranges for a fixed set of named tensors of one
    layer, stored as variables in the layer's scope.

    Variables (created by :meth:`create_variables` through the layer's
    ``add_weight``, so they follow its scope, reuse and checkpoints):
    ``quant/<name>/min`` and ``quant/<name>/max`` for each name (the EMA
    ranges), ``quant/observed`` (per-run accumulator: sums of per-step minima
    and maxima, then the step count) and ``quant/initialized``.
    All are non-trainable resource variables.

    Args:
      names: sequence of tensor names (strings, unique).
      ema_decay: EMA decay per run, in [0, 1).
      limits: optional dict name -> clip value bounding that range.
      init_range: ``(min, max)`` used before anything was observed.

    Raises:
      ValueError: names that are not a list of unique strings, a decay
        outside [0, 1), limits that are not numbers > 0 by name, or an
        ``init_range`` that is not two finite numbers ``min < max``.
    """

    def __init__(self, names, ema_decay=0.999, limits=None,
                 init_range=(-6.0, 6.0)):
        if isinstance(names, str) or not all(
                isinstance(n, str) for n in names):
            raise ValueError("names must be a list of strings; got %r"
                             % (names,))
        names = list(names)
        if len(set(names)) != len(names):
            raise ValueError("names must be unique; got %r" % (names,))
        self.ema_decay = _scalar_checks.check_real(
            ema_decay, "ema_decay", low=0, high=1, high_open=True)
        for name, limit in dict(limits or {}).items():
            _scalar_checks.check_real(limit, "limits[%r]" % (name,), low=0,
                                      low_open=True, allow_none=True)
        if not isinstance(init_range, (tuple, list)) or \
                len(init_range) != 2:
            raise ValueError("init_range must be (min, max); got %r"
                             % (init_range,))
        init_range = _scalar_checks.check_interval(
            init_range[0], init_range[1], "init_range[0]", "init_range[1]")
        self.names = names
        self.limits = dict(limits or {})
        self.init_range = init_range
        self._index = {n: i for i, n in enumerate(names)}
        self.min_vars = self.max_vars = None
        self.observed = self.initialized = None
        self._token = None

    def create_variables(self, add_weight):
        """Creates the variables.

        Args:
          add_weight: callable ``(name, shape, initializer) -> variable``,
            normally a closure over the layer's ``add_weight`` with
            ``trainable=False, use_resource=True``.
        """
        const = tf.constant_initializer
        self.min_vars = [add_weight("quant/%s/min" % n, [],
                                    const(self.init_range[0]))
                         for n in self.names]
        self.max_vars = [add_weight("quant/%s/max" % n, [],
                                    const(self.init_range[1]))
                         for n in self.names]
        self.observed = add_weight("quant/observed",
                                   [2 * len(self.names) + 1], const(0.0))
        self.initialized = add_weight("quant/initialized", [], const(0.0))

    def _read(self):
        """The EMA ranges: two lists of scalar reads, one per name."""
        return ([v.read_value() for v in self.min_vars],
                [v.read_value() for v in self.max_vars])

    def _fold(self):
        """Training: folds the last run's observations in, clears them.
        Returns two lists of scalars, as :meth:`_frozen`."""
        ema_min, ema_max = (tf.stack(reads) for reads in self._read())
        observed = self.observed.read_value()
        k = len(self.names)
        count = observed[2 * k]
        new_min = ema_fold(ema_min, observed[:k], count,
                           self.initialized.read_value(), self.ema_decay)
        new_max = ema_fold(ema_max, observed[k:2 * k], count,
                           self.initialized.read_value(), self.ema_decay)
        updates = [v.assign(new_min[i]) for i, v in enumerate(self.min_vars)]
        updates += [v.assign(new_max[i]) for i, v in enumerate(self.max_vars)]
        with tf.control_dependencies([new_min, new_max]):
            updates.append(self.observed.assign(tf.zeros_like(observed)))
            updates.append(self.initialized.assign(
                tf.maximum(self.initialized.read_value(),
                           tf.cast(count > 0.0, tf.float32))))
        with tf.control_dependencies(updates):
            return ([tf.identity(new_min[i]) for i in range(k)],
                    [tf.identity(new_max[i]) for i in range(k)])

    def _frozen(self):
        """Evaluation: the EMA ranges as read, per name. No vector: a
        ``tf.stack`` of the scalar reads, sliced back per name, is what
        TF 1.13's grappler fails on (ArithmeticOptimizer's
        RemoveStackStridedSliceSameAxis: "Pack node ... axis attribute is
        out of bounds: 0", logged for every run of an evaluation or
        exported graph)."""
        ema_min, ema_max = self._read()
        return ([ema_frozen(t) for t in ema_min],
                [ema_frozen(t) for t in ema_max])

    def run_ranges(self, training):
        """Builds the once-per-run range tensors; call outside any loop.

        Args:
          training: Python bool or scalar bool tensor; True folds the last
            run's observations into the EMA first (ranges are learned),
            False only reads (ranges are frozen).

        Returns:
          dict name -> ``(min, max)`` float32 scalar tensors, sanitized.
        """
        ema_min, ema_max = smart_cond(training, self._fold, self._frozen,
                                      name="quant_ranges")
        # Every in-loop accumulation depends on this, so it happens after the
        # accumulator was cleared.
        self._token = ema_min[0]
        ranges = {}
        for name, i in self._index.items():
            ranges[name] = sanitize_range(ema_min[i], ema_max[i],
                                          self.limits.get(name))
        return ranges

    def observe(self, tensors, weight=1.0):
        """Training-only accumulation of one time step's statistics.

        Args:
          tensors: dict name -> float32 tensor, one entry per name.
          weight: 1.0, or a float32 0/1 scalar tensor (0 in evaluation: a
            graph with a train-flag tensor accumulates nothing then).

        Returns:
          The ``assign_add`` op on the accumulator.

        Raises:
          ValueError: if names are missing or unknown, or
            :meth:`run_ranges` was not called first.
        """
        if set(tensors) != set(self.names):
            raise ValueError("observe needs exactly the tensors %r; got %r"
                             % (sorted(self.names), sorted(tensors)))
        if self._token is None:
            raise ValueError("run_ranges must be called before observe")
        stats = tf.stack([tf.reduce_min(tensors[n]) for n in self.names]
                         + [tf.reduce_max(tensors[n]) for n in self.names]
                         + [tf.ones([], tf.float32)])
        # A tensor weight scales; the Python 1.0 default adds no op.
        if isinstance(weight, TENSOR_TYPES) or weight != 1.0:
            stats = stats * weight
        with tf.control_dependencies([tf.identity(self._token)]):
            return self.observed.assign_add(stats).op
