"""dy.nn Conv2d, MaxPool2d, AvgPool2d on NCHW tensors: values against hand-written loops
from PyTorch's documented formulas, gradients against finite differences, init and repr."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic import nn
from tests.conftest import numeric_grad

RNG = np.random.default_rng(0)


def conv_reference(x, w, b, stride, pad, dilation=(1, 1)):
    """out[n, o, i, j] = b[o] + sum over c, p, q of x_padded[n, c, i*sh + p*dh, j*sw + q*dw]
    * w[o, c, p, q]: a plain loop."""
    (pt, pb), (pl, pr) = pad
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride[0]:i * stride[0] + dilation[0] * (kh - 1) + 1:dilation[0],
                       j * stride[1]:j * stride[1] + dilation[1] * (kw - 1) + 1:dilation[1]]
            out[:, :, i, j] = np.einsum("ncpq,ocpq->no", patch, w)
    return out + (0 if b is None else b[None, :, None, None])


@pytest.mark.parametrize("stride, padding, pads", [
    (1, 0, ((0, 0), (0, 0))),
    (2, 1, ((1, 1), (1, 1))),
    ((2, 1), (0, 2), ((0, 0), (2, 2))),
    (1, "same", ((1, 1), (1, 1))),
    (1, "valid", ((0, 0), (0, 0))),
])
def test_conv2d_matches_a_hand_loop(stride, padding, pads):
    conv = nn.Conv2d(3, 4, 3, stride=stride, padding=padding).double()
    x = RNG.normal(size=(2, 3, 7, 6))
    expected = conv_reference(x, conv.weight.detach().numpy(), conv.bias.detach().numpy(),
                              conv.stride, pads)
    np.testing.assert_allclose(conv(dy.tensor(x)).detach().numpy(), expected, rtol=1e-10,
                               atol=1e-12)


def test_conv2d_same_with_an_even_kernel_dilation_groups_and_no_bias():
    conv = nn.Conv2d(4, 6, (2, 4), padding="same", bias=False).double()
    x = RNG.normal(size=(1, 4, 5, 6))
    expected = conv_reference(x, conv.weight.detach().numpy(), None, (1, 1), ((0, 1), (1, 2)))
    np.testing.assert_allclose(conv(dy.tensor(x)).detach().numpy(), expected, rtol=1e-10)
    dilated = nn.Conv2d(2, 3, 3, dilation=2, padding=1).double()
    x = RNG.normal(size=(1, 2, 7, 7))
    expected = conv_reference(x, dilated.weight.detach().numpy(), dilated.bias.detach().numpy(),
                              (1, 1), ((1, 1), (1, 1)), (2, 2))
    np.testing.assert_allclose(dilated(dy.tensor(x)).detach().numpy(), expected, rtol=1e-10)
    grouped = nn.Conv2d(4, 6, 3, groups=2).double()
    x = RNG.normal(size=(1, 4, 5, 5))
    w = grouped.weight.detach().numpy()
    expected = np.concatenate([conv_reference(x[:, :2], w[:3], None, (1, 1), ((0, 0), (0, 0))),
                               conv_reference(x[:, 2:], w[3:], None, (1, 1), ((0, 0), (0, 0)))],
                              axis=1) + grouped.bias.detach().numpy()[None, :, None, None]
    np.testing.assert_allclose(grouped(dy.tensor(x)).detach().numpy(), expected, rtol=1e-10)
    assert conv(dy.tensor(x[0])).shape == (6, 5, 5)  # an unbatched CHW input


def test_conv2d_gradients_against_finite_differences():
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1).double()
    x = RNG.normal(size=(2, 2, 5, 4))
    w0, b0 = conv.weight.detach().numpy().copy(), conv.bias.detach().numpy().copy()
    xt = dy.tensor(x, requires_grad=True)
    (conv(xt) ** 2).sum().backward()

    def loss(x=x, w=w0, b=b0):
        return float((conv_reference(x, w, b, (2, 2), ((1, 1), (1, 1))) ** 2).sum())
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(lambda v: loss(x=v), x), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(conv.weight.grad.numpy(), numeric_grad(lambda v: loss(w=v), w0),
                               rtol=1e-6)
    np.testing.assert_allclose(conv.bias.grad.numpy(), numeric_grad(lambda v: loss(b=v), b0),
                               rtol=1e-6)


def test_conv2d_init_bounds_and_repr():
    dy.manual_seed(0)
    conv = nn.Conv2d(8, 16, 3)
    bound = 1 / np.sqrt(8 * 9)  # fan_in = in_channels * kH * kW
    w = conv.weight.detach().numpy()
    assert w.shape == (16, 8, 3, 3) and np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.95 * bound and np.abs(conv.bias.detach().numpy()).max() <= bound
    assert repr(conv) == "Conv2d(8, 16, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.Conv2d(1, 2, 5, stride=2, padding=2, bias=False)) == \
        "Conv2d(1, 2, kernel_size=(5, 5), stride=(2, 2), padding=(2, 2), bias=False)"
    assert repr(nn.Conv2d(1, 2, 3, padding="same")) == \
        "Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), padding=same)"
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(1, 2, 3, stride=2, padding="same")


def pool_reference(x, k, s, pad, reduce, fill):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh, ow = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = reduce(xp[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return out


@pytest.mark.parametrize("k, s, pad", [(2, None, 0), (3, 2, 1), (3, 1, 0)])
def test_pooling_matches_hand_loops(k, s, pad):
    x = RNG.normal(size=(2, 3, 7, 6))
    stride = k if s is None else s
    np.testing.assert_allclose(nn.MaxPool2d(k, s, pad)(dy.tensor(x)).numpy(),
                               pool_reference(x, k, stride, pad, np.max, -np.inf))
    np.testing.assert_allclose(nn.AvgPool2d(k, s, pad)(dy.tensor(x)).numpy(),
                               pool_reference(x, k, stride, pad, np.mean, 0.0), rtol=1e-10,
                               atol=1e-14)
    if pad:  # count_include_pad=False: the mean over the window's real elements
        counts = pool_reference(np.ones_like(x), k, stride, pad, np.sum, 0.0)
        np.testing.assert_allclose(
            nn.AvgPool2d(k, s, pad, count_include_pad=False)(dy.tensor(x)).numpy(),
            pool_reference(x, k, stride, pad, np.sum, 0.0) / counts, rtol=1e-10,
            atol=1e-14)


@pytest.mark.parametrize("pool, reduce, fill", [(nn.MaxPool2d(2, 1, 1), np.max, -np.inf),
                                                 (nn.AvgPool2d(3, 1, 1), np.mean, 0.0)])
def test_pooling_gradients(pool, reduce, fill):
    x = RNG.normal(size=(1, 2, 4, 4))
    xt = dy.tensor(x, requires_grad=True)
    (pool(xt) ** 2).sum().backward()
    k, s, p = pool.kernel_size, pool.stride, pool.padding
    expected = numeric_grad(lambda v: float((pool_reference(v, k, s, p, reduce, fill) ** 2)
                                            .sum()), x)
    np.testing.assert_allclose(xt.grad.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_pooling_repr_and_errors():
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(3, 1, 1)) == "AvgPool2d(kernel_size=3, stride=1, padding=1)"
    with pytest.raises(RuntimeError, match="at most half"):
        nn.MaxPool2d(2, padding=2)(dy.zeros(1, 1, 4, 4))
