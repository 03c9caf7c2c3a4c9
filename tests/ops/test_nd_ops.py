"""gather_nd and scatter_nd (ops/nd_ops.py) against NumPy indexing written by hand."""

import numpy as np
import pytest

import staticgrad as sg

RNG = np.random.default_rng(13)
P = RNG.normal(size=(3, 4, 2))


@pytest.mark.parametrize("indices", [[[0, 1], [2, 3]], [[1], [0], [1]], [[[0, 0, 1]], [[2, 3, 0]]],
                                     [[2, 1, 1]]], ids=["pairs", "rows", "batched", "one"])
def test_gather_nd_picks_as_numpy_does(g, indices):
    ix = np.array(indices)
    got = sg.Session().run(sg.gather_nd(sg.constant(P), ix))
    np.testing.assert_array_equal(got, P[tuple(np.moveaxis(ix, -1, 0))])


def test_scatter_nd_adds_repeats_and_takes_a_shape_known_at_run_time(g):
    updates = RNG.normal(size=(3, 2))
    fixed = sg.scatter_nd([[1], [3], [1]], updates, [5, 2])
    n = sg.placeholder(sg.int32, [], name="n")
    runtime = sg.scatter_nd([[0, 1]], [7.0], sg.stack([n, 3]))
    assert fixed.shape.as_list() == [5, 2] and runtime.shape.as_list() == [None, None]
    got = sg.Session().run([fixed, runtime], {n: 2})
    want = np.zeros((5, 2))
    want[1] = updates[0] + updates[2]
    want[3] = updates[1]
    np.testing.assert_allclose(got[0], want)
    np.testing.assert_array_equal(got[1], [[0, 7, 0], [0, 0, 0]])


def test_indices_out_of_range_and_shapes_that_disagree(g):
    i = sg.placeholder(sg.int32, [1, 2], name="i")
    picked = sg.gather_nd(sg.constant(P), i)
    with pytest.raises(sg.errors.InvalidArgumentError,
                       match=r"GatherNd op .* created at \S*test_nd_ops.py:\d+ .* "
                             r"gather_nd: indices\[0\] = \[0, 4\] does not index into shape"):
        sg.Session().run(picked, {i: [[0, 4]]})
    with pytest.raises(ValueError, match=r"indices index 4 axes, but params has only 3"):
        sg.gather_nd(sg.constant(P), [[0, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"updates have shape \(2,\), but indices and shape "
                                         r"call for \(3, 2\)"):
        sg.scatter_nd([[1], [3], [1]], [1.0, 2.0], [5, 2])
    with pytest.raises(TypeError, match=r"indices must be integers"):
        sg.gather_nd(sg.constant(P), [[0.5]])
