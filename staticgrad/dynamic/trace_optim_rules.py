"""dy.optim's update rules as graph ops, for `Traced.train_step` (see trace_optim.py).

Each rule is its eager optimizer's `_update` (staticgrad/dynamic/optim/) written again with
graph tensors, line for line and in the same order of operations, so that a traced step
rounds as the eager step does: a hyper-parameter is a Python number in both, converted to the
parameter's dtype where it meets a tensor; the scalars the eager step computes in Python
double precision (Adam's bias corrections, Adagrad's decayed lr) are float64 graph scalars
here, cast to the parameter's dtype where they meet it. The learning rate is a float64 scalar
tensor (`lr`, fed at each step); the other hyper-parameters are the group's numbers.

The optimizer state of a parameter is a set of graph variables (`ParamState`), named by the
eager state's names ("step", "exp_avg", "momentum_buffer"...). A rule reads them, and writes
them with `assign`; each later read uses the assignment's value (or waits on it: a control
dependency), so that a step sees the state of the step before and the parameter is written
last, from the new state. trace_optim.py builds the rules under a control dependency on every
gradient, so that no parameter is written before all the gradients (which read it) are made.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..ops.array_ops import fill
from ..ops.conversion import convert_to_tensor
from ..ops.math_ops import cast, maximum, sqrt, where
from ..ops.state_ops import assign, assign_add
from ..ops.state_ops import group as group_ops
from ..variables import Variable


class ParamState:
    """The optimizer state of one parameter (`var`) as graph variables, made on first use and
    named "<variable>/<optimizer>/<state name>". A variable whose name the eager optimizer's
    state of the parameter (`eager`) holds starts from that value (`loaded`: the values to
    write once the slots are initialized); the others start as PyTorch's state starts."""

    def __init__(self, var: Variable, optimizer_name: str, eager: dict):
        self.var = var
        self.optimizer_name = optimizer_name
        self.eager = eager
        self.slots: dict[str, Variable] = {}
        self.loaded: list[tuple[Variable, np.ndarray]] = []

    def tensor(self, name: str, fill_value: float = 0.0) -> Variable:
        """A slot of the parameter's shape and dtype (PyTorch's `zeros_like(p)` or
        `full_like(p, fill_value)`)."""
        var = self.var
        return self._slot(name, lambda: fill(var.shape.dims, convert_to_tensor(
            fill_value, dtype=var.dtype)), var.dtype)

    def step(self) -> Variable:
        """The step count, a float64 scalar (the eager step's `state["step"].item()`)."""
        return self._slot("step", lambda: convert_to_tensor(0.0, dtype=_dt.float64),
                          _dt.float64)

    def has(self, name: str) -> Variable:
        """A bool scalar slot, "has_<name>": whether the state holds `name` yet (SGD makes its
        momentum buffer at the first step, from the gradient alone)."""
        flag = self._slot(f"has_{name}", lambda: convert_to_tensor(False, dtype=_dt.bool_),
                          _dt.bool_)
        if name in self.eager:
            self.loaded.append((flag, np.array(True)))
        return flag

    def _slot(self, name: str, initial, dtype) -> Variable:
        if name not in self.slots:
            graph = self.var.graph
            with graph.control_dependencies(None), graph.name_scope(None):
                full = graph.unique_name(f"{self.var.op.name}/{self.optimizer_name}/{name}")
                slot = Variable(initial, trainable=False, name=full + "/", dtype=dtype)
            self.slots[name] = slot
            value = self.eager.get(name)
            if value is not None:
                value = value.detach().numpy() if hasattr(value, "detach") else value
                self.loaded.append((slot, np.array(value, dtype=dtype.np)))
        return self.slots[name]


def sgd(group: dict, lr, grad, var: Variable, state: ParamState):
    """dy.optim.SGD's update (staticgrad/dynamic/optim/sgd.py)."""
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        grad = grad + group["weight_decay"] * var
    momentum = group["momentum"]
    writes = []
    if momentum != 0:
        buf, started = state.tensor("momentum_buffer"), state.has("momentum_buffer")
        buf_t = assign(buf, where(started, momentum * buf + (1 - group["dampening"]) * grad,
                                  grad))
        with var.graph.control_dependencies([buf_t.op]):  # (after the read of the flag)
            writes.append(assign(started, True).op)
        grad = grad + momentum * buf_t if group["nesterov"] else buf_t
    writes.append(assign(var, var - cast(lr, var.dtype) * grad).op)
    return group_ops(*writes)


def adam(group: dict, lr, grad, var: Variable, state: ParamState, decoupled: bool = False):
    """dy.optim.Adam's update, AdamW's with `decoupled` (staticgrad/dynamic/optim/adam.py)."""
    (beta1, beta2), eps, dtype = group["betas"], group["eps"], var.dtype
    step = state.step()
    m, v = state.tensor("exp_avg"), state.tensor("exp_avg_sq")
    v_max = state.tensor("max_exp_avg_sq") if group["amsgrad"] else None
    param = var
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        if decoupled:
            param = assign(var, var * cast(1 - lr * group["weight_decay"], dtype))
        else:
            grad = grad + group["weight_decay"] * var
    t = assign_add(step, 1.0)
    m_t = assign(m, beta1 * m + (1 - beta1) * grad)
    v_t = assign(v, beta2 * v + (1 - beta2) * grad * grad)
    if v_max is not None:
        v_t = assign(v_max, maximum(v_max, v_t))
    step_size = cast(lr / (1 - beta1 ** t), dtype)
    denom = sqrt(v_t) / cast(sqrt(1 - beta2 ** t), dtype) + eps
    return assign(var, param - step_size * m_t / denom).op


def rmsprop(group: dict, lr, grad, var: Variable, state: ParamState):
    """dy.optim.RMSprop's update (staticgrad/dynamic/optim/rmsprop.py)."""
    alpha, momentum, eps = group["alpha"], group["momentum"], group["eps"]
    step, square_avg = state.step(), state.tensor("square_avg")
    buf = state.tensor("momentum_buffer") if momentum > 0 else None
    grad_avg = state.tensor("grad_avg") if group["centered"] else None
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        grad = grad + group["weight_decay"] * var
    writes = [assign_add(step, 1.0).op]
    square_avg_t = assign(square_avg, alpha * square_avg + (1 - alpha) * grad * grad)
    if grad_avg is not None:
        grad_avg_t = assign(grad_avg, alpha * grad_avg + (1 - alpha) * grad)
        avg = sqrt(square_avg_t - grad_avg_t * grad_avg_t) + eps
    else:
        avg = sqrt(square_avg_t) + eps
    lr = cast(lr, var.dtype)
    if buf is not None:
        buf_t = assign(buf, momentum * buf + grad / avg)
        writes.append(assign(var, var - lr * buf_t).op)
    else:
        writes.append(assign(var, var - lr * grad / avg).op)
    return group_ops(*writes)


def adagrad(group: dict, lr, grad, var: Variable, state: ParamState):
    """dy.optim.Adagrad's update (staticgrad/dynamic/optim/adagrad.py)."""
    step = state.step()
    total = state.tensor("sum", group["initial_accumulator_value"])
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        grad = grad + group["weight_decay"] * var
    t = assign_add(step, 1.0)
    lr_t = cast(lr / (1 + (t - 1) * group["lr_decay"]), var.dtype)
    total_t = assign(total, total + grad * grad)
    return assign(var, var - lr_t * grad / (sqrt(total_t) + group["eps"])).op
