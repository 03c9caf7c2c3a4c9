"""A small part of PyTorch's `torch.nn.functional`, on the registry's ops.

>>> import staticgrad.dynamic.nn.functional as F                  # doctest: +SKIP
>>> loss = F.cross_entropy(F.linear(x, w, b), labels)              # doctest: +SKIP
"""

from __future__ import annotations

import math

import numpy as np

from ... import _namespace
from .. import creation
from .. import functions as _f
from ..dispatch import run_operation
from ..mode import no_grad
from ..tensor import Tensor

__all__ = [
    "avg_pool2d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "conv2d", "cross_entropy", "dropout", "elu", "embedding", "gelu", "l1_loss", "leaky_relu",
    "linear", "log_softmax", "max_pool2d", "mse_loss", "nll_loss", "one_hot", "pad", "relu",
    "relu6", "sigmoid", "silu", "softmax", "softplus", "tanh",
]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.nn.functional", "torch.nn.functional",
                                      globals())

relu = _f.relu
sigmoid = _f.sigmoid
tanh = _f.tanh
softmax = _f.softmax
log_softmax = _f.log_softmax


# -- activations --------------------------------------------------------------------------------
def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """input where positive, else negative_slope * input, elementwise."""
    return _maybe_inplace(input, _f._op("LeakyRelu", [input], {"alpha": float(negative_slope)}),
                          inplace)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    """input where positive, else alpha * (exp(input) - 1), elementwise."""
    out = _f._op("Elu", [input])
    if alpha != 1.0:
        out = _f.where(input > 0, input, out * float(alpha))
    return _maybe_inplace(input, out, inplace)


def gelu(input, approximate="none"):  # noqa: A002
    """x * Phi(x), Phi the standard normal CDF: 0.5 * x * (1 + erf(x / sqrt(2))); with
    approximate='tanh', 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))."""
    if approximate == "none":
        return 0.5 * input * (1.0 + _f.ELEMENTWISE["erf"](input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + _f.tanh(inner))
    raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")


def silu(input, inplace=False):  # noqa: A002
    """input * sigmoid(input), elementwise."""
    return _maybe_inplace(input, input * _f.sigmoid(input), inplace)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """log(1 + exp(beta * input)) / beta, elementwise, computed stably (input itself where
    beta * input > threshold)."""
    if beta == 1.0:
        out = _f._op("Softplus", [input])
    else:
        out = _f._op("Softplus", [input * float(beta)]) * (1.0 / beta)
    return _f.where(input * float(beta) > threshold, input, out)


def relu6(input, inplace=False):  # noqa: A002
    """min(max(input, 0), 6), elementwise."""
    return _maybe_inplace(input, _f._op("Relu6", [input]), inplace)


def _maybe_inplace(input, out, inplace):  # noqa: A002
    """`out`, written into `input` when `inplace` (where the dynamic mode allows in-place
    writes: not on tensors that need grad while grad mode is on)."""
    return input.copy_(out) if inplace else out


# -- layers -------------------------------------------------------------------------------------
def linear(input, weight, bias=None):  # noqa: A002
    """input @ weight.T + bias (weight: [out_features, in_features]).

    >>> F.linear(x, w, b)            # doctest: +SKIP
    """
    out = _f.matmul(input, _f.t(weight))
    return out if bias is None else out + bias


def _pair(value, what: str) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    pair = tuple(int(v) for v in value)
    if len(pair) == 1:
        return pair * 2
    if len(pair) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}")
    return pair


def _nhwc(x):
    return _f.permute(x, 0, 2, 3, 1)


def _nchw(x):
    return _f.permute(x, 0, 3, 1, 2)


def _batched(input, fn):  # noqa: A002
    """fn of a 4-D NCHW input; an unbatched CHW input gets a batch of one and loses it after."""
    if input.dim() == 3:
        return _f.squeeze(fn(_f.unsqueeze(input, 0)), 0)
    if input.dim() != 4:
        raise ValueError(f"expected a 3-D (CHW) or 4-D (NCHW) input, got shape {input.shape}")
    return fn(input)


