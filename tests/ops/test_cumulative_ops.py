"""cumsum and cumprod (ops/cumulative_ops.py) against NumPy written by hand, every way of
exclusive and reverse, in sessions and in the dynamic mode."""

import itertools

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy
from tests.conftest import numeric_grad

X = np.arange(1, 13, dtype=np.float64).reshape(3, 4) / 4.0


def _by_hand(kind, v, axis, exclusive, reverse):
    v = np.moveaxis(v, axis, 0)
    rows = list(v[::-1] if reverse else v)
    out, acc = [], np.zeros_like(rows[0]) if kind == "sum" else np.ones_like(rows[0])
    for r in rows:
        if exclusive:
            out.append(acc.copy())
        acc = acc + r if kind == "sum" else acc * r
        if not exclusive:
            out.append(acc.copy())
    out = np.stack(out[::-1] if reverse else out)
    return np.moveaxis(out, 0, axis)


WAYS = list(itertools.product(("sum", "prod"), (0, 1, -1), (False, True), (False, True)))


@pytest.mark.parametrize("kind, axis, exclusive, reverse", WAYS)
def test_every_way_against_numpy_by_hand(g, kind, axis, exclusive, reverse):
    fn = sg.cumsum if kind == "sum" else sg.cumprod
    got = sg.Session().run(fn(sg.constant(X), axis, exclusive=exclusive, reverse=reverse))
    np.testing.assert_allclose(got, _by_hand(kind, X, axis, exclusive, reverse), rtol=1e-12)


def test_integers_keep_their_dtype_and_the_dynamic_mode_agrees(g):
    got = sg.Session().run(sg.math.cumsum(sg.constant([[1, 2], [3, 4]]), axis=1))
    assert got.dtype == np.int32 and got.tolist() == [[1, 3], [3, 7]]
    with dy.eager_mode():
        x = dy.tensor(X, requires_grad=True)
        y = sg.cumprod(x, axis=1, reverse=True)
        y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), _by_hand("prod", X, 1, False, True))
    want = numeric_grad(lambda v: _by_hand("prod", v, 1, False, True).sum(), X)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-7)


def test_bad_axes_and_dtypes_are_errors(g):
    with pytest.raises(ValueError, match=r"axis 2 is out of range for a tensor of rank 2"):
        sg.cumsum(sg.constant(X), axis=2)
    with pytest.raises(ValueError, match=r"needs a tensor of rank >= 1"):
        sg.cumsum(sg.constant(1.0))
    with pytest.raises(TypeError, match=r"input 0 has dtype bool"):
        sg.cumprod(sg.constant([True]))


def test_an_empty_axis_gives_an_empty_result(g):
    for exclusive in (False, True):
        got = sg.Session().run(sg.cumsum(sg.zeros([0, 3]), axis=0, exclusive=exclusive,
                                         reverse=True))
        assert got.shape == (0, 3)
