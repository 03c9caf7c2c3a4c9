"""TF1's functions made of other ops (ops/math_impl.py) against NumPy written by hand, and
their gradients against finite differences."""

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from tests.conftest import numeric_grad

RNG = np.random.default_rng(11)
X = RNG.normal(size=(3, 4))


def _run_and_grad(fn, value):
    """fn(x) and d sum(fn(x) * w) / dx for a fixed random w, in a session."""
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float64, value.shape, name="x")
        y = fn(x)
        w = RNG.normal(size=y.shape.as_list())
        (dx,) = sg.gradients(sg.reduce_sum(y * w), [x])
        sess = sg.Session()
        got, grad = sess.run([y, dx], {x: value})
        run = sess.make_callable(y, [x])
        want = numeric_grad(lambda v: float((run(v) * w).sum()), value)
    return got, grad, want


def _logsumexp(v, axis=None, keepdims=False):
    top = v.max(axis=axis, keepdims=True)
    out = np.log(np.exp(v - top).sum(axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


CASES = [
    ("reduce_logsumexp", lambda x: sg.reduce_logsumexp(x, axis=1), lambda v: _logsumexp(v, 1)),
    ("reduce_logsumexp all, kept", lambda x: sg.math.reduce_logsumexp(x, keepdims=True),
     lambda v: _logsumexp(v, keepdims=True)),
    ("l2_normalize", lambda x: sg.nn.l2_normalize(x, axis=0),
     lambda v: v / np.sqrt((v * v).sum(axis=0, keepdims=True))),
    ("norm", lambda x: sg.norm(x, axis=1), lambda v: np.sqrt((v * v).sum(axis=1))),
    ("norm 1", lambda x: sg.norm(x, ord=1, axis=0, keepdims=True),
     lambda v: np.abs(v).sum(axis=0, keepdims=True)),
    ("norm inf", lambda x: sg.norm(x, ord=np.inf), lambda v: np.abs(v).max()),
    ("reverse", lambda x: sg.reverse(x, [1]) * x, lambda v: v[:, ::-1] * v),
    ("reverse both", lambda x: sg.reverse_v2(x, [0, -1]), lambda v: v[::-1, ::-1]),
    ("tensordot", lambda x: sg.tensordot(x, x * x, [[0], [0]]), lambda v: v.T @ (v * v)),
    ("tensordot 2", lambda x: sg.tensordot(sg.reshape(x, [3, 2, 2]),
                                           sg.reshape(x[:1], [2, 2, 1]), 2),
     lambda v: np.tensordot(v.reshape(3, 2, 2), v[:1].reshape(2, 2, 1), 2)),
]


@pytest.mark.parametrize("fn, by_hand", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_values_and_gradients(fn, by_hand):
    got, grad, want = _run_and_grad(fn, X)
    np.testing.assert_allclose(got, by_hand(X), rtol=1e-12)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)


def test_logsumexp_does_not_overflow_and_handles_infinities(g):
    big = sg.constant([[1000.0, 1000.0], [-np.inf, 0.0], [-np.inf, -np.inf]])
    got = sg.Session().run(sg.reduce_logsumexp(big, axis=1))
    np.testing.assert_allclose(got, [1000.0 + np.log(2.0), 0.0, -np.inf])


def test_sequence_mask_cast_and_the_shorthands(g):
    lengths = sg.placeholder(sg.int32, [None], name="lengths")
    masks = [sg.sequence_mask(lengths), sg.sequence_mask(lengths, 5, dtype=sg.float32)]
    got = sg.Session().run(masks + [sg.to_int32(sg.constant(2.7)), sg.to_int64([1.0]),
                                    sg.to_double(1)], {lengths: [1, 3, 0]})
    np.testing.assert_array_equal(got[0], [[1, 0, 0], [1, 1, 1], [0, 0, 0]])
    np.testing.assert_array_equal(got[1], [[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    assert got[1].dtype == np.float32 and got[2] == 2 and got[3].dtype == np.int64
    assert got[4].dtype == np.float64


def test_what_they_refuse(g):
    x = sg.constant(X)
    with pytest.raises(ValueError, match=r"reverse at \S*test_math_impl.py:\d+: axis \[2\] "
                                         r"must be distinct ints in \[-2, 2\)"):
        sg.reverse(x, [2])
    with pytest.raises(ValueError, match=r"axis \[0, -2\] must be distinct"):
        sg.reverse(x, [0, -2])
    with pytest.raises(ValueError, match=r"norm at \S*: ord 3 is not offered"):
        sg.norm(x, ord=3)
    with pytest.raises(ValueError, match=r"tensordot at \S*: \[0\] and \[0, 1\] pair up "
                                         r"different numbers of axes"):
        sg.tensordot(x, x, [[0], [0, 1]])
    with pytest.raises(TypeError, match=r"sequence_mask at \S*: lengths must be integers"):
        sg.sequence_mask([1.5])


def test_the_dynamic_mode_computes_them_too():
    with dy.eager_mode():
        x = dy.tensor(X, requires_grad=True)
        y = sg.reduce_logsumexp(x, axis=1)
        y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), _logsumexp(X, 1), rtol=1e-12)
    soft = np.exp(X - _logsumexp(X, 1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), soft, rtol=1e-10)
