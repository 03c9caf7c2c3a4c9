"""`RNNCell`, `LSTMCell`, `GRUCell`: one step of a recurrent layer, with PyTorch's parameter
names and shapes (weight_ih [gates * hidden, input], weight_hh [gates * hidden, hidden],
bias_ih, bias_hh), gate order and equations; all drawn from U(+-1/sqrt(hidden_size)).

>>> cell = nn.LSTMCell(10, 20)                        # doctest: +SKIP
>>> h, c = cell(x, (h, c))                            # doctest: +SKIP
"""

from __future__ import annotations

import math

from .. import creation
from .. import functions as _f
from . import functional as F
from . import init
from .linear import _empty
from .module import Module


class _CellBase(Module):
    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rows = self._gates * hidden_size
        self.weight_ih = _empty(rows, input_size, device=device, dtype=dtype)
        self.weight_hh = _empty(rows, hidden_size, device=device, dtype=dtype)
        if bias:
            self.bias_ih = _empty(rows, device=device, dtype=dtype)
            self.bias_hh = _empty(rows, device=device, dtype=dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _projections(self, input, hx):  # noqa: A002
        """(x @ W_ih.T + b_ih, h @ W_hh.T + b_hh)."""
        return F.linear(input, self.weight_ih, self.bias_ih), \
            F.linear(hx, self.weight_hh, self.bias_hh)

    def _zeros(self, input):  # noqa: A002
        return creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)

    def _batched(self, input, hx):  # noqa: A002
        """input as a batch; whether it had none (a 1-D input: one sample)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        return (_f.unsqueeze(input, 0), True) if input.dim() == 1 else (input, False)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text


def _batch(h, unbatched):
    return _f.unsqueeze(h, 0) if unbatched and h is not None else h


def _unbatch(h, unbatched):
    return _f.squeeze(h, 0) if unbatched else h


class RNNCell(_CellBase):
    """h' = tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh) (relu with nonlinearity='relu')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity  # (a plain attribute: set before Module.__init__)
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, unbatched = self._batched(input, hx)
        h = _batch(hx, unbatched) if hx is not None else self._zeros(x)
        gi, gh = self._projections(x, h)
        act = _f.tanh if self.nonlinearity == "tanh" else _f.relu
        return _unbatch(act(gi + gh), unbatched)


class LSTMCell(_CellBase):
    """Gates i, f, g, o (in that order in the weights' rows): i, f, o = sigmoid(...), g =
    tanh(...), c' = f * c + i * g, h' = o * tanh(c'); returns (h', c')."""

    _gates = 4

    def forward(self, input, hx=None):  # noqa: A002
        x, unbatched = self._batched(input, hx)
        if hx is None:
            h = c = self._zeros(x)
        else:
            h, c = (_batch(t, unbatched) for t in hx)
        gi, gh = self._projections(x, h)
        i, f, g, o = _f.chunk(gi + gh, 4, 1)
        c_new = _f.sigmoid(f) * c + _f.sigmoid(i) * _f.tanh(g)
        h_new = _f.sigmoid(o) * _f.tanh(c_new)
        return _unbatch(h_new, unbatched), _unbatch(c_new, unbatched)


class GRUCell(_CellBase):
    """Gates r, z, n (in that order): r = sigmoid(x W_ir + b_ir + h W_hr + b_hr), z likewise,
    n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = (1 - z) * n + z * h."""

    _gates = 3

    def forward(self, input, hx=None):  # noqa: A002
        x, unbatched = self._batched(input, hx)
        h = _batch(hx, unbatched) if hx is not None else self._zeros(x)
        gi, gh = self._projections(x, h)
        i_r, i_z, i_n = _f.chunk(gi, 3, 1)
        h_r, h_z, h_n = _f.chunk(gh, 3, 1)
        r, z = _f.sigmoid(i_r + h_r), _f.sigmoid(i_z + h_z)
        n = _f.tanh(i_n + r * h_n)
        return _unbatch((1.0 - z) * n + z * h, unbatched)
