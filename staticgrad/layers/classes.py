"""TF1's layer classes (`tf.layers.Dense` and kin): a layer made once and called on inputs,
its variables created by the first call and shared by the later ones.

    layer = sg.layers.Dense(10, activation=sg.nn.relu)
    a, b = layer(x), layer(y)                 # one kernel, one bias
    layer.kernel, layer.variables             # dense/kernel:0, [kernel, bias]

Each call runs the functional layer of the same name (functional.py, normalization.py) in the
layer's variable scope.
"""

from __future__ import annotations

from ..graph import GraphKeys, get_default_graph
from ..variable_scope import variable_scope
from . import functional as F
from .normalization import batch_normalization


def _all_variables(graph) -> list:
    """The graph's variables, global and local."""
    return [*graph.get_collection(GraphKeys.GLOBAL_VARIABLES),
            *graph.get_collection(GraphKeys.LOCAL_VARIABLES)]


class Layer:
    """A layer: called on inputs (`layer(x)`, `layer.apply(x)`), it builds its variables the
    first time, in a variable scope of its own, and reuses them after."""

    _default_name = "layer"

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        self.trainable, self._name, self.dtype = bool(trainable), name, dtype
        self._variables: list = []
        self.built = False

    def __call__(self, inputs, *args, **kwargs):
        if self.built:  # its own scope again, wherever it is called from
            return self._apply(inputs, self._scope, True, *args, **kwargs)
        with variable_scope(self._name, default_name=self._default_name) as scope:
            self._scope = scope
            graph = get_default_graph()
            before = {id(v) for v in _all_variables(graph)}
            out = self._apply(inputs, scope, None, *args, **kwargs)
            self._variables = [v for v in _all_variables(graph) if id(v) not in before]
        self._name, self.built = scope.name, True
        return out

    def apply(self, inputs, *args, **kwargs):
        return self(inputs, *args, **kwargs)

    def _apply(self, inputs, name, reuse, *args, **kwargs):
        raise NotImplementedError

    @property
    def name(self) -> str:
        return self._name or self._default_name

    @property
    def variables(self) -> list:
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self) -> list:
        return [v for v in self._variables if v.trainable]

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self) -> list:
        return [v for v in self._variables if not v.trainable]

    non_trainable_weights = non_trainable_variables

    def _variable(self, suffix: str):
        for v in self._variables:
            if v.op.name.endswith("/" + suffix):
                return v
        raise AttributeError(f"{type(self).__name__} {self.name!r} has no {suffix} (yet: it "
                             "is made by the first call)")

    def __repr__(self):
        return f"<sg.layers.{type(self).__name__} {self.name!r}>"


def _no_constraints(layer: str, *constraints) -> None:
    if any(c is not None for c in constraints):
        raise ValueError(f"{layer}: kernel_constraint and bias_constraint are not offered "
                         "(apply the constraint to the variable after each training step)")


class Dense(Layer):
    """`activation(inputs @ kernel + bias)` (see sg.layers.dense)."""

    _default_name = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(trainable, name, **kwargs)
        _no_constraints("Dense", kernel_constraint, bias_constraint)
        self.units, self.activation, self.use_bias = units, activation, use_bias
        self._options = dict(kernel_initializer=kernel_initializer,
                             bias_initializer=bias_initializer,
                             kernel_regularizer=kernel_regularizer,
                             bias_regularizer=bias_regularizer,
                             activity_regularizer=activity_regularizer)

    def _apply(self, inputs, name, reuse):
        return F.dense(inputs, self.units, self.activation, self.use_bias,
                       trainable=self.trainable, name=name, reuse=reuse, **self._options)

    kernel = property(lambda self: self._variable("kernel"))
    bias = property(lambda self: self._variable("bias"))


class Conv2D(Layer):
    """A 2-D convolution over NHWC inputs (see sg.layers.conv2d)."""

    _default_name = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable, name, **kwargs)
        _no_constraints("Conv2D", kernel_constraint, bias_constraint)
        self.filters, self.kernel_size = filters, kernel_size
        self._options = dict(strides=strides, padding=padding, data_format=data_format,
                             dilation_rate=dilation_rate, activation=activation,
                             use_bias=use_bias, kernel_initializer=kernel_initializer,
                             bias_initializer=bias_initializer,
                             kernel_regularizer=kernel_regularizer,
                             bias_regularizer=bias_regularizer,
                             activity_regularizer=activity_regularizer)

    def _apply(self, inputs, name, reuse):
        return F.conv2d(inputs, self.filters, self.kernel_size, trainable=self.trainable,
                        name=name, reuse=reuse, **self._options)

    kernel = property(lambda self: self._variable("kernel"))
    bias = property(lambda self: self._variable("bias"))


class _Pooling2D(Layer):
    _function = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size, self.strides = pool_size, strides
        self.padding, self.data_format = padding, data_format

    def _apply(self, inputs, name, reuse):
        return type(self)._function(inputs, self.pool_size, self.strides, self.padding,
                                    self.data_format)


class MaxPooling2D(_Pooling2D):
    """Max pooling over windows of NHWC inputs (see sg.layers.max_pooling2d)."""

    _default_name = "max_pooling2d"
    _function = staticmethod(F.max_pooling2d)


class AveragePooling2D(_Pooling2D):
    """Average pooling over windows of NHWC inputs (see sg.layers.average_pooling2d)."""

    _default_name = "average_pooling2d"
    _function = staticmethod(F.average_pooling2d)


class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""

    _default_name = "flatten"

    def __init__(self, data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = data_format

    def _apply(self, inputs, name, reuse):
        return F.flatten(inputs, data_format=self.data_format)


class Dropout(Layer):
    """Dropout while `training` (a call's argument, a bool or a bool tensor)."""

    _default_name = "dropout"

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def _apply(self, inputs, name, reuse, training=False):
        return F.dropout(inputs, self.rate, self.noise_shape, self.seed, training)


class BatchNormalization(Layer):
    """Batch normalization (see sg.layers.batch_normalization); `training` is a call's
    argument."""

    _default_name = "batch_normalization"

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 trainable=True, name=None, **options):
        super().__init__(trainable, name)
        self._options = dict(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                             scale=scale, **options)

    def _apply(self, inputs, name, reuse, training=False):
        return batch_normalization(inputs, training=training, trainable=self.trainable,
                                   name=name, reuse=reuse, **self._options)

    gamma = property(lambda self: self._variable("gamma"))
    beta = property(lambda self: self._variable("beta"))
    moving_mean = property(lambda self: self._variable("moving_mean"))
    moving_variance = property(lambda self: self._variable("moving_variance"))
