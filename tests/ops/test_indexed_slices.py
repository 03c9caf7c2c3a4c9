"""IndexedSlices (ops/indexed_slices.py): the gradient of a gather along axis 0, kept as
rows; summed, fetched and made dense as TF1 does, against NumPy written by hand."""

import warnings

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dy

TABLE = np.arange(12.0).reshape(6, 2)


def test_a_lookups_gradient_is_its_rows_at_its_indices(g):
    table = sg.placeholder(sg.float64, [6, 2])
    ids = sg.placeholder(sg.int32, [2, 2])
    rows = sg.nn.embedding_lookup(table, ids)
    weights = np.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])
    (grad,) = sg.gradients(sg.reduce_sum(rows * weights), [table])
    assert isinstance(grad, sg.IndexedSlices) and grad.dtype is sg.float64
    got = sg.Session().run(grad, {table: TABLE, ids: [[1, 3], [1, 5]]})
    assert isinstance(got, sg.IndexedSlicesValue)
    np.testing.assert_array_equal(got.values, weights.reshape(4, 2))
    np.testing.assert_array_equal(got.indices, [1, 3, 1, 5])
    np.testing.assert_array_equal(got.dense_shape, [6, 2])
    dense = sg.Session().run(sg.convert_to_tensor(grad), {table: TABLE, ids: [[1, 3], [1, 5]]})
    want = np.zeros((6, 2))
    np.add.at(want, [1, 3, 1, 5], weights.reshape(4, 2))  # a repeated index adds up
    np.testing.assert_array_equal(dense, want)


def test_two_lookups_join_their_rows_and_a_dense_use_makes_the_sum_dense(g):
    table = sg.placeholder(sg.float64, [6, 2])
    a, b = sg.gather(table, [0, 2]), sg.gather(table, [2])
    (sparse,) = sg.gradients(sg.reduce_sum(a) + 3.0 * sg.reduce_sum(b), [table])
    got = sg.Session().run(sparse, {table: TABLE})
    assert sorted(got.indices.tolist()) == [0, 2, 2]
    (dense,) = sg.gradients(sg.reduce_sum(a) + sg.reduce_sum(table * table), [table])
    assert isinstance(dense, sg.Tensor)
    want = 2 * TABLE
    want[[0, 2]] += 1.0
    np.testing.assert_allclose(sg.Session().run(dense, {table: TABLE}), want)


def test_a_gather_along_another_axis_has_a_dense_gradient(g):
    x = sg.placeholder(sg.float64, [2, 6])
    (grad,) = sg.gradients(sg.reduce_sum(sg.gather(x, [5, 5, 0], axis=1)), [x])
    assert isinstance(grad, sg.Tensor)
    want = np.zeros((2, 6))
    want[:, 5], want[:, 0] = 2.0, 1.0
    np.testing.assert_array_equal(sg.Session().run(grad, {x: np.ones((2, 6))}), want)


def test_making_a_large_or_unknown_one_dense_warns_as_tf1(g):
    big = sg.placeholder(sg.float32, [200_000, 1000])
    (grad,) = sg.gradients(sg.reduce_sum(sg.gather(big, [1])), [big])
    with pytest.warns(UserWarning, match=r"with 200000000 elements\. This may consume a large "
                                         "amount of memory"):
        sg.convert_to_tensor(grad)
    free = sg.placeholder(sg.float32, [None, 3])
    (grad,) = sg.gradients(sg.reduce_sum(sg.gather(free, [1])), [free])
    with pytest.warns(UserWarning, match="dense Tensor of unknown shape"):
        sg.convert_to_tensor(grad)
    small = sg.placeholder(sg.float32, [6, 2])
    (grad,) = sg.gradients(sg.reduce_sum(sg.gather(small, [1])), [small])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sg.convert_to_tensor(grad)


def test_clipping_by_global_norm_keeps_the_rows(g):
    table = sg.placeholder(sg.float64, [6, 2])
    w = sg.placeholder(sg.float64, [2])
    loss = sg.reduce_sum(sg.gather(table, [1, 1]) * 3.0) + sg.reduce_sum(w * 4.0)
    grads = sg.gradients(loss, [table, w])
    clipped, norm = sg.clip_by_global_norm(grads, 1.0)
    assert isinstance(clipped[0], sg.IndexedSlices)
    got_norm, rows = sg.Session().run([norm, clipped[0].values], {table: TABLE, w: [1, 1]})
    assert got_norm == pytest.approx(np.sqrt(4 * 9 + 2 * 16))  # the rows, as TF1 counts them
    np.testing.assert_allclose(rows, np.full((2, 2), 3.0 / got_norm))


def test_loops_and_the_dynamic_mode_get_the_dense_gradient(g):
    table = sg.placeholder(sg.float64, [6, 2])
    _, total = sg.while_loop(lambda i, s: i < 3,
                             lambda i, s: (i + 1, s + sg.reduce_sum(sg.gather(table, [i]))),
                             [sg.constant(0), sg.constant(0.0, sg.float64)])
    (grad,) = sg.gradients(total, [table])
    want = np.zeros((6, 2))
    want[:3] = 1.0
    np.testing.assert_array_equal(sg.Session().run(sg.convert_to_tensor(grad),
                                                   {table: TABLE}), want)
    t = dy.tensor(TABLE, requires_grad=True)
    with dy.eager_mode():
        (d,) = dy.grad(sg.reduce_sum(sg.gather(t, [4, 4])), [t])
    want = np.zeros((6, 2))
    want[4] = 2.0
    np.testing.assert_array_equal(d.numpy(), want)
