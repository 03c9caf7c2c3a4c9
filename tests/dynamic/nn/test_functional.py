"""dy.nn.functional's functions added for the layers: activations (gelu, elu's alpha,
softplus's beta), pad, dropout's inplace, embedding, conv2d on an unbatched input; their
values against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import staticgrad.dynamic as dy
import staticgrad.dynamic.nn.functional as F
from tests.conftest import numeric_grad

X = np.linspace(-3, 3, 13)


def test_activations():
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(F.gelu(dy.tensor(X)).numpy(), 0.5 * X * (1 + erf(X / np.sqrt(2))),
                               rtol=1e-12)
    tanh_form = 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X ** 3)))
    np.testing.assert_allclose(F.gelu(dy.tensor(X), approximate="tanh").numpy(), tanh_form,
                               rtol=1e-12)
    np.testing.assert_allclose(F.elu(dy.tensor(X), alpha=0.5).numpy(),
                               np.where(X > 0, X, 0.5 * (np.exp(X) - 1)), rtol=1e-12)
    np.testing.assert_allclose(F.softplus(dy.tensor(X), beta=2.0).numpy(),
                               np.log1p(np.exp(2 * X)) / 2, rtol=1e-12)
    np.testing.assert_allclose(F.silu(dy.tensor(X)).numpy(), X / (1 + np.exp(-X)), rtol=1e-12)
    x = dy.tensor(X, requires_grad=True)
    F.gelu(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(
        lambda v: float((0.5 * v * (1 + erf(v / np.sqrt(2)))).sum()), X), rtol=1e-6)


def test_pad_constant_and_reflect():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(F.pad(dy.tensor(x), (1, 2)).numpy(),
                                  np.pad(x, ((0, 0), (1, 2))))
    np.testing.assert_array_equal(F.pad(dy.tensor(x), (0, 1, 2, 0), value=-1.0).numpy(),
                                  np.pad(x, ((2, 0), (0, 1)), constant_values=-1))
    np.testing.assert_array_equal(F.pad(dy.tensor(x), (2, 1), mode="reflect").numpy(),
                                  np.pad(x, ((0, 0), (2, 1)), mode="reflect"))
    t = dy.tensor(x, requires_grad=True)
    (F.pad(t, (1, 1, 1, 1)) * 2.0).sum().backward()
    assert t.grad.tolist() == [[2.0] * 3] * 2
    with pytest.raises(NotImplementedError, match="replicate"):
        F.pad(dy.tensor(x), (1, 1), mode="replicate")


def test_dropout_inplace_and_probabilities():
    x = dy.ones(100)
    dy.manual_seed(0)
    out = F.dropout(x, 0.5, training=True, inplace=True)
    assert out is x and set(x.tolist()) <= {0.0, 2.0}
    assert F.dropout(dy.ones(3), 1.0).tolist() == [0.0] * 3
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, -0.1)
    w = dy.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        F.dropout(w, 0.5, inplace=True)


def test_one_hot_and_embedding():
    assert F.one_hot(dy.tensor([0, 2])).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(dy.tensor([1]), num_classes=4).dtype is dy.int64
    w = dy.tensor(np.arange(8.0).reshape(4, 2))
    assert F.embedding(dy.tensor([3, 0]), w).tolist() == [[6.0, 7.0], [0.0, 1.0]]
