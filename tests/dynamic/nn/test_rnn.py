"""dy.nn RNNCell, LSTMCell, GRUCell against NumPy written from PyTorch's documented equations
(gate order i, f, g, o and r, z, n), their init, and gradients against finite
differences."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad.dynamic as dy
from staticgrad.dynamic import nn
from tests.conftest import numeric_grad

RNG = np.random.default_rng(0)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def rnn_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    return np.tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)


def lstm_ref(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
    c2 = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c2), c2


def gru_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    i_r, i_z, i_n = np.split(x @ w_ih.T + b_ih, 3, axis=1)
    h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def weights(cell):
    return [p.detach().numpy().copy() for p in cell.parameters()]


def test_cells_match_the_equations_with_and_without_a_state():
    x, h, c = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 5)), RNG.normal(size=(3, 5))
    rnn = nn.RNNCell(4, 5).double()
    np.testing.assert_allclose(rnn(dy.tensor(x), dy.tensor(h)).detach().numpy(),
                               rnn_ref(x, h, *weights(rnn)), rtol=1e-12)
    np.testing.assert_allclose(rnn(dy.tensor(x)).detach().numpy(),
                               rnn_ref(x, 0 * h, *weights(rnn)), rtol=1e-12)
    lstm = nn.LSTMCell(4, 5).double()
    h2, c2 = lstm(dy.tensor(x), (dy.tensor(h), dy.tensor(c)))
    eh, ec = lstm_ref(x, h, c, *weights(lstm))
    np.testing.assert_allclose(h2.detach().numpy(), eh, rtol=1e-12)
    np.testing.assert_allclose(c2.detach().numpy(), ec, rtol=1e-12)
    gru = nn.GRUCell(4, 5).double()
    np.testing.assert_allclose(gru(dy.tensor(x), dy.tensor(h)).detach().numpy(),
                               gru_ref(x, h, *weights(gru)), rtol=1e-12)
    unbatched = gru(dy.tensor(x[0]), dy.tensor(h[0]))  # a 1-D input: one sample
    np.testing.assert_allclose(unbatched.detach().numpy(), gru_ref(x, h, *weights(gru))[0],
                               rtol=1e-12)
    relu = nn.RNNCell(4, 5, nonlinearity="relu").double()
    w = weights(relu)
    np.testing.assert_allclose(relu(dy.tensor(x), dy.tensor(h)).detach().numpy(),
                               np.maximum(x @ w[0].T + w[2] + h @ w[1].T + w[3], 0), rtol=1e-12)


@pytest.mark.parametrize("cls, gates", [(nn.RNNCell, 1), (nn.LSTMCell, 4), (nn.GRUCell, 3)])
def test_cell_parameters_init_and_repr(cls, gates):
    dy.manual_seed(0)
    cell = cls(10, 16)
    assert [(n, tuple(p.shape)) for n, p in cell.named_parameters()] == [
        ("weight_ih", (gates * 16, 10)), ("weight_hh", (gates * 16, 16)),
        ("bias_ih", (gates * 16,)), ("bias_hh", (gates * 16,))]
    values = np.concatenate([p.detach().numpy().ravel() for p in cell.parameters()])
    assert np.abs(values).max() <= 0.25 and np.abs(values).max() > 0.24  # U(+-1/sqrt(16))
    assert repr(cell) == f"{cls.__name__}(10, 16)"
    assert repr(cls(3, 4, bias=False)) == f"{cls.__name__}(3, 4, bias=False)"
    assert cls(3, 4, bias=False).bias_ih is None


X, H, C = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 4)), RNG.normal(size=(2, 4))


@pytest.mark.parametrize("cls, ref", [
    (nn.RNNCell, lambda x, w: rnn_ref(x, H, *w)),
    (nn.LSTMCell, lambda x, w: sum(lstm_ref(x, H, C, *w))),
    (nn.GRUCell, lambda x, w: gru_ref(x, H, *w)),
])
def test_cell_gradients_against_finite_differences(cls, ref):
    cell = cls(3, 4).double()
    w0 = weights(cell)
    xt = dy.tensor(X, requires_grad=True)
    state = (dy.tensor(H), dy.tensor(C)) if cls is nn.LSTMCell else dy.tensor(H)
    out = cell(xt, state)
    (sum(out) if isinstance(out, tuple) else out).pow(2).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(),
                               numeric_grad(lambda v: float((ref(v, w0) ** 2).sum()), X),
                               rtol=1e-6, atol=1e-9)
    for k, p in enumerate(cell.parameters()):
        def loss(v, k=k):
            w = list(w0)
            w[k] = v
            return float((ref(X, w) ** 2).sum())
        np.testing.assert_allclose(p.grad.numpy(), numeric_grad(loss, w0[k]), rtol=1e-6,
                                   atol=1e-9, err_msg=f"{cls.__name__} parameter {k}")