def _conv_padding(padding, kernel, stride, dilation):
    """PyTorch's padding (int, pair, 'valid', 'same') as ((top, bottom), (left, right))."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0), (0, 0))
        if padding != "same":
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             "{'valid', 'same'}")
        if stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        pads = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    ph, pw = _pair(padding, "padding")
    return ((ph, ph), (pw, pw))


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-D cross-correlation of an NCHW input with a [out, in / groups, kH, kW] weight, as
    PyTorch's: the registry's Conv2D (NHWC, as TF1's) between two transposes.

    >>> F.conv2d(x, w, b, stride=2, padding=1)        # doctest: +SKIP
    """
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    kernel = tuple(weight.shape[2:])
    attrs = {"strides": stride, "dilations": dilation,
             "padding": _conv_padding(padding, kernel, stride, dilation)}

    def run(x):
        if x.shape[1] != weight.shape[1] * groups:
            raise RuntimeError(f"conv2d: input of shape {x.shape} has {x.shape[1]} channels, "
                               f"but weight of shape {weight.shape} with groups={groups} "
                               f"expects {weight.shape[1] * groups}")
        xs = _f.chunk(_nhwc(x), groups, 3) if groups > 1 else [_nhwc(x)]
        ws = _f.chunk(weight, groups, 0) if groups > 1 else [weight]
        outs = [_f._op("Conv2D", [xg, _f.permute(wg, 2, 3, 1, 0)], attrs)
                for xg, wg in zip(xs, ws)]
        out = _nchw(outs[0] if groups == 1 else _f.cat(outs, 3))
        return out if bias is None else out + _f.reshape(bias, 1, -1, 1, 1)
    return _batched(input, run)


def _pool_args(kernel_size, stride, padding):
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] else _pair(stride, "stride")
    pad = _pair(padding, "padding")
    if pad[0] * 2 > kernel[0] or pad[1] * 2 > kernel[1]:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={padding}, kernel_size={kernel_size}")
    return kernel, stride, pad


def _pad_hw(x_nhwc, pad, value):
    if pad == (0, 0):
        return x_nhwc
    pairs = Tensor._make(np.array([[0, 0], [pad[0], pad[0]], [pad[1], pad[1]], [0, 0]],
                                  np.int32), creation.int32)
    return _f._op("Pad", [x_nhwc, pairs], {"mode": "CONSTANT", "constant_values": value})


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """The largest value of each kernel_size window of an NCHW input (stride: kernel_size by
    default); padding counts as -inf. dilation, ceil_mode and return_indices are not offered."""
    if dilation not in (1, (1, 1)) or ceil_mode or return_indices:
        raise NotImplementedError("max_pool2d: dilation, ceil_mode and return_indices are not "
                                  "offered in the dynamic mode")
    kernel, stride, pad = _pool_args(kernel_size, stride, padding)
    attrs = {"ksize": kernel, "strides": stride, "padding": "VALID"}
    return _batched(input, lambda x: _nchw(_f._op(
        "MaxPool", [_pad_hw(_nhwc(x), pad, float("-inf"))], attrs)))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """The mean of each kernel_size window of an NCHW input (stride: kernel_size by default);
    zero padding counts in the mean unless count_include_pad=False."""
    if ceil_mode or divisor_override is not None:
        raise NotImplementedError("avg_pool2d: ceil_mode and divisor_override are not offered "
                                  "in the dynamic mode")
    kernel, stride, pad = _pool_args(kernel_size, stride, padding)
    attrs = {"ksize": kernel, "strides": stride, "padding": "VALID"}

    def run(x):
        x = _nhwc(x)
        out = _f._op("AvgPool", [_pad_hw(x, pad, 0.0)], attrs)
        if not count_include_pad and pad != (0, 0):
            ones = creation.ones((1, *x.shape[1:3], 1), dtype=x.dtype)
            out = out / _f._op("AvgPool", [_pad_hw(ones, pad, 0.0)], attrs)
        return _nchw(out)
    return _batched(input, run)


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-5):
    """(input - mean) / sqrt(var + eps) * weight + bias per channel (dim 1). Training: the
    batch's mean and biased variance, and the running statistics (if given) updated in place,
    running = (1 - momentum) * running + momentum * batch (the unbiased variance); otherwise
    the running statistics."""
    dims = (0, *range(2, input.dim()))
    shape = (1, -1) + (1,) * (input.dim() - 2)
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
        mean = _f.mean(input, dims, keepdim=True)
        centered = input - mean
        var = _f.mean(centered * centered, dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(
                        _f.reshape(mean.detach(), -1) * momentum)
                if running_var is not None:
                    running_var.mul_(1 - momentum).add_(
                        _f.reshape(var.detach(), -1) * (momentum * count / (count - 1)))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when not "
                             "training")
        mean, var = _f.reshape(running_mean, shape), _f.reshape(running_var, shape)
        centered = input - mean
    out = centered * _f.ELEMENTWISE["rsqrt"](var + eps)
    if weight is not None:
        out = out * _f.reshape(weight, shape)
    if bias is not None:
        out = out + _f.reshape(bias, shape)
    return out


