"""Adam and AdamW: PyTorch's `torch.optim.Adam` and `torch.optim.AdamW`.

PyTorch's documented algorithm, per parameter p with gradient g, at step t (from 1):

    g = -g                                         (maximize)
    g = g + weight_decay * p                       (Adam, weight_decay != 0)
    p = p - lr * weight_decay * p                  (AdamW: decay apart from the gradient)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g^2
    v_max = max(v_max, v)                          (amsgrad; v_max starts at 0)
    p = p - lr / (1 - beta1^t) * m / (sqrt(v or v_max) / sqrt(1 - beta2^t) + eps)

(TF1's AdamOptimizer puts eps outside the bias correction: see tests/dynamic/optim/
test_graph_parity.py for where the two agree.)

>>> opt = dy.optim.AdamW(params, lr=1e-3, weight_decay=1e-2)    # doctest: +SKIP
"""

from __future__ import annotations

import math

from ..creation import tensor, zeros_like
from ..functions import maximum, sqrt
from .optimizer import Optimizer, check_hyperparameter


class Adam(Optimizer):
    """Adam (Kingma & Ba), with L2 weight decay added to the gradient; state "step",
    "exp_avg", "exp_avg_sq" (and "max_exp_avg_sq" with amsgrad)."""

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False):
        check_hyperparameter("learning rate", lr)
        check_hyperparameter("epsilon value", eps)
        check_hyperparameter("beta parameter at index 0", betas[0], 0.0, 1.0)
        check_hyperparameter("beta parameter at index 1", betas[1], 0.0, 1.0)
        check_hyperparameter("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self, group, param, grad, state):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        if not state:
            state["step"] = tensor(0.0)
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(param)
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            if self._decoupled:
                param.copy_(param * (1 - lr * group["weight_decay"]))
            else:
                grad = grad + group["weight_decay"] * param
        state["step"].copy_(state["step"] + 1)
        step = state["step"].item()
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.copy_(beta1 * m + (1 - beta1) * grad)
        v.copy_(beta2 * v + (1 - beta2) * grad * grad)
        if group["amsgrad"]:
            v = state["max_exp_avg_sq"].copy_(maximum(state["max_exp_avg_sq"], v))
        step_size = lr / (1 - beta1 ** step)
        denom = sqrt(v) / math.sqrt(1 - beta2 ** step) + eps
        param.copy_(param - step_size * m / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): the parameters shrink by
    `lr * weight_decay` each step, apart from the gradient's moments."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
