"""dy.optim.Adam and AdamW against PyTorch's formulas written by hand in NumPy
(tests/dynamic/optim/quadratic.py), in two parameter groups of different lr."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy

from .quadratic import assert_runs_agree, dynamic_run, numpy_run

VARIANTS = [
    {},
    {"betas": (0.8, 0.99), "eps": 1e-3},
    {"amsgrad": True},
    {"weight_decay": 0.1},
    {"weight_decay": 0.1, "amsgrad": True, "maximize": True},
]


def adam_update(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                maximize=False, decoupled=False):
    beta1, beta2 = betas

    def update(p, g, lr, state, t):
        if maximize:
            g = -g
        if weight_decay and decoupled:
            p = p - lr * weight_decay * p
        elif weight_decay:
            g = g + weight_decay * p
        state["m"] = beta1 * state.get("m", 0.0) + (1 - beta1) * g
        state["v"] = beta2 * state.get("v", 0.0) + (1 - beta2) * g * g
        v = state["v"]
        if amsgrad:
            v = state["v_max"] = np.maximum(state.get("v_max", 0.0), v)
        m_hat = state["m"] / (1 - beta1 ** t)
        v_hat = v / (1 - beta2 ** t)
        return p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return update


@pytest.mark.parametrize("options", VARIANTS, ids=str)
def test_adam_follows_pytorchs_formulas(options):
    got = dynamic_run(lambda groups: dy.optim.Adam(groups, lr=0.1, **options))
    assert_runs_agree(got, numpy_run(adam_update(**options), 0.1), f"Adam {options}")


@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.2}, {"amsgrad": True}], ids=str)
def test_adamw_decays_the_weights_apart_from_the_gradient(options):
    got = dynamic_run(lambda groups: dy.optim.AdamW(groups, lr=0.1, **options))
    want = numpy_run(adam_update(**{"weight_decay": 1e-2, **options}, decoupled=True), 0.1)
    assert_runs_agree(got, want, f"AdamW {options}")


def test_adam_state_and_hyperparameter_checks():
    w = dy.tensor([1.0, -2.0], requires_grad=True)
    opt = dy.optim.Adam([w], amsgrad=True)
    (w * w).sum().backward()
    opt.step()
    opt.step()
    assert sorted(opt.state[w]) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    assert opt.state[w]["step"].item() == 2.0
    assert opt.param_groups[0]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        dy.optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid epsilon value: -1"):
        dy.optim.AdamW([w], eps=-1)
