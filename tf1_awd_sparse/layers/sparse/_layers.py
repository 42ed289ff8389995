"""Layer machinery shared by the VD and L0 `FullyConnected` / `Conv2D`.

The technique-specific modules (`variational_dropout.layers`,
`l0_regularization.layers`) only pick their `sparse_layers.techniques`
entry (auxiliary variable, its default initializer, ops, option names) and
spell out their options as constructor arguments.
"""
from tf1_awd_sparse.base.compat import dimension_value, tf

from tf1_awd_sparse.transforms import techniques
from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.base.checks import check_dim, check_tensor, check_training
from tf1_awd_sparse.base.scalar_checks import check_positive_int
from tf1_awd_sparse.base.control_flow import smart_cond
from tf1_awd_sparse.ops.sparse.common import check_sparse_options

_DATA_FORMATS = {"NHWC": "NHWC", "channels_last": "NHWC",
                 "NCHW": "NCHW", "channels_first": "NCHW"}


FULLY_CONNECTED_DOC = """
    Other arguments:
      units: positive int, output width.
      activation: activation function, name or None.
      use_bias: whether to add a bias.
      kernel_initializer: initializer of theta (glorot uniform if None).
      bias_initializer: initializer of the bias (zeros if None).
      trainable, name, **kwargs: as for `tf.layers.Layer`.

    Call: `layer(inputs, training=None)`; inputs [batch, ..., in];
    `training` is a Python bool, a scalar tf.bool tensor or None (= True:
    training is the default, pass False to evaluate).

    Raises:
      ValueError: non-positive `units`, a technique option out of range
        (named); inputs without a known last dimension (at build) or, once
        built, of another depth than the layer was built for.
      TypeError: `training` neither a bool nor a tf.bool tensor; inputs
        not of a float dtype, or not of the layer's dtype once it has one.
"""

CONV2D_DOC = """
    Other arguments:
      filters: positive int, output channels.
      kernel_size: int or 2 ints.
      strides: int or 2 ints.
      padding: 'valid' or 'same' (any case).
      data_format: 'channels_last'/'NHWC' or 'channels_first'/'NCHW'.
      activation, use_bias, kernel_initializer, bias_initializer,
      trainable, name, **kwargs: as for `FullyConnected`.

    Call: `layer(inputs, training=None)`; inputs rank 4 in `data_format`;
    `training` as for `FullyConnected`.

    Raises:
      ValueError: bad `filters`, `kernel_size`, `strides`, `padding`,
        `data_format` or technique option; inputs not rank 4 (at build)
        or, once built, with other channels than the layer was built for.
      TypeError: `training` neither a bool nor a tf.bool tensor; inputs
        as for `FullyConnected`.
"""


def _int_pair(value, name):
    if isinstance(value, int):
        pair = (value, value)
    else:
        try:
            pair = tuple(value)
        except TypeError:
            pair = ()
    if len(pair) != 2 or isinstance(value, str):
        raise ValueError("%s must be an int or 2 ints, got %r" % (name, value))
    for v in pair:
        check_positive_int(v, name)
    return pair


class SparseLayer(tf.layers.Layer):
    """Base of the sparse layers: kernel + auxiliary variable + bias.

    Subclasses set `TECHNIQUE` (a `sparse_layers.techniques` entry) and
    implement `_kernel_shape(input_shape)` and
    `_apply(op_name, inputs, params, **technique_kwargs)`. An
    `aux_initializer` of None is the technique's default initializer.
    """

    TECHNIQUE = None

    def __init__(self, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None,
                 trainable=True, name=None, *, aux_initializer=None,
                 technique_options=None, **kwargs):
        super(SparseLayer, self).__init__(trainable=trainable, name=name,
                                          **kwargs)
        self.activation = tf.keras.activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = tf.keras.initializers.get(
            kernel_initializer or "glorot_uniform")
        self.bias_initializer = tf.keras.initializers.get(
            bias_initializer or "zeros")
        self.aux_initializer = tf.keras.initializers.get(aux_initializer)
        self.technique_options = dict(technique_options or {})
        check_sparse_options(**self.technique_options)
        self.kernel = self.aux = self.bias = None

    def __call__(self, inputs, *args, **kwargs):
        """Checks `inputs` (before the base layer builds variables of
        their dtype) and calls the layer."""
        inputs = check_tensor(inputs, "inputs", kind="float",
                              dtype=self.dtype,
                              dtype_of="the layer's dtype" if self.dtype
                              else None)
        if self.kernel is not None and inputs.shape.ndims is not None:
            axis = self._input_axis(inputs.shape.ndims)
            check_dim(inputs, axis, self.kernel.shape.as_list()[-2],
                      "inputs", "the depth the layer was built for")
        return super(SparseLayer, self).__call__(inputs, *args, **kwargs)

    def _input_axis(self, rank):
        """The axis of inputs of `rank` that the kernel's rows meet."""
        raise NotImplementedError

    def _kernel_shape(self, input_shape):
        raise NotImplementedError

    def _bias_size(self):
        raise NotImplementedError

    def build(self, input_shape):
        """Creates `kernel`, the auxiliary variable and `bias`."""
        shape = self._kernel_shape(tf.TensorShape(input_shape))
        self.kernel = self.add_weight("kernel", shape,
                                      initializer=self.kernel_initializer,
                                      dtype=self.dtype)
        self.aux = self.add_weight(
            self.TECHNIQUE.aux_name, shape, dtype=self.dtype,
            initializer=(self.aux_initializer
                         or self.TECHNIQUE.make_initializer()))
        if self.use_bias:
            self.bias = self.add_weight("bias", [self._bias_size()],
                                        initializer=self.bias_initializer,
                                        dtype=self.dtype)
        techniques.register_pair(self.TECHNIQUE, (self.kernel, self.aux))
        self.built = True

    @_compat.do_not_convert
    def call(self, inputs, training=None):
        """Train op (noise / sampled gates) or eval op, by `training`.

        Args:
          inputs: input tensor.
          training: Python bool, scalar tf.bool tensor, or None (= True);
            with a tensor both branches are built and chosen at run time.

        Returns:
          the layer output.
        """
        training = check_training(training)
        inputs = tf.convert_to_tensor(inputs, dtype=self.dtype)
        params = (self.kernel, self.aux)

        def run(mode):
            return self._apply(mode, inputs, params, **self.TECHNIQUE.select(
                self.technique_options, mode))

        outputs = smart_cond(training, lambda: run("train"),
                                         lambda: run("eval"))
        if self.use_bias:
            outputs = self._add_bias(outputs)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def _add_bias(self, outputs):
        return tf.nn.bias_add(outputs, self.bias)

    def get_config(self):
        """Constructor arguments; `cls.from_config(config)` rebuilds it."""
        config = {
            "activation": tf.keras.activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": tf.keras.initializers.serialize(
                self.kernel_initializer),
            "bias_initializer": tf.keras.initializers.serialize(
                self.bias_initializer),
            self.TECHNIQUE.aux_name + "_initializer":
                tf.keras.initializers.serialize(self.aux_initializer),
        }
        config.update(self.technique_options)
        base_config = super(SparseLayer, self).get_config()
        base_config.update(config)
        return base_config


