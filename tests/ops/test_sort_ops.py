"""top_k, in_top_k, sort and argsort (ops/sort_ops.py) against NumPy written by hand: ties
to the lower index, as TF1's."""

import numpy as np
import pytest

import staticgrad as sg

X = np.array([[1.0, 3.0, 3.0, 2.0, -1.0], [4.0, 0.0, -1.0, 4.0, 4.0]])


def _top_k(v, k):
    idx = np.array([sorted(range(v.shape[1]), key=lambda j: (-row[j], j))[:k] for row in v],
                   dtype=np.int64).reshape(len(v), k)
    return np.take_along_axis(v, idx, axis=1), idx


def test_top_k_values_indices_and_ties(g):
    for k in (0, 1, 3, 5):
        values, indices = sg.nn.top_k(sg.constant(X), k)
        got = sg.Session().run([values, indices])
        want = _top_k(X, k)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == np.int32
    assert sg.nn.top_k(sg.constant(X), 2).indices.shape.as_list() == [2, 2]


def test_sort_and_argsort_along_any_axis_both_ways(g):
    x = sg.constant(X)
    got = sg.Session().run([sg.sort(x), sg.sort(x, axis=0, direction="DESCENDING"),
                            sg.argsort(x), sg.argsort(x, axis=0, direction="DESCENDING")])
    np.testing.assert_array_equal(got[0], np.sort(X, axis=1))
    np.testing.assert_array_equal(got[1], -np.sort(-X, axis=0))
    np.testing.assert_array_equal(got[2], np.argsort(X, axis=1, kind="stable"))
    np.testing.assert_array_equal(got[3], np.argsort(-X, axis=0, kind="stable"))


def test_in_top_k_counts_ties_at_the_boundary_as_in(g):
    targets = sg.placeholder(sg.int32, [2], name="targets")
    k = {k: sg.nn.in_top_k(sg.constant(X), targets, k) for k in (1, 2)}
    sess = sg.Session()
    # row 0: 3, 3 tie for the top; row 1: 4, 4, 4 tie
    assert sess.run(k[1], {targets: [2, 4]}).tolist() == [True, True]
    assert sess.run(k[1], {targets: [3, 1]}).tolist() == [False, False]
    assert sess.run(k[2], {targets: [3, 7]}).tolist() == [False, False]  # (7: no such class)
    nan = sg.nn.in_top_k(sg.constant([[np.nan, 1.0]]), [0], 2)
    assert sess.run(nan).tolist() == [False]


def test_what_they_refuse(g):
    x = sg.constant(X)
    with pytest.raises(ValueError, match=r"k \(6\) is more than the last dimension \(5\)"):
        sg.nn.top_k(x, 6)
    with pytest.raises(TypeError, match=r"top_k at \S*test_sort_ops.py:\d+: k must be a "
                                        r"non-negative int known when the graph is built"):
        sg.nn.top_k(x, sg.placeholder(sg.int32, []))
    with pytest.raises(ValueError, match=r"direction must be 'ASCENDING' or 'DESCENDING'"):
        sg.sort(x, direction="UP")
    with pytest.raises(ValueError, match=r"the length of the sorted axis must be known"):
        sg.sort(sg.placeholder(sg.float32, [2, None]))
