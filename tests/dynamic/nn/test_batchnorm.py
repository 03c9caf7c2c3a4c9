"""dy.nn BatchNorm1d/2d: batch statistics in training, running statistics (momentum, the
unbiased variance, the cumulative average) over several steps, eval mode, affine and
track_running_stats off, gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic import nn
from tests.conftest import numeric_grad

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("cls, shape", [(nn.BatchNorm2d, (4, 3, 5, 2)),
                                        (nn.BatchNorm1d, (6, 3)),
                                        (nn.BatchNorm1d, (4, 3, 5))])
def test_training_steps_update_running_stats_then_eval_uses_them(cls, shape):
    bn = cls(3, momentum=0.2).double()
    with dy.no_grad():
        bn.weight.copy_(dy.tensor([1.0, 2.0, -1.0]))
        bn.bias.copy_(dy.tensor([0.0, 0.5, 1.0]))
    dims = tuple(d for d in range(len(shape)) if d != 1)
    running_mean, running_var = np.zeros(3), np.ones(3)
    bshape = [1, -1] + [1] * (len(shape) - 2)
    for _ in range(3):
        x = RNG.normal(2.0, 3.0, size=shape)
        mean, var = x.mean(dims), x.var(dims)  # the biased variance normalizes
        n = x.size // 3
        expected = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-5) * \
            np.array([1.0, 2.0, -1.0]).reshape(bshape) + np.array([0, 0.5, 1.0]).reshape(bshape)
        np.testing.assert_allclose(bn(dy.tensor(x)).detach().numpy(), expected, rtol=1e-9,
                                   atol=1e-12)
        running_mean = 0.8 * running_mean + 0.2 * mean
        running_var = 0.8 * running_var + 0.2 * var * n / (n - 1)  # the unbiased one is kept
    np.testing.assert_allclose(bn.running_mean.numpy(), running_mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), running_var, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = RNG.normal(size=shape)
    expected = (x - running_mean.reshape(bshape)) / np.sqrt(running_var.reshape(bshape) + 1e-5) \
        * np.array([1.0, 2.0, -1.0]).reshape(bshape) + np.array([0, 0.5, 1.0]).reshape(bshape)
    np.testing.assert_allclose(bn(dy.tensor(x)).detach().numpy(), expected, rtol=1e-9)
    assert bn.num_batches_tracked.item() == 3  # eval mode leaves the statistics alone


def test_cumulative_average_no_affine_no_tracking():
    bn = nn.BatchNorm1d(2, momentum=None, affine=False).double()
    assert list(bn.parameters()) == []
    xs = [RNG.normal(size=(5, 2)) for _ in range(3)]
    for x in xs:
        bn(dy.tensor(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0))
    free = nn.BatchNorm1d(2, track_running_stats=False).double()
    assert free.running_mean is None and "running_mean" not in free.state_dict()
    x = RNG.normal(size=(5, 2))
    free.eval()  # no running statistics: batch statistics even in eval mode
    np.testing.assert_allclose(free(dy.tensor(x)).detach().numpy(),
                               (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-9)


def test_gradients_against_finite_differences():
    bn = nn.BatchNorm2d(2).double()
    with dy.no_grad():
        bn.weight.copy_(dy.tensor([1.5, -0.5]))
    x = RNG.normal(size=(3, 2, 2, 2))
    target = RNG.normal(size=x.shape)
    xt = dy.tensor(x, requires_grad=True)
    (bn(xt) * dy.tensor(target)).sum().backward()

    def loss(v, w=(1.5, -0.5)):
        w = np.asarray(w)
        mean, var = v.mean((0, 2, 3), keepdims=True), v.var((0, 2, 3), keepdims=True)
        return float((((v - mean) / np.sqrt(var + 1e-5)) * w.reshape(1, -1, 1, 1)
                      * target).sum())
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(loss, x), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(bn.weight.grad.numpy(),
                               numeric_grad(lambda w: loss(x, w), np.array([1.5, -0.5])),
                               rtol=1e-6)
    np.testing.assert_allclose(bn.bias.grad.numpy(), target.sum((0, 2, 3)), rtol=1e-10)


def test_checks_and_repr():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(dy.zeros(2, 3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(dy.zeros(1, 3))
    assert repr(nn.BatchNorm2d(3)) == \
        \
        "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    bn = nn.BatchNorm1d(4)
    assert bn.weight.tolist() == [1.0] * 4 and bn.bias.tolist() == [0.0] * 4
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
