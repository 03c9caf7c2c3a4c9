"""Adagrad: PyTorch's `torch.optim.Adagrad`.

PyTorch's documented algorithm, per parameter p with gradient g, at step t (from 1):

    g = -g                                         (maximize)
    g = g + weight_decay * p                       (weight_decay != 0)
    lr_t = lr / (1 + (t - 1) * lr_decay)
    s = s + g^2                                    (s starts at initial_accumulator_value)
    p = p - lr_t * g / (sqrt(s) + eps)

(TF1's AdagradOptimizer is this with lr_decay = 0 and eps = 0: see
tests/dynamic/optim/test_graph_parity.py.)

>>> opt = dy.optim.Adagrad(params, lr=0.1, initial_accumulator_value=0.1)   # doctest: +SKIP
"""

from __future__ import annotations

from ..creation import full_like, tensor
from ..functions import sqrt
from .optimizer import Optimizer, check_hyperparameter


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.); state "step" and "sum", made for every parameter at once (as
    PyTorch makes them)."""

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False):
        check_hyperparameter("learning rate", lr)
        check_hyperparameter("lr_decay value", lr_decay)
        check_hyperparameter("weight_decay value", weight_decay)
        check_hyperparameter("initial_accumulator_value value", initial_accumulator_value)
        check_hyperparameter("epsilon value", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      maximize=maximize))

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            if not self.state[p]:
                self.state[p]["step"] = tensor(0.0)
                self.state[p]["sum"] = full_like(p, group["initial_accumulator_value"])

    def _update(self, group, param, grad, state):
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        state["step"].copy_(state["step"] + 1)
        lr_t = group["lr"] / (1 + (state["step"].item() - 1) * group["lr_decay"])
        s = state["sum"].copy_(state["sum"] + grad * grad)
        param.copy_(param - lr_t * grad / (sqrt(s) + group["eps"]))
