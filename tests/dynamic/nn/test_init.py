"""dy.nn.init: PyTorch's fans and gains, bounds and spreads of each initializer, seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic.nn import init


def test_fans_and_gains():
    assert init._calculate_fan_in_and_fan_out(dy.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(dy.empty(16, 8, 3, 2)) == (48, 96)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(dy.empty(4))
    assert init.calculate_gain("linear") == init.calculate_gain("conv2d") == 1.0
    assert init.calculate_gain("sigmoid") == 1.0
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")


def spread(t):
    v = t.detach().numpy()
    return np.abs(v).max(), v.std()


def test_uniform_bounds_and_normal_spreads():
    dy.manual_seed(0)
    w = dy.empty(200, 300)
    fan_in, fan_out = 300, 200
    bound = math.sqrt(6 / (fan_in + fan_out))
    top, _ = spread(init.xavier_uniform_(w))
    assert bound * 0.99 < top <= bound
    _, std = spread(init.xavier_normal_(w, gain=2.0))
    assert abs(std / (2.0 * math.sqrt(2 / (fan_in + fan_out))) - 1) < 0.02
    top, _ = spread(init.kaiming_uniform_(w, a=math.sqrt(5)))
    assert 1 / math.sqrt(fan_in) * 0.99 < top <= 1 / math.sqrt(fan_in)
    _, std = spread(init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"))
    assert abs(std / (math.sqrt(2) / math.sqrt(fan_out)) - 1) < 0.02
    top, _ = spread(init.uniform_(w, -0.5, 0.5))
    assert 0.49 < top <= 0.5
    v = init.normal_(w, 3.0, 0.5).numpy()
    assert abs(v.mean() - 3) < 0.01 and abs(v.std() - 0.5) < 0.01
    assert init.constant_(w, 0.25).numpy().max() == 0.25 and init.zeros_(w).numpy().max() == 0
    assert init.ones_(w).numpy().min() == 1.0
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(w, mode="fan_avg")


def test_initializers_fill_parameters_in_place_without_recording_and_follow_the_seed():
    from staticgrad.dynamic import nn
    p = nn.Parameter(dy.empty(3, 4))
    dy.manual_seed(5)
    assert init.kaiming_uniform_(p) is p
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    first = p.detach().numpy().copy()
    dy.manual_seed(5)
    np.testing.assert_array_equal(init.kaiming_uniform_(p).detach().numpy(), first)
