"""A traced training step's update (`Traced.train_step` uses this): a graph optimizer
(`sg.train.*`) as given, or a `dy.optim` optimizer's own update rule written as graph ops.

    dy.optim.SGD       momentum, dampening, nesterov, weight_decay, maximize
    dy.optim.Adam      betas, eps, weight_decay, amsgrad, maximize
    dy.optim.AdamW     the same, the weight decay apart from the gradient
    dy.optim.RMSprop   alpha, eps, weight_decay, momentum, centered, maximize
    dy.optim.Adagrad   lr_decay, weight_decay, initial_accumulator_value, eps, maximize

A dy.optim optimizer is not mapped to the graph's TF1 optimizer of the same name, whose
formulas differ (TF1's Adam puts eps outside the bias correction, its RMSProp starts at ones
with eps inside the square root, its Adagrad has no eps): each PyTorch rule is written again
with graph ops (trace_optim_rules.py), with the same arithmetic, so that N traced steps give
the parameters N eager steps give (bit for bit in the tests; where the graph sums a gradient
in another order than the tape does, to rounding).

- Per parameter group, with the group's hyper-parameters. Its learning rate is fed at each
  step from the optimizer's group (`feeds`), so a scheduler's changes reach the graph as they
  reach the eager step; the other hyper-parameters (betas, momentum, weight_decay...) are
  compiled in as they are when `train_step` is called (a step raises ValueError, naming it,
  if one has changed since).
- The optimizer's state (step counts, moment and momentum buffers) becomes graph variables
  named by PyTorch's state names, e.g. "fc1.weight/Adam/exp_avg"; what the eager optimizer
  already holds (after some eager steps) is loaded into them (`slot_values`), so that traced
  steps continue the eager ones. `write_back` puts the graph's state back into the optimizer.
- As eagerly, a parameter that the loss does not reach (no gradient) is not updated, and its
  state does not advance.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from .. import dtypes as _dt
from ..autodiff import gradients
from ..ops.conversion import convert_to_tensor
from ..ops.indexed_slices import IndexedSlices, to_dense
from ..ops.state_ops import placeholder_with_default
from ..train.optimizer import Optimizer as GraphOptimizer
from ..variables import Variable
from . import trace_optim_rules as rules
from .creation import tensor
from .optim.adagrad import Adagrad
from .optim.adam import Adam
from .optim.optimizer import Optimizer as DynamicOptimizer
from .optim.rmsprop import RMSprop
from .optim.sgd import SGD
from .tensor import Tensor

RULES = {SGD: rules.sgd, Adam: rules.adam, RMSprop: rules.rmsprop, Adagrad: rules.adagrad}


class GraphUpdate(NamedTuple):
    """What `graph_update` adds to the graph."""

    ops: list                # the update ops, one per parameter (or the graph optimizer's)
    slot_values: list        # [(slot variable, the value it starts from)]: the eager state
    feeds: list              # [(placeholder, a function giving its value at each step)]
    states: list             # [(dynamic parameter, its ParamState)]


def graph_update(optimizer, loss, variables: list[Variable],
                 parameters: list[tuple[Tensor, Variable]]) -> GraphUpdate:
    """The ops that update `variables` from the gradients of `loss` by `optimizer`'s rule.
    `parameters` pairs the dynamic tensors (a dy.optim optimizer's params) with their
    variables; a dy.optim optimizer updates those of its parameters that the graph has."""
    if isinstance(optimizer, GraphOptimizer):
        return GraphUpdate([optimizer.minimize(loss, var_list=variables)], [], [], [])
    rule = _rule_of(optimizer)
    variable_of = {id(t): var for t, var in parameters}
    groups = []
    for index, group in enumerate(optimizer.param_groups):
        pairs = [(p, variable_of[id(p)]) for p in group["params"] if id(p) in variable_of]
        if pairs:
            groups.append((index, group, pairs))
    if not groups:
        raise ValueError("none of the optimizer's parameters is a variable of the traced graph "
                         "(trace with module=, or read the parameters in the traced function)")
    var_list = [var for _, _, pairs in groups for _, var in pairs]
    grads = {var: to_dense(g, warn=False) if isinstance(g, IndexedSlices) else g
             for var, g in zip(var_list, gradients(loss, var_list))}  # (eagerly: dense)
    computed = [g.op for g in grads.values() if g is not None]
    name = type(optimizer).__name__
    graph = loss.graph
    ops, feeds, states = [], [], []
    for index, group, pairs in groups:
        with graph.name_scope(f"{name}_group{index}"):
            lr = placeholder_with_default(convert_to_tensor(float(group["lr"]),
                                                            dtype=_dt.float64), (), name="lr")
        feeds.append((lr, _learning_rate(optimizer, index, group)))
        for p, var in pairs:
            grad = grads[var]
            if grad is None:
                continue
            state = rules.ParamState(var, name, optimizer.state.get(p, {}))
            with graph.name_scope(f"{name}/update_{var.op.name}"), \
                    graph.control_dependencies(computed):  # (every gradient, then the writes)
                ops.append(rule(group, lr, grad, var, state))
            states.append((p, state))
    slot_values = [loaded for _, state in states for loaded in state.loaded]
    return GraphUpdate(ops, slot_values, feeds, states)


def _rule_of(optimizer):
    if not isinstance(optimizer, DynamicOptimizer):
        raise TypeError(f"train_step takes an sg.train optimizer or a dy.optim one, got "
                        f"{type(optimizer).__name__}")
    kind = type(optimizer)
    base = next((k for k in kind.__mro__ if k in RULES), None)
    if base is None or kind._update is not base._update:
        raise NotImplementedError(
            f"train_step: {kind.__name__} has an update rule of its own (its _update), which "
            "train_step cannot write as graph ops; it knows those of "
            f"{', '.join(k.__name__ for k in RULES)} and AdamW (or pass an sg.train optimizer)")
    if base is Adam:  # (AdamW: Adam with the weight decay apart from the gradient)
        return partial(rules.adam, decoupled=optimizer._decoupled)
    return RULES[base]


def _learning_rate(optimizer, index: int, group: dict):
    """A function giving group `index`'s lr as it is now (load_state_dict replaces the
    groups), raising ValueError if another of its hyper-parameters is no longer the one
    compiled into the graph."""
    compiled = {k: v for k, v in group.items() if k not in ("params", "lr", "initial_lr")}

    def learning_rate() -> float:
        now = optimizer.param_groups[index]
        for name, value in compiled.items():
            if now.get(name, value) != value:
                raise ValueError(
                    f"train_step: {type(optimizer).__name__}'s param group {index} has "
                    f"{name}={now.get(name)!r} now, {value!r} when its step was compiled; only "
                    "the lr reaches the graph at each step: call train_step again")
        return float(now["lr"])
    return learning_rate


def write_back(states: list, optimizer, session) -> None:
    """Put the optimizer state that `session` holds for each (parameter, ParamState) into the
    dy.optim `optimizer`'s state, as its own step would have left it."""
    for p, state in states:
        if not state.slots:
            continue  # (SGD without momentum keeps none)
        values = {name: session.read_variable(slot) for name, slot in state.slots.items()}
        held = optimizer.state[p]
        for name, value in values.items():
            if name.startswith("has_"):
                continue
            if not values.get(f"has_{name}", True):
                held.pop(name, None)  # (SGD's momentum buffer, before its first step)
            elif name == "step":
                held[name] = tensor(float(value))
            else:
                held[name] = tensor(value, dtype=p.dtype)
