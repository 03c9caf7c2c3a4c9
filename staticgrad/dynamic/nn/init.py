"""PyTorch's `torch.nn.init`: fill a tensor in place (recording nothing) with draws from the
dynamic mode's generator (`dy.manual_seed`), with PyTorch's fan computations and gains.

>>> nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5))      # doctest: +SKIP
>>> nn.init.zeros_(layer.bias)                                  # doctest: +SKIP
"""

from __future__ import annotations

import math

from ... import _namespace
from ..mode import no_grad
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.nn.init", "torch.nn.init", globals())

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended scale of weights feeding `nonlinearity`: 1 for linear layers and
    sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu (slope
    `param`, default 0.01), 3/4 for selu.

    >>> calculate_gain("relu")                    # doctest: +SKIP
    1.4142135623730951
    """
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, int | float) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: size(1) and size(0), times the receptive field (the
    product of the dims after the first two, for a convolution's kernel)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive_field = 1
    for d in tensor.shape[2:]:
        receptive_field *= d
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with draws from U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with draws from N(mean, std**2)."""
    with no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def _kaiming_std(tensor, a, mode, nonlinearity) -> float:
    if 0 in tensor.shape:
        return 0.0
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """He: U(-b, b) with b = gain(nonlinearity, a) * sqrt(3 / fan) (fan: fan_in or fan_out).
    What Linear and Conv2d use with a = sqrt(5): b = 1 / sqrt(fan_in)."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """He: N(0, std**2) with std = gain(nonlinearity, a) / sqrt(fan)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))
