"""dy.nn.utils: clip_grad_norm_ (norm types 2, 1 and inf; the returned total norm) and
clip_grad_value_, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic import nn


def params_with_grads(*grads):
    params = []
    for g in grads:
        p = nn.Parameter(dy.zeros(len(g), dtype=dy.float64))
        p.grad = dy.tensor(np.array(g, dtype=np.float64))
        params.append(p)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm(norm_type):
    grads = [[3.0, -4.0], [12.0]]
    flat = np.concatenate(grads)
    total = np.linalg.norm(flat, ord=norm_type)
    params = params_with_grads(*grads)
    out = nn.utils.clip_grad_norm_(params, max_norm=1.0, norm_type=norm_type)
    np.testing.assert_allclose(out.item(), total)
    scale = 1.0 / (total + 1e-6)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), np.array(g) * scale)
    untouched = params_with_grads([0.1, 0.2])
    nn.utils.clip_grad_norm_(untouched, max_norm=10.0, norm_type=norm_type)
    np.testing.assert_allclose(untouched[0].grad.numpy(), [0.1, 0.2])


def test_clip_grad_value_and_edge_cases():
    params = params_with_grads([3.0, -4.0, 0.5])
    nn.utils.clip_grad_value_(params, 1.0)
    assert params[0].grad.tolist() == [1.0, -1.0, 0.5]
    assert nn.utils.clip_grad_norm_([nn.Parameter(dy.zeros(2))], 1.0).item() == 0.0
    lonely = params_with_grads([2.0])[0]  # a single tensor, not a list
    assert nn.utils.clip_grad_norm_(lonely, 1.0).item() == 2.0
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(params_with_grads([np.inf]), 1.0, error_if_nonfinite=True)
