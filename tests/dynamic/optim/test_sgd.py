"""dy.optim.SGD against PyTorch's SGD formulas written by hand in NumPy (tests/dynamic/optim/
quadratic.py), in two parameter groups of different lr, over several steps."""

from __future__ import annotations

import pytest

import staticgrad.dynamic as dy

from .quadratic import assert_runs_agree, dynamic_run, numpy_run

VARIANTS = [
    {},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.3},
    {"momentum": 0.8, "nesterov": True},
    {"weight_decay": 0.1},
    {"momentum": 0.9, "weight_decay": 0.05, "nesterov": True},
    {"momentum": 0.5, "maximize": True},
]


def sgd_update(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    def update(p, g, lr, state, t):
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            state["buf"] = g.copy() if t == 1 else momentum * state["buf"] + (1 - dampening) * g
            g = g + momentum * state["buf"] if nesterov else state["buf"]
        return p - lr * g
    return update


@pytest.mark.parametrize("options", VARIANTS, ids=str)
def test_sgd_follows_pytorchs_formulas(options):
    got = dynamic_run(lambda groups: dy.optim.SGD(groups, lr=0.1, **options))
    assert_runs_agree(got, numpy_run(sgd_update(**options), 0.1), f"SGD {options}")


def test_sgd_checks_its_hyperparameters():
    w = dy.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        dy.optim.SGD([w], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        dy.optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid momentum value: -0.5"):
        dy.optim.SGD([w], momentum=-0.5)


def test_momentum_state_is_pytorchs():
    w = dy.tensor([1.0, 2.0], requires_grad=True)
    opt = dy.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert dict(opt.state) == {}  # no momentum: no state
    opt = dy.optim.SGD([w], lr=0.1, momentum=0.9)
    opt.step()
    assert list(opt.state[w]) == ["momentum_buffer"]
    assert opt.state[w]["momentum_buffer"].tolist() == w.grad.tolist()  # the first gradient