class FullyConnected(SparseLayer):
    """Dense layer `activation(x @ W + b)` with sparse weights.

    Inputs of rank > 2 are contracted on their last axis (the train noise
    is then shared across the middle axes).
    """

    def __init__(self, units, *args, **kwargs):
        super(FullyConnected, self).__init__(*args, **kwargs)
        self.units = check_positive_int(units, "units")

    def _kernel_shape(self, input_shape):
        if input_shape.ndims is None or input_shape.ndims < 2 \
                or dimension_value(input_shape[-1]) is None:
            raise ValueError("FullyConnected inputs need rank >= 2 and a "
                             "known last dimension, got shape %s"
                             % input_shape)
        return [dimension_value(input_shape[-1]), self.units]

    def _bias_size(self):
        return self.units

    def _input_axis(self, rank):
        return rank - 1

    def _apply(self, mode, inputs, params, **kwargs):
        prefix = "matmul_" if inputs.shape.ndims == 2 else "broadcast_matmul_"
        return getattr(self.TECHNIQUE.nn, prefix + mode)(inputs, params,
                                                         **kwargs)

    def compute_output_shape(self, input_shape):
        """Input shape with its last dimension replaced by `units`."""
        return tf.TensorShape(input_shape)[:-1].concatenate([self.units])

    def get_config(self):
        """Constructor arguments; `cls.from_config(config)` rebuilds it."""
        config = super(FullyConnected, self).get_config()
        config["units"] = self.units
        return config


class Conv2D(SparseLayer):
    """2-D convolution `activation(conv(x, W) + b)` with sparse weights."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", *args, **kwargs):
        super(Conv2D, self).__init__(*args, **kwargs)
        self.filters = check_positive_int(filters, "filters")
        self.kernel_size = _int_pair(kernel_size, "kernel_size")
        self.strides = _int_pair(strides, "strides")
        if str(padding).upper() not in ("SAME", "VALID"):
            raise ValueError("padding must be 'same' or 'valid', got %r"
                             % (padding,))
        self.padding = str(padding).lower()
        if data_format not in _DATA_FORMATS:
            raise ValueError("data_format must be one of %s, got %r"
                             % (sorted(_DATA_FORMATS), data_format))
        self.data_format = data_format
        self._format = _DATA_FORMATS[data_format]

    def _channel_axis(self):
        return 1 if self._format == "NCHW" else -1

    def _kernel_shape(self, input_shape):
        channels = (dimension_value(input_shape[self._channel_axis()])
                    if input_shape.ndims == 4 else None)
        if channels is None:
            raise ValueError("Conv2D inputs need rank 4 and a known channel "
                             "dimension, got shape %s" % input_shape)
        return list(self.kernel_size) + [channels, self.filters]

    def _bias_size(self):
        return self.filters

    def _input_axis(self, rank):
        return self._channel_axis() % rank

    def _op_strides(self):
        if self._format == "NCHW":
            return [1, 1] + list(self.strides)
        return [1] + list(self.strides) + [1]

    def _apply(self, mode, inputs, params, **kwargs):
        return getattr(self.TECHNIQUE.nn, "conv2d_" + mode)(
            inputs, params, self._op_strides(), self.padding.upper(),
            data_format=self._format, **kwargs)

    def _add_bias(self, outputs):
        return tf.nn.bias_add(outputs, self.bias, data_format=self._format)

    def get_config(self):
        """Constructor arguments; `cls.from_config(config)` rebuilds it."""
        config = super(Conv2D, self).get_config()
        config.update({"filters": self.filters,
                       "kernel_size": self.kernel_size,
                       "strides": self.strides, "padding": self.padding,
                       "data_format": self.data_format})
        return config
