"""nn.embedding_lookup and nn.conv1d (ops/embedding_ops.py) against NumPy written by hand,
their gradients against finite differences."""

import numpy as np
import pytest

import staticgrad as sg
from tests.conftest import numeric_grad

RNG = np.random.default_rng(12)
TABLE = RNG.normal(size=(7, 3))
IDS = np.array([[6, 0, 3], [3, 1, 5]])


def _shards(strategy, n=3):
    """TABLE cut into n shards as TF1 cuts it (mod: row r in shard r % n; div: runs)."""
    if strategy == "mod":
        return [TABLE[k::n] for k in range(n)]
    sizes = [len(TABLE) // n + (k < len(TABLE) % n) for k in range(n)]
    return np.split(TABLE, np.cumsum(sizes)[:-1])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_lookup_in_a_table_and_in_its_shards(g, strategy):
    shards = [sg.constant(s) for s in _shards(strategy)]
    got = sg.Session().run([sg.nn.embedding_lookup(sg.constant(TABLE), IDS),
                            sg.nn.embedding_lookup(shards, IDS, partition_strategy=strategy)])
    np.testing.assert_array_equal(got[0], TABLE[IDS])
    np.testing.assert_array_equal(got[1], TABLE[IDS])


def test_max_norm_and_the_gradient(g):
    table = sg.placeholder(sg.float64, [7, 3], name="table")
    rows = sg.nn.embedding_lookup(table, IDS, max_norm=1.0)
    w = RNG.normal(size=(2, 3, 3))
    (d_table,) = sg.gradients(sg.reduce_sum(rows * w), [table])
    sess = sg.Session()

    def by_hand(t):
        r = t[IDS]
        norms = np.sqrt((r * r).sum(-1, keepdims=True))
        return r * np.minimum(1.0, 1.0 / norms)

    got, grad = sess.run([rows, d_table], {table: TABLE})
    np.testing.assert_allclose(got, by_hand(TABLE), rtol=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(lambda t: (by_hand(t) * w).sum(), TABLE),
                               rtol=1e-6, atol=1e-9)


def test_what_a_lookup_refuses(g):
    with pytest.raises(ValueError, match=r"embedding_lookup at \S*: partition_strategy must be"):
        sg.nn.embedding_lookup(sg.constant(TABLE), [0], partition_strategy="hash")
    with pytest.raises(TypeError, match=r"ids must be integers, got float32"):
        sg.nn.embedding_lookup(sg.constant(TABLE), [0.5])
    with pytest.raises(ValueError, match=r"the shards' row counts must be known"):
        sg.nn.embedding_lookup([sg.placeholder(sg.float32, [None, 3])] * 2, [0])


def _conv1d(x, w, stride, padding):
    width, k = x.shape[1], w.shape[0]
    if padding == "SAME":
        out_w = -(-width // stride)
        pad = max((out_w - 1) * stride + k - width, 0)
        x = np.pad(x, ((0, 0), (pad // 2, pad - pad // 2), (0, 0)))
    out_w = (x.shape[1] - k) // stride + 1
    return np.stack([np.einsum("bki,kio->bo", x[:, j * stride:j * stride + k], w)
                     for j in range(out_w)], axis=1)


@pytest.mark.parametrize("stride, padding", [(1, "VALID"), (2, "SAME"), (2, "VALID")])
def test_conv1d_is_a_conv2d_of_height_one(g, stride, padding):
    xv, wv = RNG.normal(size=(2, 7, 3)), RNG.normal(size=(3, 3, 4))
    x = sg.placeholder(sg.float64, xv.shape, name="x")
    w = sg.placeholder(sg.float64, wv.shape, name="w")
    y = sg.nn.conv1d(x, w, stride, padding)
    out_w = y.shape.as_list()[1]
    seed = RNG.normal(size=(2, out_w, 4))
    (dx,) = sg.gradients(sg.reduce_sum(y * seed), [x])
    got, grad = sg.Session().run([y, dx], {x: xv, w: wv})
    np.testing.assert_allclose(got, _conv1d(xv, wv, stride, padding), rtol=1e-10)
    want = numeric_grad(lambda v: (_conv1d(v, wv, stride, padding) * seed).sum(), xv)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-9)
