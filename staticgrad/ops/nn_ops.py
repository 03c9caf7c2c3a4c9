"""Neural-network ops (`sg.nn`): activations, softmax, and stable cross-entropies.

Softmax, log-softmax and softmax cross-entropy are ops with stable kernels in `runtime`;
`bias_add`, `l2_loss`, `sigmoid_cross_entropy_with_logits` and the sparse cross-entropy
decompose into other ops.
"""

from __future__ import annotations

from .. import _namespace
from .. import dtypes as _dt
from ..graph import name_scope
from . import math_ops as M
from . import vocabulary
from .array_ops import expand_dims
from .attr_types import Axis
from .conversion import convert_to_tensor
from .creation import apply1
from .indexing_ops import one_hot
from .reduction_ops import reduce_sum
from .table import register

# sg.nn is this module: its helper imports (M, apply1, reduce_sum...) are not part of it
__all__ = sorted([
    "avg_pool", "avg_pool2d", "batch_normalization", "bias_add", "conv1d", "conv2d",
    "conv2d_backprop_filter", "conv2d_backprop_input", "conv2d_transpose", "dropout",
    "embedding_lookup", "l2_loss", "log_uniform_candidate_sampler", "nce_loss",
    "in_top_k", "l2_normalize", "leaky_relu", "log_softmax", "max_pool", "max_pool2d", "moments",
    "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
    "sampled_softmax_loss", "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits", "top_k",
] + list(vocabulary.namespace("nn")))
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.nn", "tf.nn", globals())

leaky_relu = M.leaky_relu
# the activations the op vocabulary offers in sg.nn (relu, sigmoid, tanh...): ops/vocabulary.py
_ACTIVATIONS = vocabulary.namespace("nn")
globals().update(_ACTIVATIONS)


def _axis_infer(ctx):
    M.check_kind(ctx, 0, "f")
    rank = ctx.in_shapes[0].ndims
    if rank == 0:
        raise ValueError(f"{ctx.type} needs a tensor of rank >= 1, got a scalar")
    axis = ctx.attrs["axis"]
    if rank is not None and not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {rank}")
    return [(ctx.in_shapes[0], ctx.in_dtypes[0])]


def _softmax_grad(op, g):
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return [y * (g - reduce_sum(g * y, axis=axis, keepdims=True))]


def _log_softmax_grad(op, g):
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return [g - M.exp(y) * reduce_sum(g, axis=axis, keepdims=True)]


register("Softmax", _axis_infer, "rt.softmax({0}, axis={axis})", _softmax_grad, saves=("y0",),
         new_array=True, attrs={"axis": Axis()}, arity=1)
register("LogSoftmax", _axis_infer, "rt.log_softmax({0}, axis={axis})", _log_softmax_grad,
         saves=("y0",),
         new_array=True, attrs={"axis": Axis()}, arity=1)


def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) / sum(exp(logits)) along `axis` (default: the last)."""
    axis = -1 if axis is None and dim is None else (axis if axis is not None else dim)
    return apply1("Softmax", [convert_to_tensor(logits)], {"axis": axis}, name=name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """logits - log(sum(exp(logits))) along `axis` (default: the last)."""
    axis = -1 if axis is None and dim is None else (axis if axis is not None else dim)
    return apply1("LogSoftmax", [convert_to_tensor(logits)], {"axis": axis}, name=name)


def _xent_infer(ctx):
    labels, logits = ctx.in_shapes
    M.check_kind(ctx, 1, "f")
    if ctx.in_dtypes[0] is not ctx.in_dtypes[1]:
        raise TypeError(f"labels have dtype {ctx.in_dtypes[0].name} but logits have "
                        f"{ctx.in_dtypes[1].name}")
    if not labels.is_compatible_with(logits):
        raise ValueError(f"labels of shape {labels} and logits of shape {logits} must have the "
                         "same shape")
    shape = labels.merge_with(logits)
    if shape.dims is None:
        from ..shapes import TensorShape
        return [(TensorShape(None), ctx.in_dtypes[1])]
    if not shape.dims:
        raise ValueError("logits must have rank >= 1")
    axis = ctx.attrs["axis"]
    if not -len(shape.dims) <= axis < len(shape.dims):
        raise ValueError(f"axis {axis} is out of range for logits of shape {shape}")
    axis %= len(shape.dims)
    from ..shapes import TensorShape
    return [(TensorShape(shape.dims[:axis] + shape.dims[axis + 1:]), ctx.in_dtypes[1])]


def _xent_grad(op, g):
    labels, logits = op.inputs
    axis = op.attrs["axis"]
    g = expand_dims(g, axis)
    grad_logits = g * (softmax(logits, axis=axis) - labels)
    grad_labels = g * -log_softmax(logits, axis=axis)
    return [grad_labels, grad_logits]


register("SoftmaxCrossEntropyWithLogits", _xent_infer,
         "rt.softmax_xent({0}, {1}, axis={axis})", _xent_grad, saves=("x0", "x1"), new_array=True,
         attrs={"axis": Axis()}, arity=2)


def softmax_cross_entropy_with_logits_v2(labels=None, logits=None, axis=-1, name=None, dim=None):
    """-sum(labels * log_softmax(logits)) along `axis`; gradients flow into labels too."""
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits needs labels= and logits=")
    axis = dim if dim is not None else axis
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype=logits.dtype)
    return apply1("SoftmaxCrossEntropyWithLogits", [labels, logits], {"axis": axis},
                  name=name)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """As the v2 function, but no gradient flows into labels (TF1's deprecated version)."""
    if _sentinel is not None:
        raise ValueError("pass labels= and logits= by keyword")
    labels = M.stop_gradient(convert_to_tensor(labels, dtype_hint=_dt.float32))
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                axis=dim if axis is None else axis, name=name)


