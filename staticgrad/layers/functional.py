"""TF1's functional layers (`tf.layers.dense` and friends), part of `sg.layers`.

A layer opens a variable scope (`dense`, `dense_1`, ... unless named), creates its variables
with `get_variable` (so `reuse=True` shares them), and applies ops in that scope:

    h = sg.layers.dense(x, 512, activation=sg.nn.relu)     # variables dense/kernel, dense/bias
"""

from __future__ import annotations

import math
import operator

from .. import initializers
from ..graph import GraphKeys, get_default_graph
from ..ops import math_ops as M
from ..ops import nn_ops as nn
from ..ops.array_ops import reshape, shape
from ..ops.conversion import convert_to_tensor, is_tensor_like
from ..ops.join_ops import stack
from ..variable_scope import get_variable, variable_scope


def _layer_scope(name, default_name, reuse):
    """A layer's variable scope: `name` (a str, or a VariableScope to enter again: a layer
    object's), else a unique `default_name` (`dense_1`...); a layer reusing variables
    without a name reuses the plain `default_name` scope (TF1's rule)."""
    if reuse and name is None:
        return variable_scope(default_name, reuse=reuse)
    return variable_scope(name, default_name=default_name, reuse=reuse)


def _weights(name, shape_, dtype, initializer, regularizer, trainable, default_init):
    return get_variable(name, shape_, dtype=dtype,
                        initializer=initializer if initializer is not None else default_init,
                        regularizer=regularizer, trainable=trainable)


def _activity(out, activation, activity_regularizer):
    if activation is not None:
        out = activation(out)
    if activity_regularizer is not None:
        get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES,
                                              activity_regularizer(out))
    return out


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """`activation(inputs @ kernel + bias)` over the last axis of `inputs`.

    kernel: [in, units], Glorot-uniform by default; bias: [units], zeros by default.
    """
    inputs = convert_to_tensor(inputs)
    dims = inputs.shape.dims
    if dims is None or dims[-1] is None:
        raise ValueError(f"dense: the last dimension of the inputs must be known, got "
                         f"{inputs.name} of shape {inputs.shape} (created at "
                         f"{inputs.op.where()})")
    try:
        n_units = operator.index(units)  # a NumPy integer is fine
    except TypeError:
        n_units = 0
    if n_units <= 0:
        raise ValueError(f"dense: units must be a positive integer, got {units!r}")
    units = n_units
    with _layer_scope(name, "dense", reuse):
        kernel = _weights("kernel", [dims[-1], units], inputs.dtype, kernel_initializer,
                          kernel_regularizer, trainable,
                          initializers.glorot_uniform_initializer())
        out = M.matmul(inputs, kernel)
        if use_bias:
            bias = _weights("bias", [units], inputs.dtype, bias_initializer, bias_regularizer,
                            trainable, initializers.zeros_initializer())
            out = nn.bias_add(out, bias)
        return _activity(out, activation, activity_regularizer)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """A 2-D convolution layer over NHWC inputs (kernel [kh, kw, in, filters] and a bias)."""
    if data_format != "channels_last":
        raise ValueError(f"conv2d layer: only data_format='channels_last' (NHWC) is supported, "
                         f"got {data_format!r}")
    inputs = convert_to_tensor(inputs)
    dims = inputs.shape.dims
    if dims is None or len(dims) != 4 or dims[-1] is None:
        raise ValueError(f"conv2d layer: inputs must be [batch, height, width, channels] with "
                         f"known channels, got {inputs.name} of shape {inputs.shape}")
    kh, kw = _pair(kernel_size, "kernel_size")
    with _layer_scope(name, "conv2d", reuse):
        kernel = _weights("kernel", [kh, kw, dims[-1], filters], inputs.dtype,
                          kernel_initializer, kernel_regularizer, trainable,
                          initializers.glorot_uniform_initializer())
        out = nn.conv2d(inputs, kernel, strides=[1, *_pair(strides, "strides"), 1],
                        padding=padding.upper(),
                        dilations=[1, *_pair(dilation_rate, "dilation_rate"), 1])
        if use_bias:
            bias = _weights("bias", [filters], inputs.dtype, bias_initializer, bias_regularizer,
                            trainable, initializers.zeros_initializer())
            out = nn.bias_add(out, bias)
        return _activity(out, activation, activity_regularizer)


def _pair(value, what):
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and v > 0 for v in pair):
        raise ValueError(f"{what} must be a positive int or a pair of them, got {value!r}")
    return pair


def _pooling(fn, default_name, inputs, pool_size, strides, padding, data_format, name):
    if data_format != "channels_last":
        raise ValueError(f"{default_name}: only data_format='channels_last' is supported")
    ph, pw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides, "strides")
    return fn(inputs, [1, ph, pw, 1], [1, sh, sw, 1], padding.upper(),
              name=name or default_name)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max pooling over `pool_size` windows of NHWC `inputs` (padding "valid" or "same")."""
    return _pooling(nn.max_pool, "max_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    """Average pooling over `pool_size` windows of NHWC `inputs`, padding left out of the
    mean."""
    return _pooling(nn.avg_pool, "average_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def flatten(inputs, name=None, data_format="channels_last"):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""
    inputs = convert_to_tensor(inputs)
    dims = inputs.shape.dims
    if dims is None:
        raise ValueError(f"flatten: the rank of {inputs.name} must be known")
    rest = dims[1:]
    if all(d is not None for d in rest):
        target = [-1, math.prod(rest)]
    else:
        target = stack([shape(inputs)[0], -1])
    return reshape(inputs, target, name=name or "flatten")


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Dropout when `training` (a bool, or a boolean tensor such as a placeholder), else the
    identity. With a tensor, one graph serves both: the rate is 0 when not training."""
    if not is_tensor_like(training):
        if not training:
            return M.identity(inputs, name=name or "dropout")
        return nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed,
                          name=name or "dropout")
    inputs = convert_to_tensor(inputs)
    effective = M.where(training, convert_to_tensor(rate, dtype=inputs.dtype),
                        convert_to_tensor(0.0, dtype=inputs.dtype))
    return nn.dropout(inputs, rate=effective, noise_shape=noise_shape, seed=seed,
                      name=name or "dropout")
