"""Indexing (ops/indexing_ops.py: `tensor[...]`, slice, gather, one_hot, where(cond),
range of tensors) against NumPy written by hand; an index out of range is an error,
never a wrap. See helpers.py for what each case checks and the feeding modes."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dynamic
from tests.ops.helpers import (
    BOOL,
    F32,
    F64,
    I32,
    I64,
    MODES,
    NUMERIC,
    RNG,
    _dt_name,
    _shape_name,
    check_result,
    data,
    run_graph,
)

SLICES = [((4, 5), [1, 2], [2, 3]), ((4, 5), [0, 0], [-1, -1]), ((4, 5), [1, 0], [-1, 2]),
          ((4, 5), [3, 4], [1, 1]), ((6,), [2], [0]), ((2, 3, 4), [1, 0, 2], [1, 3, -1]),
          ((0, 3), [0, 1], [0, 2])]


@pytest.mark.parametrize("shape, begin, size", SLICES,
                         ids=[f"slice-{_shape_name(s)}-b{b}-s{z}" for s, b, z in SLICES])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_slice(shape, begin, size, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(lambda p: sg.slice(p, begin, size), [x], mode)
    idx = tuple(slice(b, d if s == -1 else b + s) for b, s, d in zip(begin, size, shape))
    check_result(t, res, x[idx], out_dtype=dtype, mode=mode)


def test_slice_out_of_bounds_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="Slice"):
            sg.slice(sg.placeholder(sg.float32, [4, 5]), [2, 0], [3, 1])


GATHERS = [((5,), (3,), 0), ((5, 3), (4,), 0), ((5, 3), (2, 2), 0), ((5, 3), (4,), 1),
           ((2, 5, 3), (2,), 1), ((2, 5, 3), (3,), -1), ((5, 3), (), 0), ((5, 3), (0,), 0),
           ((5,), (2, 3), 0)]


@pytest.mark.parametrize("shape, ishape, axis", GATHERS,
                         ids=[f"gather-{_shape_name(s)}-idx{_shape_name(i)}-axis{a}"
                              for s, i, a in GATHERS])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("itype", [I32, I64], ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_gather(shape, ishape, axis, dtype, itype, mode):
    x = data(shape, dtype)
    ax = axis % len(shape)
    idx = RNG.integers(0, shape[ax], size=ishape).astype(itype)
    t, res = run_graph(lambda p, i: sg.gather(p, i, axis=axis), [x, idx], mode)
    # by hand: gather along ax by building the output index
    out_shape = shape[:ax] + ishape + shape[ax + 1:]
    expected = np.empty(out_shape, dtype)
    for pos in np.ndindex(*out_shape):
        pre, mid, post = pos[:ax], pos[ax:ax + len(ishape)], pos[ax + len(ishape):]
        expected[pos] = x[pre + (int(idx[mid]),) + post]
    check_result(t, res, expected, out_dtype=dtype, mode=mode)


def test_gather_with_python_indices():
    x = data((5, 2), F32)
    t, res = run_graph(lambda p: sg.gather(p, [4, 0, 4]), [x])
    check_result(t, res, x[[4, 0, 4]], out_dtype=F32)


@pytest.mark.parametrize("bad", [-1, 3])
def test_a_gather_index_out_of_range_is_an_error_not_a_wrap(bad):
    """TF1 raises `indices[0] = -1 is not in [0, 3)`; np.take alone would read index -1 as
    the last row."""
    with sg.Graph().as_default():
        p = sg.placeholder(sg.float32, [3, 2], name="params")
        i = sg.placeholder(sg.int32, [None], name="indices")
        y = sg.gather(p, i, name="picked")
    with sg.Session(graph=y.graph) as sess:
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match=rf"GatherV2 op \"picked\".*test_indexing_ops.py.*"
                                 rf"indices\[1\] = {bad} is not in \[0, 3\)"):
            sess.run(y, {p: np.zeros((3, 2), np.float32), i: [0, bad]})
    with pytest.raises(sg.errors.InvalidArgumentError, match=r"is not in \[0, 3\)"):
        dynamic.index_select(dynamic.tensor(np.zeros((3, 2), np.float32)), 0,
                             dynamic.tensor([bad]))


def test_one_hot_with_a_negative_depth_is_refused():
    with pytest.raises(ValueError, match=r"attribute 'depth' of OneHot must be an int in "
                                         r"\[0, .*got -1"):
        sg.one_hot([0, 1], depth=-1)


ONE_HOTS = [((4,), 3, -1, None, None, F32), ((4,), 5, 0, None, None, F32),
            ((2, 3), 4, -1, 5.0, -1.0, F32), ((2, 3), 4, 1, None, None, F64),
            ((2, 3), 4, 0, 3, 7, I32), ((), 3, -1, None, None, F32), ((0,), 3, -1, None, None, F32),
            ((3,), 2, -1, True, False, BOOL)]


@pytest.mark.parametrize("shape, depth, axis, on, off, dtype", ONE_HOTS,
                         ids=[f"one_hot-{_shape_name(s)}-d{d}-axis{a}-{_dt_name(t)}"
                              for s, d, a, _, _, t in ONE_HOTS])
@pytest.mark.parametrize("mode", MODES)
def test_one_hot(shape, depth, axis, on, off, dtype, mode):
    idx = RNG.integers(-1, depth + 1, size=shape).astype(I32)  # includes out-of-range -1, depth
    t, res = run_graph(lambda i: sg.one_hot(i, depth, on_value=on, off_value=off, axis=axis,
                                            dtype=sg.as_dtype(dtype)), [idx], mode)
    on_v = 1 if on is None else on
    off_v = 0 if off is None else off
    out_axis = len(shape) if axis == -1 else axis
    out_shape = list(shape)
    out_shape.insert(out_axis, depth)
    expected = np.full(out_shape, off_v, dtype)
    for pos in np.ndindex(*shape):
        k = int(idx[pos])
        if 0 <= k < depth:
            expected[pos[:out_axis] + (k,) + pos[out_axis:]] = on_v
    check_result(t, res, expected, out_dtype=dtype, mode=mode)


class _Idx:
    def __getitem__(self, key):
        return key


IX = _Idx()


GETITEMS = [
    ((5,), IX[2], "2"), ((5,), IX[-1], "-1"), ((5,), IX[1:4], "1:4"), ((5,), IX[::-1], "::-1"),
    ((5,), IX[::2], "::2"), ((5,), IX[-3:], "-3:"), ((5,), IX[:-2], ":-2"),
    ((5,), IX[4:1:-2], "4:1:-2"),
    ((5,), IX[10:], "10:"), ((5,), IX[None], "None"), ((5,), IX[..., None], "...,None"),
    ((3, 4), IX[1], "1"), ((3, 4), IX[1, 2], "1,2"), ((3, 4), IX[-1, -2], "-1,-2"),
    ((3, 4), IX[:, 1], ":,1"), ((3, 4), IX[::2, 1:], "::2,1:"), ((3, 4), IX[..., 0], "...,0"),
    ((3, 4), IX[None, :, None], "None,:,None"), ((3, 4), IX[1, None, -1], "1,None,-1"),
    ((3, 4), IX[-2:, ...], "-2:,..."), ((3, 4), IX[::-1, ::-2], "::-1,::-2"),
    ((2, 3, 4), IX[..., 1:3], "...,1:3"), ((2, 3, 4), IX[1, ..., 2], "1,...,2"),
    ((2, 3, 4), IX[:, None, 1], ":,None,1"), ((2, 3, 4), IX[...], "..."),
    ((2, 3, 4), IX[0, 1, 2], "0,1,2"), ((0, 3), IX[:, 1], "empty:,1"),
    ((4, 0), IX[1:3], "1:3 of 4x0"),
    ((), IX[...], "scalar..."), ((), IX[None], "scalarNone"),
]


@pytest.mark.parametrize("shape, key", [(s, k) for s, k, _ in GETITEMS],
                         ids=[f"getitem-{_shape_name(s)}-[{n}]" for s, _, n in GETITEMS])
@pytest.mark.parametrize("dtype", [F32, I32], ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_getitem(shape, key, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(lambda p: p[key], [x], mode)
    check_result(t, res, x[key], out_dtype=dtype, mode=mode)


def test_getitem_out_of_bounds_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [3, 4])
        with pytest.raises(ValueError, match="StridedSlice"):
            p[3]
        with pytest.raises(ValueError, match="StridedSlice"):
            p[0, 0, 0]
        with pytest.raises(TypeError):
            p[1.5]


def test_getitem_result_is_not_a_view_of_the_feed():
    x = data((4,), F32)
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [4])
        t = p[1:3]
    res = sg.Session(graph=g).run(t, {p: x})
    before = x.copy()
    res[:] = 100
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 2, 2), (0, 3), ()], ids=_shape_name)
def test_where_coordinates(shape):
    c = data(shape, BOOL)
    t, res = run_graph(lambda p: sg.where(p), [c])
    assert t.shape.as_list() == [None, len(shape)]
    coords = [pos for pos in np.ndindex(*shape) if c[pos]]
    expected = np.array(coords, dtype=I64).reshape(len(coords), len(shape))
    check_result(t, res, expected, out_dtype=I64, mode="dynamic")


def test_range_of_tensors():
    n = np.int32(4)
    t, res = run_graph(lambda p: sg.range(p), [n], "static")
    check_result(t, res, np.arange(4, dtype=I32), out_dtype=I32, mode="dynamic")
    t, res = run_graph(lambda a, b: sg.range(a, b, 0.5), [np.float32(1), np.float32(3)])
    check_result(t, res, np.array([1, 1.5, 2, 2.5], F32), out_dtype=F32, mode="dynamic")


COMPUTED = [("x[i]", lambda x, i, j: x[i]), ("x[1:3, i]", lambda x, i, j: x[1:3, i]),
            ("x[..., i]", lambda x, i, j: x[..., i]), ("x[i, 2]", lambda x, i, j: x[i, 2]),
            ("x[None, i, ::-1, j]", lambda x, i, j: x[None, i, ::-1, j]),
            ("x[i, j]", lambda x, i, j: x[i, j])]


@pytest.mark.parametrize("index", [f for _, f in COMPUTED], ids=[n for n, _ in COMPUTED])
def test_an_index_computed_when_the_graph_runs_picks_as_numpy_does(index):
    xv = RNG.normal(size=(4, 5, 6))
    with sg.Graph().as_default():
        x = sg.placeholder(F64, [4, 5, 6], name="x")
        i = sg.placeholder(I32, [], name="i")
        j = sg.placeholder(I64, [], name="j")
        out = index(x, i, j)
        assert out.shape.as_list() == list(index(xv, 0, 0).shape)
        (dx,) = sg.gradients(sg.reduce_sum(out * out), [x])
        dx = sg.convert_to_tensor(dx)  # (x[i]: a gather, whose gradient is IndexedSlices)
        sess = sg.Session()
        for iv, jv in ((1, 2), (-1, -3), (3, 0)):  # (negative: from the end, as TF1)
            got, grad = sess.run([out, dx], {x: xv, i: iv, j: jv})
            np.testing.assert_array_equal(got, index(xv, iv, jv))
            want = np.zeros_like(xv)
            picked = np.zeros_like(xv, dtype=bool)
            index(picked, iv, jv)[...] = True  # (NumPy's view of the same picks)
            want[picked] = 2 * xv[picked]
            np.testing.assert_allclose(grad, want)
        for bad in (7, -7):
            with pytest.raises(sg.errors.InvalidArgumentError,
                               match=r"test_indexing_ops.py:\d+.* is not in \[0, [456]\)"):
                sess.run(out, {x: xv, i: bad, j: 0})


def test_a_narrow_computed_index_and_a_rank_known_only_before_it():
    with sg.Graph().as_default():
        x = sg.constant(np.arange(300.0))
        i = sg.placeholder(sg.int8, [], name="i")
        free = sg.placeholder(F64, None, name="free")
        sess = sg.Session()
        assert sess.run(x[i], {i: -1}) == 299.0  # (the size 300 is no int8)
        np.testing.assert_array_equal(sess.run(free[i, ...], {free: np.eye(3), i: 1}),
                                      [0, 1, 0])
        with pytest.raises(ValueError, match=r"a computed index after '...' needs the rank"):
            free[..., i]  # noqa: B018
        with pytest.raises(ValueError, match=r"cannot index Const\S*: it is a scalar"):
            sg.constant(1.0)[i]  # noqa: B018


def test_a_computed_index_must_be_an_integer_scalar():
    with sg.Graph().as_default():
        x = sg.placeholder(F64, [4, 5], name="x")
        with pytest.raises(TypeError, match=r"cannot index x:0: a computed index must be an "
                                            r"integer scalar, got float64\(\)"):
            x[sg.placeholder(F64, [])]
        with pytest.raises(TypeError, match=r"integer scalar, got int32\(2,\)"):
            x[sg.placeholder(I32, [2])]
