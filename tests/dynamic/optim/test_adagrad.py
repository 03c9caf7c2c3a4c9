"""dy.optim.Adagrad against PyTorch's formulas written by hand in NumPy
(tests/dynamic/optim/quadratic.py), in two parameter groups of different lr."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy

from .quadratic import assert_runs_agree, dynamic_run, numpy_run

VARIANTS = [
    {},
    {"lr_decay": 0.1},
    {"initial_accumulator_value": 0.5, "eps": 1e-3},
    {"weight_decay": 0.1, "lr_decay": 0.05, "maximize": True},
]


def adagrad_update(lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                   maximize=False):
    def update(p, g, lr, state, t):
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * p
        lr_t = lr / (1 + (t - 1) * lr_decay)
        state["s"] = state.get("s", initial_accumulator_value) + g * g
        return p - lr_t * g / (np.sqrt(state["s"]) + eps)
    return update


@pytest.mark.parametrize("options", VARIANTS, ids=str)
def test_adagrad_follows_pytorchs_formulas(options):
    got = dynamic_run(lambda groups: dy.optim.Adagrad(groups, lr=0.1, **options))
    want = numpy_run(adagrad_update(**options), 0.1)
    assert_runs_agree(got, want, f"Adagrad {options}", rtol=1e-10, atol=1e-12)


def test_adagrad_makes_its_state_at_once_as_pytorch_does():
    w = dy.tensor([1.0, -2.0], requires_grad=True)
    b = dy.tensor([3.0], requires_grad=True)
    opt = dy.optim.Adagrad([w], initial_accumulator_value=0.25)
    assert opt.state[w]["step"].item() == 0.0 and opt.state[w]["sum"].tolist() == [0.25, 0.25]
    opt.add_param_group({"params": [b], "initial_accumulator_value": 2.0})
    assert opt.state[b]["sum"].tolist() == [2.0]
    assert opt.state_dict()["state"][1]["sum"].tolist() == [2.0]
