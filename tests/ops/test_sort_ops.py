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


def test_unique_keeps_the_order_of_first_appearance(g):
    x = sg.placeholder(sg.int64, [None], name="x")
    y, idx = sg.unique(x, out_idx=sg.int64)
    xv = np.array([4, 1, 4, 2, 1, 7, 7])
    got = sg.Session().run(sg.unique(x), {x: xv})
    assert got[0].tolist() == [4, 1, 2, 7] and got[1].tolist() == [0, 1, 0, 2, 1, 3, 3]
    assert got[1].dtype == np.int32
    yv, iv = sg.Session().run([y, idx], {x: xv[:0]})
    assert yv.shape == (0,) and iv.dtype == np.int64
    with pytest.raises(ValueError, match=r"unique needs a vector"):
        sg.unique(sg.constant(X))


def test_boolean_mask_along_any_axis_and_its_gradient(g):
    x = sg.placeholder(sg.float64, [2, 5], name="x")
    mask = sg.placeholder(sg.bool, [5], name="mask")
    picked = sg.boolean_mask(x, mask, axis=1)
    (dx,) = sg.gradients(sg.reduce_sum(picked * picked), [x])
    mv = np.array([True, False, False, True, True])
    got, grad = sg.Session().run([picked, dx], {x: X, mask: mv})
    np.testing.assert_array_equal(got, X[:, mv])
    np.testing.assert_array_equal(grad, np.where(mv, 2 * X, 0.0))
    with pytest.raises(ValueError, match=r"boolean_mask at \S*: a mask of shape \(3,\) does "
                                         r"not match"):
        sg.boolean_mask(x, [True, False, True])
    with pytest.raises(TypeError, match=r"the mask must be bool"):
        sg.boolean_mask(x, [1, 0])
