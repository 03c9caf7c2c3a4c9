"""dy.optim.RMSprop against PyTorch's formulas written by hand in NumPy
(tests/dynamic/optim/quadratic.py), in two parameter groups of different lr."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy

from .quadratic import assert_runs_agree, dynamic_run, numpy_run

VARIANTS = [
    {},
    {"alpha": 0.9, "eps": 1e-4},
    {"momentum": 0.7},
    {"centered": True},
    {"centered": True, "momentum": 0.5, "weight_decay": 0.1},
    {"weight_decay": 0.2, "maximize": True},
]


def rmsprop_update(alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                   maximize=False):
    def update(p, g, lr, state, t):
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        state["v"] = alpha * state.get("v", 0.0) + (1 - alpha) * g * g
        v = state["v"]
        if centered:
            state["g_avg"] = alpha * state.get("g_avg", 0.0) + (1 - alpha) * g
            v = v - state["g_avg"] ** 2
        if momentum > 0:
            state["b"] = momentum * state.get("b", 0.0) + g / (np.sqrt(v) + eps)
            return p - lr * state["b"]
        return p - lr * g / (np.sqrt(v) + eps)
    return update


@pytest.mark.parametrize("options", VARIANTS, ids=str)
def test_rmsprop_follows_pytorchs_formulas(options):
    got = dynamic_run(lambda groups: dy.optim.RMSprop(groups, lr=0.01, **options))
    want = numpy_run(rmsprop_update(**options), 0.01)
    assert_runs_agree(got, want, f"RMSprop {options}", rtol=1e-10, atol=1e-12)


def test_rmsprop_state_names_are_pytorchs():
    w = dy.tensor([1.0, -2.0], requires_grad=True)
    opt = dy.optim.RMSprop([w], momentum=0.5, centered=True)
    (w * w).sum().backward()
    opt.step()
    assert sorted(opt.state[w]) == ["grad_avg", "momentum_buffer", "square_avg", "step"]
    with pytest.raises(ValueError, match="Invalid alpha value: -0.1"):
        dy.optim.RMSprop([w], alpha=-0.1)
