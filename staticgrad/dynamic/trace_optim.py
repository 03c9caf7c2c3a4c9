"""A traced training step's update: a graph optimizer as given, or a `dy.optim` optimizer
translated to the graph optimizer of the same rule (`Traced.train_step` uses this).

    dy.optim.SGD(lr)                      -> sg.train.GradientDescentOptimizer(lr)
    dy.optim.SGD(lr, momentum)            -> sg.train.MomentumOptimizer(lr, momentum)
    dy.optim.SGD(lr, momentum, nesterov)  -> sg.train.MomentumOptimizer(..., use_nesterov=True)

Without momentum the arithmetic is the same (`p - lr * g`, both ways), so N steps give the
parameters the eager loop gives, bit for bit up to the gradients' summation order. Momentum is
PyTorch's with dampening 0 (`b = momentum * b + g`, `p -= lr * b`), TF1's accumulator too; an
eager momentum buffer the optimizer already holds is loaded into the graph's slot. Nesterov's
update is written `lr * g + lr * momentum * b` in the graph and `lr * (g + momentum * b)`
eagerly: the same up to rounding.
"""

from __future__ import annotations

from ..autodiff import gradients
from ..train.optimizer import Optimizer as GraphOptimizer
from ..train.optimizers import GradientDescentOptimizer, MomentumOptimizer
from ..variables import Variable
from .optim.optimizer import Optimizer as DynamicOptimizer
from .optim.sgd import SGD
from .tensor import Tensor


def graph_update(optimizer, loss, variables: list[Variable],
                 parameters: list[tuple[Tensor, Variable]]) -> tuple[list, list]:
    """(the ops that update `variables` from the gradients of `loss` by `optimizer`'s rule,
    [(slot variable, the value it starts from)] for the optimizer state the eager optimizer
    already had). `parameters` pairs the dynamic tensors (a dy.optim optimizer's params) with
    their variables; a dy.optim optimizer updates those of its parameters that the graph has."""
    if isinstance(optimizer, GraphOptimizer):
        return [optimizer.minimize(loss, var_list=variables)], []
    if not isinstance(optimizer, DynamicOptimizer):
        raise TypeError(f"train_step takes an sg.train optimizer or a dy.optim one, got "
                        f"{type(optimizer).__name__}")
    if not isinstance(optimizer, SGD):
        raise NotImplementedError(
            f"train_step translates dy.optim.SGD only; {type(optimizer).__name__} has no graph "
            "optimizer of the same arithmetic here (sg.train.AdamOptimizer's epsilon is TF1's, "
            "outside the bias correction): pass an sg.train optimizer instead")
    variable_of = {id(t): var for t, var in parameters}
    groups = []
    for group in optimizer.param_groups:
        pairs = [(p, variable_of[id(p)]) for p in group["params"] if id(p) in variable_of]
        if pairs:
            groups.append((group, pairs))
    if not groups:
        raise ValueError("none of the optimizer's parameters is a variable of the traced graph "
                         "(trace with module=, or read the parameters in the traced function)")
    var_list = [var for _, pairs in groups for _, var in pairs]
    grads = dict(zip(var_list, gradients(loss, var_list)))
    updates, slot_values = [], []
    for group, pairs in groups:
        graph_optimizer = _sgd_rule(group)
        updates.append(graph_optimizer.apply_gradients([(grads[var], var) for _, var in pairs]))
        if isinstance(graph_optimizer, MomentumOptimizer):
            for p, var in pairs:  # the eager momentum buffers, where there are some already
                buffer = optimizer.state.get(p, {}).get("momentum_buffer")
                if buffer is not None:
                    slot_values.append((graph_optimizer.get_slot(var, "momentum"),
                                        buffer.detach().numpy().copy()))
    return updates, slot_values


def _sgd_rule(group: dict):
    unsupported = [name for name in ("weight_decay", "dampening", "maximize") if group[name]]
    if unsupported:
        raise NotImplementedError(f"train_step: dy.optim.SGD's {', '.join(unsupported)} has no "
                                  "graph counterpart here (add weight decay to the traced loss)")
    if group["momentum"] == 0:
        return GradientDescentOptimizer(group["lr"])
    return MomentumOptimizer(group["lr"], group["momentum"], use_nesterov=group["nesterov"])