def _sparse_xent_infer(ctx):
    labels, logits = ctx.in_shapes
    M.check_kind(ctx, 0, "i")
    M.check_kind(ctx, 1, "f")
    if logits.dims is not None and labels.dims is not None:
        if len(labels.dims) != len(logits.dims) - 1 or \
                not labels.is_compatible_with(logits.dims[:-1]):
            raise ValueError(f"labels of shape {labels} must have the shape of logits "
                             f"{logits} without its last (class) axis")
        return [(labels.merge_with(logits.dims[:-1]), ctx.in_dtypes[1])]
    return [(labels if labels.dims is not None else logits[:-1], ctx.in_dtypes[1])]


def _sparse_xent_grad(op, g):
    labels, logits = op.inputs
    depth = logits.shape.dims[-1]
    target = one_hot(labels, depth, dtype=logits.dtype)
    return [None, expand_dims(g, -1) * (softmax(logits) - target)]


register("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_infer,
         "rt.sparse_softmax_xent({0}, {1})", _sparse_xent_grad, saves=("x0", "x1"), arity=2)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Cross-entropy against integer class labels (logits: [..., classes], labels: [...])."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("pass labels= and logits= by keyword")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype_hint=_dt.int32)
    if not labels.dtype.is_integer:
        raise TypeError(f"sparse labels must be integers, got {labels.dtype.name}")
    depth = logits.shape.dims[-1] if logits.shape.dims else None
    if depth is None:
        raise ValueError(f"the number of classes (last dim of logits {logits.shape}) must be "
                         "known when the graph is built")
    if labels.shape.ndims is not None and logits.shape.ndims is not None \
            and labels.shape.ndims != logits.shape.ndims - 1:
        raise ValueError(f"labels of shape {labels.shape} must have rank one less than logits "
                         f"of shape {logits.shape}")
    return apply1("SparseSoftmaxCrossEntropyWithLogits", [labels, logits], name=name)


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x and labels z (stable)."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("pass labels= and logits= by keyword")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype=logits.dtype)
    with name_scope(name, "logistic_loss"):
        # TF1's form: both pieces select with one condition, so that at logits == 0 the
        # gradient is sigmoid(0) - labels (maximum and abs would each pick a side of the kink)
        zeros = M.zeros_like(logits)
        nonneg = M.greater_equal(logits, zeros)
        relu_logits = M.where(nonneg, logits, zeros)
        neg_abs_logits = M.where(nonneg, -logits, logits)
        return relu_logits - logits * labels + M.log1p(M.exp(neg_abs_logits))


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, with bias a vector added along the last axis (NHWC)."""
    value = convert_to_tensor(value)
    bias = convert_to_tensor(bias, dtype=value.dtype)
    if bias.shape.ndims not in (1, None):
        raise ValueError(f"bias must be a vector, got shape {bias.shape}")
    if data_format not in (None, "NHWC", "N...C"):
        raise ValueError(f"bias_add supports data_format NHWC only, got {data_format!r}")
    last = value.shape.dims[-1] if value.shape.dims else None
    b = bias.shape.dims[0] if bias.shape.dims else None
    if last is not None and b is not None and last != b:
        raise ValueError(f"bias of shape {bias.shape} does not match the last dimension of "
                         f"value of shape {value.shape}")
    return M.add(value, bias, name=name or "BiasAdd")


def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    t = convert_to_tensor(t)
    with name_scope(name, "L2Loss"):
        return reduce_sum(M.square(t)) * 0.5


from .conv_ops import (  # noqa: E402, F401 - convolution and pooling are part of sg.nn
    avg_pool,
    avg_pool2d,
    conv1d,
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
    max_pool,
    max_pool2d,
)
from .embedding_ops import embedding_lookup  # noqa: E402, F401
from .math_impl import l2_normalize  # noqa: E402, F401
from .nn_impl import (  # noqa: E402, F401 - composite functions, also part of sg.nn
    batch_normalization,
    dropout,
    moments,
)
from .sampled_losses import (  # noqa: E402, F401 - sampled losses are part of sg.nn
    log_uniform_candidate_sampler,
    nce_loss,
    sampled_softmax_loss,
)
from .sort_ops import in_top_k, top_k  # noqa: E402, F401
