"""Activations as modules, as PyTorch's: `ReLU`, `Sigmoid`, `Tanh`, `Softmax(dim)`,
`LogSoftmax(dim)`, `LeakyReLU`, `ELU`, `GELU`, `SiLU`, `Softplus`, `ReLU6`.

>>> nn.Sequential(nn.Linear(4, 8), nn.ReLU())          # doctest: +SKIP
"""

from __future__ import annotations

from . import functional as F
from .module import Module


class ReLU(Module):
    """max(x, 0), elementwise."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        out = F.relu(input)
        return input.copy_(out) if self.inplace else out

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU6(ReLU):
    """min(max(x, 0), 6), elementwise."""

    def forward(self, input):  # noqa: A002
        return F.relu6(input, self.inplace)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, input):  # noqa: A002
        return F.sigmoid(input)


class Tanh(Module):
    """tanh(x), elementwise."""

    def forward(self, input):  # noqa: A002
        return F.tanh(input)


class SiLU(ReLU):
    """x * sigmoid(x), elementwise."""

    def forward(self, input):  # noqa: A002
        return F.silu(input, self.inplace)


class Softmax(Module):
    """exp(x) / sum(exp(x)) along `dim`."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.softmax(input, self.dim if self.dim is not None else _legacy_dim(input))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """x - log(sum(exp(x))) along `dim`."""

    def forward(self, input):  # noqa: A002
        return F.log_softmax(input, self.dim if self.dim is not None else _legacy_dim(input))


def _legacy_dim(input) -> int:  # noqa: A002
    """PyTorch's choice when no dim is given (deprecated there): 0 for 0-, 1- and 3-D inputs,
    else 1."""
    return 0 if input.dim() in (0, 1, 3) else 1


class LeakyReLU(Module):
    """x where positive, else negative_slope * x."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):  # noqa: A002
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                          else "")


class ELU(Module):
    """x where positive, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):  # noqa: A002
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x) (the standard normal CDF, through erf); approximate='tanh' for the tanh
    form."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):  # noqa: A002
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta (x where beta * x > threshold)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"
