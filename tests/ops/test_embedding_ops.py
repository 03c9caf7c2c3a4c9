"""nn.embedding_lookup (ops/embedding_ops.py) against NumPy written by hand, its gradient
against finite differences."""

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
    (sparse,) = sg.gradients(sg.reduce_sum(rows * w), [table])
    assert isinstance(sparse, sg.IndexedSlices)
    d_table = sg.convert_to_tensor(sparse)
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
