"""SGD, with momentum (Nesterov's too), dampening and weight decay: PyTorch's `torch.optim.SGD`.

PyTorch's documented algorithm, per parameter p with gradient g, at step t:

    g = -g                                   (maximize)
    g = g + weight_decay * p                 (weight_decay != 0)
    b = g  at t = 1, else  b = momentum * b + (1 - dampening) * g       (momentum != 0)
    g = g + momentum * b  (nesterov), else  g = b                       (momentum != 0)
    p = p - lr * g

>>> opt = dy.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True)   # doctest: +SKIP
"""

from __future__ import annotations

from .optimizer import Optimizer, check_hyperparameter


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum); state "momentum_buffer"."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False):
        check_hyperparameter("learning rate", lr)
        check_hyperparameter("momentum value", momentum)
        check_hyperparameter("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, group, param, grad, state):
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * param
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.clone()
            else:
                buf.copy_(momentum * buf + (1 - group["dampening"]) * grad)
            grad = grad + momentum * buf if group["nesterov"] else buf
        param.copy_(param - group["lr"] * grad)
