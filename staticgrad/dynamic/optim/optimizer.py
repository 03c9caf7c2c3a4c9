"""`Optimizer`: what PyTorch's optimizers share -- parameter groups, per-parameter state,
`zero_grad`, `step(closure)`, and `state_dict` / `load_state_dict` in PyTorch's structure.

A subclass writes one method, `_update(group, param, grad, state)`, the update of one
parameter from its gradient: it runs under `no_grad()`, with dynamic tensors' ops, and writes
the parameter and its state tensors in place (`copy_`), so that other references to them (a
model's parameters, a scheduler's optimizer) see the new values.

>>> opt = dy.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.1}], lr=0.01)  # doctest: +SKIP
>>> opt.zero_grad(); loss_fn().backward(); opt.step()                         # doctest: +SKIP
"""

from __future__ import annotations

import copy
from collections import defaultdict

from ..mode import enable_grad, no_grad
from ..tensor import Tensor


class _Required:
    """The default of a hyperparameter that each group must give (SGD's lr, in old PyTorch)."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """The base of dy.optim's optimizers (PyTorch's `torch.optim.Optimizer`).

    `params` is an iterable of tensors that require grad, or of dicts (parameter groups), each
    with a "params" entry and any hyperparameters that differ from `defaults` for it.
    """

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)  # param -> {name: tensor or number}
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_type_name(params)}")
        groups = _ordered(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters, with its own hyperparameters (the others from
        `defaults`): e.g. to train layers unfrozen part way through training.

        >>> opt.add_param_group({"params": head.parameters(), "lr": 0.1})  # doctest: +SKIP
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {_type_name(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        else:
            params = _ordered(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize dynamic tensors, but one of the "
                                f"params is {_type_name(p)}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = {**param_group, "params": params}
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params):
            raise ValueError("a parameter group holds a parameter twice")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the parameters' gradients: `.grad = None` (the default), or, with
        `set_to_none=False`, zero each `.grad` in place (cut from any graph first)."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def step(self, closure=None):
        """Update every parameter that has a gradient, once. `closure`, if given, is called
        first with grad mode on (it should zero the gradients, compute the loss, call
        backward() and return the loss); step returns what it returned.

        >>> loss.backward(); opt.step()        # doctest: +SKIP
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        state = self.state[p]
                        self._update(group, p, p.grad, state)
                        if not state:  # (an optimizer that keeps none: SGD without momentum)
                            del self.state[p]
        return loss

    def _update(self, group: dict, param: Tensor, grad: Tensor, state: dict) -> None:
        raise NotImplementedError

    # -- saving and restoring -------------------------------------------------------------------
    def state_dict(self) -> dict:
        """{"state": {index: {name: value}}, "param_groups": [{hyperparameters, "params":
        [index...]}]}: parameters are numbered in the order of the groups, as PyTorch numbers
        them; the state's tensors are this optimizer's own (not copies)."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Take the hyperparameters and state of `state_dict` (copies of them), matching its
        parameters to this optimizer's by position. Floating-point state tensors take their
        parameter's dtype (but "step")."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, saved_groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        by_index = {i: p for mine, saved in zip(self.param_groups, saved_groups)
                    for i, p in zip(saved["params"], mine["params"])}
        state: defaultdict = defaultdict(dict)
        for i, values in state_dict["state"].items():
            param = by_index.get(int(i))
            if param is None:
                continue
            state[param] = {name: _state_value(param, name, value)
                            for name, value in values.items()}
        self.state = state
        self.param_groups = [
            {**{k: copy.deepcopy(v) for k, v in saved.items() if k != "params"},
             "params": mine["params"]}
            for mine, saved in zip(self.param_groups, saved_groups)]

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
        return "\n".join(lines) + "\n)"


def _state_value(param: Tensor, name: str, value):
    """A copy of a saved state value, as the state of `param`."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if name != "step" and value.is_floating_point():
        return value.detach().to(param.dtype).clone()
    return value.detach().clone()


def _ordered(params) -> list:
    if isinstance(params, set):
        raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                        "the ordering of tensors in sets will change between runs. Please use a "
                        "list instead.")
    return list(params)


def _type_name(value) -> str:
    return "dynamic Tensor" if isinstance(value, Tensor) else type(value).__name__


def check_hyperparameter(what: str, value: float, low: float = 0.0, high: float | None = None):
    """ValueError (PyTorch's wording: "Invalid learning rate: -1") unless low <= value
    (< high)."""
    if not (low <= value and (high is None or value < high)):
        raise ValueError(f"Invalid {what}: {value}")
