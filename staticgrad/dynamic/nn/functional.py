"""A small part of PyTorch's `torch.nn.functional`, on the registry's ops.

>>> import staticgrad.dynamic.nn.functional as F                  # doctest: +SKIP
>>> loss = F.cross_entropy(F.linear(x, w, b), labels)              # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from ... import _namespace
from .. import creation
from .. import functions as _f
from ..dispatch import run_operation

__all__ = [
    "binary_cross_entropy_with_logits", "cross_entropy", "dropout", "elu", "l1_loss",
    "leaky_relu", "linear", "log_softmax", "mse_loss", "nll_loss", "one_hot", "relu", "relu6",
    "sigmoid", "softmax", "softplus", "tanh",
]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.nn.functional", "torch.nn.functional",
                                      globals())

relu = _f.relu
sigmoid = _f.sigmoid
tanh = _f.tanh
softmax = _f.softmax
log_softmax = _f.log_softmax


def leaky_relu(input, negative_slope=0.01):  # noqa: A002
    """input where positive, else negative_slope * input, elementwise."""
    return _f._op("LeakyRelu", [input], {"alpha": float(negative_slope)})


def elu(input):  # noqa: A002
    """input where positive, else exp(input) - 1, elementwise."""
    return _f._op("Elu", [input])


def softplus(input):  # noqa: A002
    """log(1 + exp(input)), elementwise, computed stably."""
    return _f._op("Softplus", [input])


def relu6(input):  # noqa: A002
    """min(max(input, 0), 6), elementwise."""
    return _f._op("Relu6", [input])


def linear(input, weight, bias=None):  # noqa: A002
    """input @ weight.T + bias (weight: [out_features, in_features])."""
    out = _f.matmul(input, _f.t(weight))
    return out if bias is None else out + bias


def _reduce(loss, reduction):
    if reduction == "mean":
        return _f.mean(loss)
    if reduction == "sum":
        return _f.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input, target, reduction="mean"):  # noqa: A002
    """The squared error, averaged (or summed) over all elements."""
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input, target, reduction="mean"):  # noqa: A002
    """|input - target|, reduced by `reduction` (mean, sum or none)."""
    return _reduce(_f.abs(input - target), reduction)


def cross_entropy(input, target, reduction="mean"):  # noqa: A002
    """Softmax cross-entropy of logits `input` [N, C] against class indices `target` [N] (or
    class probabilities [N, C])."""
    target = _f._tensor(target)
    if target.dtype.is_floating:
        loss = _f._op("SoftmaxCrossEntropyWithLogits", [_f._as(target, input.dtype), input],
                      {"axis": -1})
    else:
        loss = _f._op("SparseSoftmaxCrossEntropyWithLogits", [target, input])
    return _reduce(loss, reduction)


def nll_loss(input, target, reduction="mean"):  # noqa: A002
    """-input[i, target[i]] for log-probabilities `input` [N, C]."""
    target = _f._tensor(target)
    picked = _f.sum(input * _f._op("OneHot", [target], {
        "depth": input.shape[-1], "on_value": 1.0, "off_value": 0.0, "axis": -1,
        "dtype": input.dtype}), dim=-1)
    return _reduce(-picked, reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean"):  # noqa: A002
    """max(x, 0) - x * z + log(1 + exp(-|x|)), stable, for logits x and labels z."""
    x, z = input, _f._as(_f._tensor(target), input.dtype)
    zeros = creation.zeros_like(x)
    nonneg = x >= 0
    relu_x = _f.where(nonneg, x, zeros)
    neg_abs = _f.where(nonneg, -x, x)
    return _reduce(relu_x - x * z + _f.log1p(_f.exp(neg_abs)), reduction)


def dropout(input, p=0.5, training=True):  # noqa: A002
    """Zero each element with probability p and scale the others by 1 / (1 - p)."""
    if not training or p == 0:
        return input
    if not 0 <= p < 1:
        raise ValueError(f"dropout probability has to be in [0, 1), got {p}")
    keep = _f._as(creation.rand(input.shape, dtype=input.dtype) >= p, input.dtype)
    return input * keep * (1.0 / (1.0 - p))


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows for integer class indices."""
    depth = int(np.max(tensor._data)) + 1 if num_classes == -1 else int(num_classes)
    attrs = {"depth": depth, "on_value": 1, "off_value": 0, "axis": -1, "dtype": creation.int64}
    return run_operation("OneHot", [tensor], attrs).outputs[0]

