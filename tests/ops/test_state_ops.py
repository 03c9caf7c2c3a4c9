"""Random draws (fresh each run, reproducible under graph and op seeds, with their
distributions), placeholder_with_default and tuple (ops/state_ops.py)."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg

RANDOMS = {
    "random_normal": lambda seed=None: sg.random_normal([200], seed=seed),
    "random_uniform": lambda seed=None: sg.random_uniform([200], seed=seed),
    "truncated_normal": lambda seed=None: sg.truncated_normal([200], seed=seed),
}


@pytest.mark.parametrize("name", list(RANDOMS))
def test_random_fresh_each_run(name):
    g = sg.Graph()
    with g.as_default():
        t = RANDOMS[name]()
    sess = sg.Session(graph=g)
    a, b = sess.run(t), sess.run(t)
    assert a.shape == (200,) and a.dtype == np.float32
    assert t.dtype == sg.float32 and t.shape.as_list() == [200]
    assert not np.array_equal(a, b)


def _seeded_sequence(name, graph_seed, op_seed=None, runs=3):
    g = sg.Graph()
    with g.as_default():
        if graph_seed is not None:
            sg.set_random_seed(graph_seed)
        t = RANDOMS[name](op_seed)
        t2 = RANDOMS[name](op_seed)
    sess = sg.Session(graph=g)
    return [sess.run([t, t2]) for _ in range(runs)]


@pytest.mark.parametrize("name", list(RANDOMS))
def test_random_graph_seed_reproducible(name):
    first = _seeded_sequence(name, 42)
    second = _seeded_sequence(name, 42)
    other = _seeded_sequence(name, 43)
    for (a1, a2), (b1, b2) in zip(first, second):
        np.testing.assert_array_equal(a1, b1)
        np.testing.assert_array_equal(a2, b2)
        assert not np.array_equal(a1, a2)  # two ops in one graph draw differently
    assert not np.array_equal(first[0][0], first[1][0])  # fresh values each run
    assert not np.array_equal(first[0][0], other[0][0])


@pytest.mark.parametrize("name", list(RANDOMS))
def test_random_op_seed_reproducible(name):
    first = _seeded_sequence(name, None, op_seed=7)
    second = _seeded_sequence(name, None, op_seed=7)
    other = _seeded_sequence(name, None, op_seed=8)
    for (a1, _), (b1, _) in zip(first, second):
        np.testing.assert_array_equal(a1, b1)
    assert not np.array_equal(first[0][0], other[0][0])
    assert not np.array_equal(first[0][0], first[1][0])


def test_random_distributions():
    g = sg.Graph()
    with g.as_default():
        sg.set_random_seed(0)
        n = sg.random_normal([20000], mean=3.0, stddev=2.0, dtype=sg.float64)
        u = sg.random_uniform([20000], minval=-2.0, maxval=5.0)
        ui = sg.random_uniform([20000], minval=3, maxval=7, dtype=sg.int32)
        tn = sg.truncated_normal([20000], mean=1.0, stddev=0.5)
        tn_std = sg.truncated_normal([20000])
    rn, ru, rui, rtn, rstd = sg.Session(graph=g).run([n, u, ui, tn, tn_std])
    assert rn.dtype == np.float64 and abs(rn.mean() - 3) < 0.1 and abs(rn.std() - 2) < 0.1
    assert ru.dtype == np.float32 and ru.min() >= -2 and ru.max() < 5
    assert abs(ru.mean() - 1.5) < 0.1
    assert rui.dtype == np.int32 and set(np.unique(rui).tolist()) == {3, 4, 5, 6}
    assert rtn.dtype == np.float32
    assert np.all(np.abs(rtn - 1.0) <= 2 * 0.5 + 1e-6)
    assert np.all(np.abs(rstd) <= 2.0)
    assert rstd.std() > 0.7  # truncated at 2 std: std about 0.88


def test_random_with_dynamic_shape():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [None, 3])
        r = sg.random_normal(sg.shape(p))
    sess = sg.Session(graph=g)
    assert sess.run(r, {p: np.zeros((4, 3))}).shape == (4, 3)
    assert sess.run(r, {p: np.zeros((2, 3))}).shape == (2, 3)


def test_placeholder_with_default():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder_with_default(sg.constant([1.0, 2.0]), [None])
        y = p * 2.0
    sess = sg.Session(graph=g)
    np.testing.assert_array_equal(sess.run(y), [2.0, 4.0])
    np.testing.assert_array_equal(sess.run(y, {p: [5.0, 6.0, 7.0]}), [10.0, 12.0, 14.0])
    assert p.shape.as_list() == [None]


def test_what_reads_a_scalar_placeholder_with_default_takes_the_fed_value():
    """A scalar default was folded into what reads it when the graph was built, so a fed
    value was ignored past the first op: batch normalization's moving averages, whose rate is
    where(training, 1 - momentum, 0), never moved with `training` a fed
    placeholder_with_default(False, [])."""
    g = sg.Graph()
    with g.as_default():
        training = sg.placeholder_with_default(False, [])
        rate = sg.where(training, sg.constant(0.25), sg.zeros_like(sg.constant(0.25)))
        v = sg.Variable([4.0, 8.0])
        step = sg.assign_sub(v, v * rate)
    sess = sg.Session(graph=g)
    sess.run(v.initializer)
    np.testing.assert_array_equal(sess.run(step), [4.0, 8.0])
    np.testing.assert_array_equal(sess.run(step, {training: True}), [3.0, 6.0])
    np.testing.assert_array_equal(sess.run(v * rate, {training: True}), [0.75, 1.5])


def test_a_fed_keep_prob_with_a_default_drops_units():
    """TF1's idiom keep_prob = placeholder_with_default(1.0, []): fed 0.5 while training, it
    must drop units (its default was folded in, and dropout never dropped any)."""
    g = sg.Graph()
    with g.as_default():
        keep_prob = sg.placeholder_with_default(1.0, [])
        y = sg.nn.dropout(sg.ones([4000]), keep_prob, seed=1)
    sess = sg.Session(graph=g)
    np.testing.assert_array_equal(sess.run(y), np.ones(4000))
    dropped = sess.run(y, {keep_prob: 0.5})
    assert set(np.unique(dropped)) == {0.0, 2.0}
    assert 0.45 < np.mean(dropped == 0) < 0.55


def test_tuple_gates_all_tensors():
    g = sg.Graph()
    with g.as_default():
        v = sg.Variable(0.0)
        a = sg.assign_add(v, 1.0)
        b = sg.constant(5.0)
        ta, tb = sg.tuple([a, b])
    sess = sg.Session(graph=g)
    sess.run(v.initializer)
    assert sess.run(tb) == 5.0
    assert sess.run(v) == 1.0  # fetching tb ran the assignment too
    assert sess.run(ta) == 2.0


def test_random_with_shape_list_of_tensors():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [None, 3])
        r = sg.random_uniform([sg.shape(p)[0], 5])
    assert r.shape.ndims == 2
    assert sg.Session(graph=g).run(r, {p: np.zeros((4, 3))}).shape == (4, 5)


# -- scatter_add, scatter_sub, scatter_update ----------------------------------------------------
@pytest.mark.parametrize("rows", [5, 5000])  # (5000 x 4 float64: large enough to go in place)
def test_scatters_change_only_their_rows_and_add_repeated_ones(rows):
    g = sg.Graph()
    with g.as_default():
        start = np.arange(rows * 4, dtype=np.float64).reshape(rows, 4)
        v = sg.Variable(start, name="v")
        ids = sg.placeholder(sg.int32, [None])
        upd = sg.placeholder(sg.float64, [None, 4])
        add, sub = sg.scatter_add(v, ids, upd), sg.scatter_sub(v, ids, upd)
        put = sg.scatter_update(v, ids, upd)
        sess = sg.Session()
        sess.run(sg.global_variables_initializer())
        feed = {ids: [1, 3, 1], upd: np.arange(12.0).reshape(3, 4)}
        want = start.copy()
        np.add.at(want, [1, 3, 1], feed[upd])
        np.testing.assert_array_equal(sess.run(add, feed), want)
        np.subtract.at(want, [1, 3, 1], feed[upd])
        sess.run(sub.op, feed)
        np.testing.assert_array_equal(sess.run(v), want)
        sess.run(put.op, {ids: [0, 2], upd: np.ones((2, 4))})
        want[[0, 2]] = 1.0
        np.testing.assert_array_equal(sess.run(v), want)
        in_place = ", True)" in sess.source(sub.op, feed)
        assert in_place == (rows == 5000)


def test_scatters_check_their_shapes_and_indices():
    g = sg.Graph()
    with g.as_default():
        v = sg.Variable(np.zeros((3, 2)), name="v")
        with pytest.raises(ValueError, match=r"ScatterAdd .*need shape \(2, 2\)"):
            sg.scatter_add(v, [0, 1], [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
        with pytest.raises(TypeError, match="can only assign to a variable"):
            sg.scatter_sub(sg.constant([[1.0]]), [0], [[1.0]])
        sess = sg.Session()
        sess.run(sg.global_variables_initializer())
        for bad in (3, -1):
            with pytest.raises(sg.errors.InvalidArgumentError,
                               match=rf"ScatterSub .*indices holds {bad}, which is not in "
                                     r"\[0, 3\)"):
                sess.run(sg.scatter_sub(v, [0, bad], np.ones((2, 2))))
        np.testing.assert_array_equal(sess.run(v), np.zeros((3, 2)))  # nothing written
