"""The problem the optimizer tests train on: a least-squares fit `mean((x @ w + b - y)^2)` of
a (3, 2) weight and a (2,) bias, in two parameter groups (w at the optimizer's lr, b at
LR_B), in float64 so that the dynamic run and the NumPy reference agree to rounding.

`dynamic_run` trains with a dy.optim optimizer; `numpy_run` with an update written by hand
from PyTorch's formulas, on gradients also written by hand."""

from __future__ import annotations

import numpy as np

import staticgrad.dynamic as dy

_rng = np.random.default_rng(7)
X = _rng.standard_normal((6, 3))
Y = _rng.standard_normal((6, 2))
W0 = _rng.standard_normal((3, 2))
B0 = _rng.standard_normal(2)
LR_B = 0.03


def gradients(w: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """d loss / d w and d loss / d b, by hand."""
    r = X @ w + b - Y
    return [2 * X.T @ r / r.size, 2 * r.sum(axis=0) / r.size]


def loss_of(w, b):
    r = dy.tensor(X) @ w + b - dy.tensor(Y)
    return (r * r).mean()


def make_params():
    return dy.tensor(W0, requires_grad=True), dy.tensor(B0, requires_grad=True)


def dynamic_run(make_optimizer, steps: int = 5) -> list[list[np.ndarray]]:
    """[w, b] after each step of `make_optimizer(param_groups)`."""
    w, b = make_params()
    opt = make_optimizer([{"params": [w]}, {"params": [b], "lr": LR_B}])
    after = []
    for _ in range(steps):
        opt.zero_grad()
        loss_of(w, b).backward()
        opt.step()
        after.append([w.detach().numpy().copy(), b.detach().numpy().copy()])
    return after


def numpy_run(update, lr: float, steps: int = 5) -> list[list[np.ndarray]]:
    """[w, b] after each step of `update(param, grad, lr, state, t)` (t from 1), which
    returns the new param and may keep what it likes in its dict `state`."""
    params, states, after = [W0.copy(), B0.copy()], [{}, {}], []
    for t in range(1, steps + 1):
        grads = gradients(*params)
        params = [update(p, g, rate, s, t)
                  for p, g, rate, s in zip(params, grads, (lr, LR_B), states)]
        after.append([p.copy() for p in params])
    return after


def assert_runs_agree(got, want, what: str, rtol=1e-12, atol=1e-12):
    for step, (got_params, want_params) in enumerate(zip(got, want), 1):
        for name, g, w in zip("wb", got_params, want_params):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                       err_msg=f"{what}: {name} after step {step}")
