"""TF1's `tf.layers.batch_normalization`: normalize with the batch's statistics while
training, with moving averages of them otherwise.

    h = sg.layers.batch_normalization(x, training=is_training)    # a bool or a bool tensor
    with sg.control_dependencies(sg.get_collection(sg.GraphKeys.UPDATE_OPS)):
        train = optimizer.minimize(loss)        # (the moving averages move with each step)

Variables, in the layer's scope (`batch_normalization`, `batch_normalization_1`...): gamma
and beta (trainable), moving_mean and moving_variance (not trained; saved). The updates of
the moving averages (`moving -= (moving - batch) * (1 - momentum)`) go to the UPDATE_OPS
collection, as TF1's; with `training` a tensor, they change nothing while it is false. For
4-D inputs normalized over axis 1 or 3, TF1 chooses its fused kernel unless `fused=False`,
and so does this: the moving variance then follows the batch's unbiased variance (n / (n - 1)
times the one the batch is normalized by), as that kernel's does.
"""

from __future__ import annotations

from .. import initializers
from ..graph import GraphKeys, get_default_graph
from ..ops import math_ops as M
from ..ops import nn_impl
from ..ops.array_ops import reshape
from ..ops.array_ops import size as size_of
from ..ops.conversion import convert_to_tensor, is_tensor_like
from ..ops.state_ops import assign_sub
from .functional import _layer_scope, _weights


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                        scale=True, beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """(inputs - mean) / sqrt(variance + epsilon) * gamma + beta over every axis but `axis`
    (see the module's docstring for `training` and the moving averages)."""
    if renorm or virtual_batch_size is not None or adjustment is not None:
        raise ValueError("batch_normalization: renorm, virtual_batch_size and adjustment are "
                         "not offered")
    inputs = convert_to_tensor(inputs)
    dims = inputs.shape.dims
    if dims is None:
        raise ValueError(f"batch_normalization: the rank of {inputs.name} must be known")
    axis = axis % len(dims)
    if dims[axis] is None:
        raise ValueError(f"batch_normalization: axis {axis} of {inputs.name} ({inputs.shape}) "
                         "must be known")
    width, dtype = [dims[axis]], inputs.dtype
    reduce = [i for i in range(len(dims)) if i != axis]
    with _layer_scope(name, "batch_normalization", reuse):
        gamma = _weights("gamma", width, dtype, gamma_initializer, gamma_regularizer, trainable,
                         initializers.ones_initializer()) if scale else None
        beta = _weights("beta", width, dtype, beta_initializer, beta_regularizer, trainable,
                        initializers.zeros_initializer()) if center else None
        moving_mean = _weights("moving_mean", width, dtype, moving_mean_initializer, None,
                               False, initializers.zeros_initializer())
        moving_var = _weights("moving_variance", width, dtype, moving_variance_initializer,
                              None, False, initializers.ones_initializer())
        shape = [dims[axis] if i == axis else 1 for i in range(len(dims))]

        def broadcast(t):
            return None if t is None else reshape(t, shape) if axis != len(dims) - 1 else t

        if is_tensor_like(training) or training:
            mean, variance = nn_impl.moments(inputs, reduce)
            tracked = variance
            if fused is not False and len(dims) == 4 and axis in (1, 3):
                # TF1's fused kernel (its choice for 4-D inputs) moves the average towards
                # the batch's unbiased variance: n / (n - 1) times the one it normalizes by
                n = M.cast(size_of(inputs), dtype) / dims[axis]
                tracked = variance * n / M.maximum(n - 1.0, 1.0)
            rate = convert_to_tensor(1.0 - momentum, dtype=dtype)
            if is_tensor_like(training):  # (one graph for both: batch or moving statistics)
                training = convert_to_tensor(training)
                rate = M.where(training, rate, M.zeros_like(rate))
                mean = M.where(training, mean, moving_mean)
                variance = M.where(training, variance, moving_var)
                tracked = M.where(training, tracked, moving_var)
            g = get_default_graph()
            for var, value in ((moving_mean, mean), (moving_var, tracked)):
                g.add_to_collection(GraphKeys.UPDATE_OPS,
                                    assign_sub(var, (var - value) * rate))
        else:
            mean, variance = moving_mean, moving_var
        return nn_impl.batch_normalization(inputs, broadcast(mean), broadcast(variance),
                                           broadcast(beta), broadcast(gamma), epsilon)
