"""PyTorch's `torch.nn.utils` gradient clipping: `clip_grad_norm_`, `clip_grad_value_`.

>>> loss.backward()                                                  # doctest: +SKIP
>>> total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # doctest: +SKIP
"""

from __future__ import annotations

import math

from ... import _namespace
from .. import creation
from .. import functions as _f
from ..mode import no_grad
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad.dynamic.nn.utils", "torch.nn.utils", globals())


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients in place so that their total norm (the norm of all of them as one
    vector; norm_type 2, 1, inf...) is at most max_norm; returns the total norm before.

    The scale is max_norm / (total + 1e-6), applied only where it is below 1, as PyTorch's."""
    grads = _grads(parameters)
    if not grads:
        return creation.tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        if math.isinf(norm_type):
            norms = [_f.amax(_f.abs(g)) for g in grads]
            total = norms[0] if len(norms) == 1 else _f.amax(_f.stack(norms))
        else:
            norms = [_f.sum(_f.abs(g) ** norm_type) ** (1.0 / norm_type) for g in grads]
            total = _f.sum(_f.stack(norms) ** norm_type) ** (1.0 / norm_type)
        if error_if_nonfinite and not bool(_f.ELEMENTWISE["isfinite"](total)):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped. To disable "
                               "this error and scale the gradients by the non-finite norm "
                               "anyway, set `error_if_nonfinite=False`")
        coef = _f.clamp(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(_f._as(coef, g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
