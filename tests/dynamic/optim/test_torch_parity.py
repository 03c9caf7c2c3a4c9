"""dy.optim against PyTorch's own torch.optim, where torch is installed: the same float32
model from the same start, several steps, two parameter groups; and the schedulers' lrs."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy

torch = pytest.importorskip("torch")

CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.2, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.05, "betas": (0.8, 0.95)}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.6, "centered": True, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.05,
                 "initial_accumulator_value": 0.3}),
]

_rng = np.random.default_rng(3)
X = _rng.standard_normal((8, 4)).astype(np.float32)
W0 = _rng.standard_normal((4, 3)).astype(np.float32)
B0 = _rng.standard_normal(3).astype(np.float32)


def _train(lib, name, options, steps=6):
    w = lib.tensor(W0.copy(), requires_grad=True)
    b = lib.tensor(B0.copy(), requires_grad=True)
    opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.02}], **options)
    x = lib.tensor(X)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w + b).tanh() ** 2).mean().backward()
        opt.step()
    return [w.detach().numpy(), b.detach().numpy()], opt.state_dict()


@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_the_same_steps_as_torch_optim(name, options):
    got, got_state = _train(dy, name, options)
    want, want_state = _train(torch, name, options)
    for which, g, w in zip("wb", got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6,
                                   err_msg=f"{name} {options} {which}")
    assert [g["params"] for g in got_state["param_groups"]] == \
        [g["params"] for g in want_state["param_groups"]]
    for index, state in want_state["state"].items():
        assert sorted(got_state["state"][index]) == sorted(state), f"{name} state names"
        for key, value in state.items():
            np.testing.assert_allclose(got_state["state"][index][key].numpy(), value.numpy(),
                                       rtol=2e-5, atol=2e-6, err_msg=f"{name} state {key}")
    for mine, theirs in zip(got_state["param_groups"], want_state["param_groups"]):
        assert {k: theirs[k] for k in mine} == mine, f"{name} hyperparameters"


@pytest.mark.parametrize("name, options", [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.01}),
])
def test_the_same_lrs_as_torch_schedulers(name, options):
    lrs = []
    for lib in (dy, torch):
        w = lib.zeros(2, requires_grad=True)
        b = lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.04}], lr=0.1)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **options)
        run = [sched.get_last_lr()]
        for _ in range(22):
            opt.step()
            sched.step()
            run.append(sched.get_last_lr())
        lrs.append(run)
    np.testing.assert_allclose(np.array(lrs[0]), np.array(lrs[1]), rtol=1e-12, err_msg=name)