def embedding(input, weight, padding_idx=None, max_norm=None):  # noqa: A002
    """The rows of `weight` at the integer indices `input`; the row at `padding_idx` gets no
    gradient."""
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm is not offered in the dynamic mode")
    index = _f._tensor(input)
    out = _f._op("GatherV2", [weight, index], {"axis": 0})
    if padding_idx is None:
        return out
    if padding_idx < 0:
        padding_idx += weight.shape[0]
    frozen = _f._op("GatherV2", [weight.detach(), index], {"axis": 0})
    return _f.where(_f.unsqueeze(index == padding_idx, -1), frozen, out)


def pad(input, pad, mode="constant", value=None):  # noqa: A002
    """input padded by `pad` = (left, right) of the last dim, then (top, bottom) of the one
    before...: constant (value, default 0) or reflect."""
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise ValueError(f"Padding length must be divisible by 2 and at most twice the input's "
                         f"dims ({input.dim()}), got {len(pad)}")
    if any(int(p) < 0 for p in pad):
        raise NotImplementedError("pad: negative padding (cropping) is not offered in the "
                                  "dynamic mode")
    pairs = [[0, 0] for _ in range(input.dim())]
    for i in range(len(pad) // 2):
        pairs[input.dim() - 1 - i] = [int(pad[2 * i]), int(pad[2 * i + 1])]
    paddings = Tensor._make(np.array(pairs, np.int32), creation.int32)
    if mode == "constant":
        attrs = {"mode": "CONSTANT", "constant_values": 0 if value is None else value}
    elif mode == "reflect":
        attrs = {"mode": "REFLECT", "constant_values": 0}
    else:
        raise NotImplementedError(f"pad: mode {mode!r} is not offered in the dynamic mode "
                                  "(constant and reflect are)")
    return _f._op("Pad", [input, paddings], attrs)


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero each element with probability p and scale the others by 1 / (1 - p)."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return _maybe_inplace(input, input * 0.0, inplace)
    keep = _f._as(creation.rand(input.shape, dtype=input.dtype) >= p, input.dtype)
    return _maybe_inplace(input, input * keep * (1.0 / (1.0 - p)), inplace)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows for integer class indices."""
    depth = int(np.max(tensor._data)) + 1 if num_classes == -1 else int(num_classes)
    attrs = {"depth": depth, "on_value": 1, "off_value": 0, "axis": -1, "dtype": creation.int64}
    return run_operation("OneHot", [tensor], attrs).outputs[0]


# -- losses -------------------------------------------------------------------------------------
def _reduction(size_average, reduce, reduction):
    """PyTorch's legacy size_average and reduce arguments, as a reduction."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _reduce(loss, reduction, weights=None):
    """loss reduced: its mean (divided by the sum of `weights` when given), sum, or itself."""
    if reduction == "mean":
        return _f.mean(loss) if weights is None else _f.sum(loss) / _f.sum(weights)
    if reduction == "sum":
        return _f.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """(input - target)**2, reduced by `reduction` (mean, sum or none)."""
    diff = input - target
    return _reduce(diff * diff, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """|input - target|, reduced by `reduction` (mean, sum or none)."""
    return _reduce(_f.abs(input - target), _reduction(size_average, reduce, reduction))


def _classes_last(input, target):  # noqa: A002
    """[N, C, d1...] scores as [N * d1..., C], targets [N, d1...] as [N * d1...]; an unbatched
    [C] as [1, C]. Returns them and the shape of a per-element loss."""
    if input.dim() == 1:
        return _f.unsqueeze(input, 0), _f.reshape(target, 1), ()
    if input.dim() == 2:
        return input, target, (input.shape[0],)
    moved = _f.permute(input, 0, *range(2, input.dim()), 1)
    return _f.reshape(moved, -1, input.shape[1]), _f.reshape(target, -1), tuple(target.shape)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
             reduce=None, reduction="mean"):
    """-weight[t] * input[i, t] for log-probabilities `input` [N, C] (or [N, C, d...]) and
    class indices t = target[i]; the mean divides by the sum of the weights, and targets equal
    to ignore_index count for nothing."""
    reduction = _reduction(size_average, reduce, reduction)
    target = _f._tensor(target)
    scores, labels, out_shape = _classes_last(input, target)
    ignored = labels == ignore_index
    safe = _f.where(ignored, 0, labels)
    one_hot_rows = _f._op("OneHot", [safe], {
        "depth": scores.shape[-1], "on_value": 1.0, "off_value": 0.0, "axis": -1,
        "dtype": input.dtype})
    picked = _f.sum(scores * one_hot_rows, dim=-1)
    weights = _f._as(~ignored, input.dtype)
    if weight is not None:
        weights = weights * _f.sum(one_hot_rows * weight, dim=-1)
    loss = _f.reshape(-picked * weights, out_shape)
    return _reduce(loss, reduction, weights)  # (the mean: over the targets not ignored)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of scores `input` [N, C] (or [N, C, d...]) against class indices
    `target` [N] (or class probabilities, of input's shape); with `weight`, `ignore_index` and
    `label_smoothing` as PyTorch's.

    >>> F.cross_entropy(logits, labels)          # doctest: +SKIP
    """
    reduction = _reduction(size_average, reduce, reduction)
    target = _f._tensor(target)
    if target.dtype.is_floating:  # class probabilities
        if weight is not None or label_smoothing:
            raise NotImplementedError("cross_entropy: weight and label_smoothing with class "
                                      "probabilities are not offered in the dynamic mode")
        if input.dim() <= 2:
            loss = _f._op("SoftmaxCrossEntropyWithLogits", [_f._as(target, input.dtype), input],
                          {"axis": -1})
        else:
            loss = -_f.sum(_f.log_softmax(input, 1) * target, dim=1)
        return _reduce(loss, reduction)
    if label_smoothing:
        if weight is not None:
            raise NotImplementedError("cross_entropy: label_smoothing with weight is not "
                                      "offered in the dynamic mode")
        log_probs = _f.log_softmax(input, 1 if input.dim() > 1 else 0)
        nll = nll_loss(log_probs, target, None, None, ignore_index, None, "none")
        scores, labels, out_shape = _classes_last(log_probs, target)
        kept = _f._as(labels != ignore_index, input.dtype)
        smooth = _f.reshape(-_f.mean(scores, dim=-1) * kept, out_shape)
        loss = nll * (1 - label_smoothing) + smooth * label_smoothing
        return _reduce(loss, reduction, kept)
    # the fused op when no target is ignored: a look at the labels' values that records
    # nothing (a trace keeps the path its labels took, as it keeps any Python branch)
    if weight is None and input.dim() == 2 and not np.any(target._data == ignore_index):
        loss = _f._op("SparseSoftmaxCrossEntropyWithLogits", [target, input])
        return _reduce(loss, reduction)
    return nll_loss(_f.log_softmax(input, 1 if input.dim() > 1 else 0), target, weight, None,
                    ignore_index, None, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """-(t * log(x) + (1 - t) * log(1 - x)) for probabilities x, each log clamped to >= -100
    as PyTorch's."""
    z = _f._as(_f._tensor(target), input.dtype)
    log_x = _f.clamp(_f.log(input), min=-100.0)
    log_1mx = _f.clamp(_f.log(1.0 - input), min=-100.0)
    loss = -(z * log_x + (1.0 - z) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,  # noqa: A002
                                     reduce=None, reduction="mean", pos_weight=None):
    """-(pos_weight * t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x))) for logits x,
    computed stably: (1 - t) * x + (1 + (pos_weight - 1) * t) * (log(1 + exp(-|x|)) +
    max(-x, 0))."""
    x, z = input, _f._as(_f._tensor(target), input.dtype)
    nonneg = x >= 0
    zeros = creation.zeros_like(x)
    relu_neg_x = _f.where(nonneg, zeros, -x)
    neg_abs = _f.where(nonneg, -x, x)
    softplus_neg_x = _f.log1p(_f.exp(neg_abs)) + relu_neg_x  # log(1 + exp(-x))
    if pos_weight is None:
        loss = (1.0 - z) * x + softplus_neg_x
    else:
        loss = (1.0 - z) * x + (1.0 + (pos_weight - 1.0) * z) * softplus_neg_x
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))
