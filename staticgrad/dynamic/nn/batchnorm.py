"""`BatchNorm1d`, `BatchNorm2d`: PyTorch's batch normalization (with the keyword-only `bias`
and the repr of recent PyTorch), with running statistics (momentum, or a cumulative average
when momentum=None; the variance kept unbiased), batch statistics in training mode and the
running ones in eval mode.

>>> bn = nn.BatchNorm2d(16); y = bn(x); bn.running_mean          # doctest: +SKIP
"""

from __future__ import annotations

from .. import creation
from ..mode import no_grad
from . import functional as F
from . import init
from .linear import _empty
from .module import Module, _check_device


class _BatchNorm(Module):
    _input_dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        _check_device(device)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = _empty(num_features, dtype=dtype)
            if bias:
                self.bias = _empty(num_features, dtype=dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", creation.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", creation.tensor(0))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):  # noqa: A002
        if input.dim() not in self._input_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._input_dims)} input "
                             f"(got {input.dim()}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of [N, C] or [N, C, L] inputs, per channel C."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of [N, C, H, W] inputs, per channel C."""

    _input_dims = (4,)
