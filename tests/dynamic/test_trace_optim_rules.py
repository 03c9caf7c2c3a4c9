"""The dy.optim update rules written as graph ops (staticgrad/dynamic/trace_optim_rules.py),
against PyTorch's formulas written by hand in NumPy (the references of tests/dynamic/optim/,
on the float64 least-squares problem of tests/dynamic/optim/quadratic.py, in two parameter
groups of different lr): a traced training step of each optimizer and each of its variants."""

from __future__ import annotations

import pytest

import staticgrad.dynamic as dy

from .optim import test_adagrad, test_adam, test_rmsprop, test_sgd
from .optim.quadratic import LR_B, assert_runs_agree, loss_of, make_params, numpy_run

STEPS = 5
CASES = [(dy.optim.SGD, 0.1, options, test_sgd.sgd_update(**options))
         for options in test_sgd.VARIANTS]
CASES += [(dy.optim.Adam, 0.1, options, test_adam.adam_update(**options))
          for options in test_adam.VARIANTS]
CASES += [(dy.optim.AdamW, 0.1, options,
           test_adam.adam_update(**{"weight_decay": 1e-2, **options}, decoupled=True))
          for options in ({}, {"weight_decay": 0.2}, {"amsgrad": True, "maximize": True})]
CASES += [(dy.optim.RMSprop, 0.01, options, test_rmsprop.rmsprop_update(**options))
          for options in test_rmsprop.VARIANTS]
CASES += [(dy.optim.Adagrad, 0.1, options, test_adagrad.adagrad_update(**options))
          for options in test_adagrad.VARIANTS]


def traced_run(kind, lr: float, options: dict, steps: int = STEPS):
    """[w, b] after each traced training step of `kind(groups, lr=lr, **options)`."""
    w, b = make_params()
    traced = dy.trace(lambda: loss_of(w, b))
    assert len(traced.variables) == 2  # w, then b: the order the loss reads them
    optimizer = kind([{"params": [w]}, {"params": [b], "lr": LR_B}], lr=lr, **options)
    step = traced.train_step(optimizer)
    after = []
    for _ in range(steps):
        step()
        after.append([traced.session.read_variable(v) for v in traced.variables])
    return after


@pytest.mark.parametrize("kind, lr, options, update", CASES,
                         ids=[f"{kind.__name__}-{options}" for kind, _, options, _ in CASES])
def test_a_traced_step_follows_pytorchs_formulas(kind, lr, options, update):
    got = traced_run(kind, lr, options)
    want = numpy_run(update, lr, steps=STEPS)
    assert_runs_agree(got, want, f"traced {kind.__name__} {options}", rtol=1e-10, atol=1e-12)
