"""dy.nn Linear, Embedding, Dropout, Flatten, Identity: values against NumPy, gradients
against finite differences, PyTorch's default initialization."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic import nn
from tests.conftest import numeric_grad


def test_linear_matches_numpy_and_its_init_bounds():
    dy.manual_seed(1)
    lin = nn.Linear(50, 30)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    bound = 1 / np.sqrt(50)  # kaiming_uniform(a=sqrt(5)) and the bias: U(+-1/sqrt(fan_in))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound and w.shape == (30, 50) and lin.weight.dtype is dy.float32
    x = np.random.default_rng(0).normal(size=(4, 50)).astype(np.float32)
    np.testing.assert_allclose(lin(dy.tensor(x)).detach().numpy(), x @ w.T + b, rtol=1e-5,
                               atol=1e-6)
    assert nn.Linear(3, 2, bias=False).bias is None
    assert nn.Linear(3, 2, dtype=dy.float64).weight.dtype is dy.float64


def test_linear_seeded_init_repeats():
    dy.manual_seed(7)
    a = nn.Linear(4, 3).weight.detach().numpy().copy()
    dy.manual_seed(7)
    np.testing.assert_array_equal(nn.Linear(4, 3).weight.detach().numpy(), a)


def test_linear_gradients_against_finite_differences():
    lin = nn.Linear(3, 2).double()
    x = np.random.default_rng(1).normal(size=(4, 3))
    w0, b0 = lin.weight.detach().numpy().copy(), lin.bias.detach().numpy().copy()
    xt = dy.tensor(x, requires_grad=True)
    (lin(xt) ** 2).sum().backward()

    def loss(x=x, w=w0, b=b0):
        return float(((x @ w.T + b) ** 2).sum())
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(lambda v: loss(x=v), x), rtol=1e-6)
    np.testing.assert_allclose(lin.weight.grad.numpy(), numeric_grad(lambda v: loss(w=v), w0),
                               rtol=1e-6)
    np.testing.assert_allclose(lin.bias.grad.numpy(), numeric_grad(lambda v: loss(b=v), b0),
                               rtol=1e-6)


def test_embedding_lookup_init_and_padding_row():
    dy.manual_seed(0)
    emb = nn.Embedding(1000, 8)
    w = emb.weight.detach().numpy()
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05  # N(0, 1)
    idx = np.array([[1, 5], [5, 999]])
    np.testing.assert_array_equal(emb(dy.tensor(idx)).detach().numpy(), w[idx])
    padded = nn.Embedding(4, 2, padding_idx=0)
    assert padded.weight[0].tolist() == [0.0, 0.0]
    padded(dy.tensor([0, 1, 0])).sum().backward()
    assert padded.weight.grad.numpy().tolist() == [[0, 0], [1, 1], [0, 0], [0, 0]]
    assert repr(padded) == "Embedding(4, 2, padding_idx=0)"
    frozen = nn.Embedding.from_pretrained(dy.ones(3, 2))
    assert not frozen.weight.requires_grad and frozen(dy.tensor([2])).tolist() == [[1.0, 1.0]]


def test_dropout_train_and_eval():
    dy.manual_seed(3)
    drop = nn.Dropout(0.25)
    x = dy.ones(2000)
    y = drop(x).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.04
    assert drop.eval()(x) is x
    assert repr(drop) == "Dropout(p=0.25, inplace=False)"
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_flatten_and_identity():
    x = dy.zeros(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60) and nn.Flatten(0, 1)(x).shape == (6, 4, 5)
    assert nn.Identity(7, whatever=1)(x) is x
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
