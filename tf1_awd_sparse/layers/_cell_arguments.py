"""The checks and records behind ``WeightDropLSTMCell``'s constructor and
``from_config``: the ``LSTMCell`` arguments, the ``is_quant`` arguments,
the ordered kernel transforms the flags make, and a config's transforms
decoded. (Apart from the cell so that its module stays short; the cell and
``WeightDropLSTM.from_config`` are the only users.)"""
from __future__ import absolute_import, division, print_function

from tf1_awd_sparse.base.scalar_checks import (
    check_int, check_number, check_positive_int, check_real)
from tf1_awd_sparse.base.compat import tf
from tf1_awd_sparse.transforms.kernel import (
    FLAG_DEFAULTS, KernelTransform, WeightFakeQuant, clashing_flags, flags_of,
    from_config, transforms_from_flags)


def decoded_config(config):
    """A copy of a ``get_config`` dict with its kernel transforms rebuilt
    from their serialized form (the flags beside them dropped).

    Raises:
      ValueError: a flag that contradicts the record.
    """
    config = dict(config)
    if config.get("kernel_transforms") is not None:
        config["kernel_transforms"] = [
            from_config(c)
            for c in config["kernel_transforms"]]
        # The flags beside the record only describe it: one edited by hand
        # would be ignored, so it is refused.
        described = flags_of(
            config["kernel_transforms"])
        for flag in FLAG_DEFAULTS:
            if flag in config and config.pop(flag) != described[flag]:
                raise ValueError(
                    "config[%r] contradicts config['kernel_transforms'], "
                    "which makes %s=%r: edit the record, or drop "
                    "'kernel_transforms' to build from the flags"
                    % (flag, flag, described[flag]))
    return config


def check_lstm_arguments(num_units, num_proj, cell_clip, proj_clip,
                          forget_bias, num_unit_shards, num_proj_shards,
                          seed):
    """Checks the ``LSTMCell`` arguments that ``LSTMCell`` itself takes as
    given: every value it computes with on every supported TF version
    passes, as Python arithmetic reads it (a ``True`` clip or forget bias
    is 1, a clip of 0 or below clips to a constant, an infinite clip or
    forget bias is what it is); values it fails on later, from an inner op
    (0 units, ``num_proj=0``, 0 shards, a string; a bool count on TF
    2.21), and a NaN (no clip on 1.x, NaN states on 2.x) are refused
    here.

    Returns:
      The counts as ints and the numbers as floats, in argument order
      (``num_units, num_proj, num_unit_shards, num_proj_shards,
      cell_clip, proj_clip, forget_bias``).

    Raises:
      ValueError: naming the argument.
    """
    # Not True as 1: LSTMCell fails on a bool count on TF 2.21 (a bool
    # TensorShape dimension), so it is no value LSTMCell takes everywhere.
    counts = [check_positive_int(value, name, allow_none=name != "num_units")
              for value, name in ((num_units, "num_units"),
                                  (num_proj, "num_proj"),
                                  (num_unit_shards, "num_unit_shards"),
                                  (num_proj_shards, "num_proj_shards"))]
    reals = [check_number(cell_clip, "cell_clip", allow_none=True),
             check_number(proj_clip, "proj_clip", allow_none=True),
             check_number(forget_bias, "forget_bias")]
    check_int(seed, "seed", allow_none=True)
    return tuple(counts + reals)


def check_quant_arguments(activation, dtype, cell_clip, proj_clip,
                           num_proj, forget_bias):
    """Checks what ``is_quant=True`` computes with: tanh (any falsy
    activation is ``LSTMCell``'s tanh), float32, clips that bound a
    fake-quant range (finite, > 0) and a finite forget bias (folded into
    the quantized bias).

    Raises:
      ValueError: naming the argument and ``is_quant``.
    """
    if activation and activation not in (tf.tanh, tf.nn.tanh, "tanh"):
        raise ValueError("is_quant=True computes tanh (or ReLU with "
                         "quant_activation='hard'); got activation=%r"
                         % (activation,))
    if dtype is not None and tf.as_dtype(dtype).base_dtype != tf.float32:
        raise ValueError("is_quant=True needs float32 (fake-quant ops "
                         "are float32 only); got dtype=%r" % (dtype,))
    for value, name in ((cell_clip, "cell_clip"), (proj_clip if num_proj
                                                   else None, "proj_clip")):
        check_real(value, "%s with is_quant=True (it bounds a fake-quant "
                   "range)" % name, low=0, low_open=True, allow_none=True)
    check_real(forget_bias, "forget_bias with is_quant=True")


def kernel_record(given, seed, updates_collection, flags):
    """The cell's ordered kernel transforms: made from the convenience
    ``flags`` (``kernel.transforms_from_flags``), or the ``given`` list,
    checked and copied.

    Raises:
      ValueError: a bad flag (named); ``given`` not a list of
        KernelTransform, holding a weight fake-quant, or given together
        with flags that make transforms.
    """
    if given is None:
        return transforms_from_flags(
            flags, seed=seed, updates_collection=updates_collection)
    clashes = clashing_flags(flags)
    if clashes:
        raise ValueError("kernel_transforms replaces the transforms that %s "
                         "build; give one or the other" % ", ".join(clashes))
    transforms = list(given)
    for transform in transforms:
        if not isinstance(transform, KernelTransform):
            raise ValueError("kernel_transforms must be KernelTransform "
                             "objects, got %r" % (transform,))
        if isinstance(transform, WeightFakeQuant):
            raise ValueError("kernel_transforms: weight fake-quant is added "
                             "by is_quant=True; leave it out")
    # Copies: one list may configure several cells (a MultiRNNCell).
    return [transform.copy() for transform in transforms]
