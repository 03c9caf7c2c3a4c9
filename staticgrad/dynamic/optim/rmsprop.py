"""RMSprop: PyTorch's `torch.optim.RMSprop`.

PyTorch's documented algorithm, per parameter p with gradient g:

    g = -g                                          (maximize)
    g = g + weight_decay * p                        (weight_decay != 0)
    v = alpha * v + (1 - alpha) * g^2               (v starts at 0)
    m = alpha * m + (1 - alpha) * g; v~ = v - m^2   (centered; m starts at 0), else v~ = v
    b = momentum * b + g / (sqrt(v~) + eps);  p = p - lr * b      (momentum > 0)
    p = p - lr * g / (sqrt(v~) + eps)                              (otherwise)

(TF1's RMSPropOptimizer starts v at 1 and puts eps inside the square root: see
tests/dynamic/optim/test_graph_parity.py.)

>>> opt = dy.optim.RMSprop(params, lr=1e-2, alpha=0.99, centered=True)   # doctest: +SKIP
"""

from __future__ import annotations

from ..creation import tensor, zeros_like
from ..functions import sqrt
from .optimizer import Optimizer, check_hyperparameter


class RMSprop(Optimizer):
    """RMSprop (Hinton); state "step", "square_avg" (and "momentum_buffer" with momentum,
    "grad_avg" when centered)."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False):
        check_hyperparameter("learning rate", lr)
        check_hyperparameter("epsilon value", eps)
        check_hyperparameter("momentum value", momentum)
        check_hyperparameter("weight_decay value", weight_decay)
        check_hyperparameter("alpha value", alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, group, param, grad, state):
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            state["step"] = tensor(0.0)
            state["square_avg"] = zeros_like(param)
            if momentum > 0:
                state["momentum_buffer"] = zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = zeros_like(param)
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        state["step"].copy_(state["step"] + 1)
        square_avg = state["square_avg"].copy_(
            alpha * state["square_avg"] + (1 - alpha) * grad * grad)
        if group["centered"]:
            grad_avg = state["grad_avg"].copy_(alpha * state["grad_avg"] + (1 - alpha) * grad)
            avg = sqrt(square_avg - grad_avg * grad_avg) + group["eps"]
        else:
            avg = sqrt(square_avg) + group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"].copy_(momentum * state["momentum_buffer"]
                                                 + grad / avg)
            param.copy_(param - group["lr"] * buf)
        else:
            param.copy_(param - group["lr"] * grad / avg)
