"""Shape and layout ops (ops/array_ops.py: reshape, transpose, expand_dims, squeeze,
broadcast_to, shape, size, rank) and the creation ops (zeros, ones, fill, their _like
forms; range, linspace, eye and constant beside them), against NumPy written by hand.
See helpers.py for what each case checks and the feeding modes."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.ops.helpers import (
    BOOL,
    F32,
    F64,
    I32,
    I64,
    MODES,
    NUMERIC,
    _dt_name,
    _shape_name,
    check_result,
    data,
    run_graph,
)

RESHAPES = [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1, 4)), ((2, 3, 4), (6, -1)), ((2, 3, 4), (-1,)),
            ((2, 3, 4), (4, -1, 2)), ((1,), ()), ((), (1, 1)), ((), (-1,)), ((0, 3), (-1, 3)),
            ((0, 3), (3, 0)), ((6,), (2, 3))]


@pytest.mark.parametrize("shape, target", RESHAPES,
                         ids=[f"reshape-{_shape_name(a)}-to-{b}" for a, b in RESHAPES])
@pytest.mark.parametrize("dtype", NUMERIC + (BOOL,), ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_reshape(shape, target, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(lambda p: sg.reshape(p, list(target)), [x], mode)
    check_result(t, res, x.reshape(target), out_dtype=dtype, mode=mode)


def test_reshape_bad_size_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [2, 3])
        with pytest.raises(ValueError, match="Reshape"):
            sg.reshape(p, [4, -1])
        with pytest.raises(ValueError, match="Reshape"):
            sg.reshape(p, [5])


def test_reshape_with_dynamic_shape_tensor():
    x = data((4, 6), F32)
    t, res = run_graph(lambda p: sg.reshape(p, sg.shape(p)[::-1]), [x], "dynamic")
    check_result(t, res, x.reshape(6, 4), mode="dynamic")


TRANSPOSES = [((3, 4), None), ((3, 4), (1, 0)), ((2, 3, 4), None), ((2, 3, 4), (1, 0, 2)),
              ((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1)),
              ((5,), None), ((), None), ((0, 3), None)]


@pytest.mark.parametrize("shape, perm", TRANSPOSES,
                         ids=[f"transpose-{_shape_name(s)}-perm{p}" for s, p in TRANSPOSES])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_transpose(shape, perm, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(lambda p: sg.transpose(p, perm), [x], mode)
    expected = x.transpose(None if perm is None else [q % len(shape) for q in perm])
    check_result(t, res, expected, out_dtype=dtype, mode=mode)


EXPANDS = [((3, 4), 0), ((3, 4), 1), ((3, 4), 2), ((3, 4), -1), ((3, 4), -3), ((), 0), ((), -1),
           ((0, 2), 1)]


@pytest.mark.parametrize("shape, axis", EXPANDS,
                         ids=[f"expand_dims-{_shape_name(s)}-axis{a}" for s, a in EXPANDS])
@pytest.mark.parametrize("mode", MODES)
def test_expand_dims(shape, axis, mode):
    x = data(shape, F32)
    t, res = run_graph(lambda p: sg.expand_dims(p, axis), [x], mode)
    check_result(t, res, np.expand_dims(x, axis), out_dtype=F32, mode=mode)


SQUEEZES = [((1, 3, 1, 4), None), ((1, 3, 1, 4), [0]), ((1, 3, 1, 4), [2]), ((1, 3, 1, 4), [-2]),
            ((1, 3, 1, 4), [0, 2]), ((1,), None), ((1, 1), None), ((3,), None), ((1, 0), [0])]


@pytest.mark.parametrize("shape, axis", SQUEEZES,
                         ids=[f"squeeze-{_shape_name(s)}-axis{a}" for s, a in SQUEEZES])
def test_squeeze(shape, axis):
    x = data(shape, I32)
    t, res = run_graph(lambda p: sg.squeeze(p, axis), [x])
    check_result(t, res, np.squeeze(x, None if axis is None else tuple(axis)), out_dtype=I32)
    # with unknown dims a size-1 axis named explicitly is still squeezable
    if axis is not None:
        t, res = run_graph(lambda p: sg.squeeze(p, axis), [x], "dynamic")
        check_result(t, res, np.squeeze(x, tuple(axis)), out_dtype=I32, mode="dynamic")


def test_squeeze_non_unit_axis_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="Squeeze"):
            sg.squeeze(sg.placeholder(sg.float32, [2, 3]), [0])


BROADCASTS = [((3,), (2, 3)), ((1,), (4,)), ((), (2, 2)), ((2, 1), (2, 3)), ((1, 3), (4, 2, 3)),
              ((2, 3), (2, 3)), ((1,), (0,)), ((3,), (0, 3))]


@pytest.mark.parametrize("shape, target", BROADCASTS,
                         ids=[f"broadcast_to-{_shape_name(s)}-to-{_shape_name(t)}"
                              for s, t in BROADCASTS])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_broadcast_to(shape, target, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(lambda p: sg.broadcast_to(p, list(target)), [x], mode)
    expected = x + np.zeros(target, dtype)
    check_result(t, res, expected.astype(dtype), out_dtype=dtype, mode=mode)


def test_broadcast_to_incompatible_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="BroadcastTo"):
            sg.broadcast_to(sg.placeholder(sg.float32, [3]), [2, 4])


def _run_const(t):
    return sg.Session(graph=t.graph).run(t)


CREATORS = [
    ("zeros", lambda: sg.zeros([2, 3]), np.zeros((2, 3), F32)),
    ("zeros_int", lambda: sg.zeros([4], dtype=sg.int32), np.zeros(4, I32)),
    ("zeros_empty", lambda: sg.zeros([0, 2]), np.zeros((0, 2), F32)),
    ("zeros_scalar", lambda: sg.zeros([]), np.float32(0)),
    ("ones", lambda: sg.ones([3], dtype=sg.float64), np.ones(3, F64)),
    ("ones_bool", lambda: sg.ones([2], dtype=sg.bool_), np.ones(2, BOOL)),
    ("fill", lambda: sg.fill([2, 2], 7.5), np.full((2, 2), 7.5, F32)),
    ("fill_int", lambda: sg.fill([3], 4), np.full(3, 4, I32)),
    ("fill_scalar", lambda: sg.fill([], 2.0), np.float32(2.0)),
    ("range_n", lambda: sg.range(5), np.array([0, 1, 2, 3, 4], I32)),
    ("range_start_limit", lambda: sg.range(2, 7), np.array([2, 3, 4, 5, 6], I32)),
    ("range_delta", lambda: sg.range(1, 10, 3), np.array([1, 4, 7], I32)),
    ("range_negative_delta", lambda: sg.range(5, 0, -2), np.array([5, 3, 1], I32)),
    ("range_float", lambda: sg.range(0.0, 1.0, 0.25), np.array([0, 0.25, 0.5, 0.75], F32)),
    ("range_empty", lambda: sg.range(3, 3), np.zeros(0, I32)),
    ("range_dtype", lambda: sg.range(3, dtype=sg.float64), np.array([0.0, 1.0, 2.0], F64)),
    ("linspace", lambda: sg.linspace(0.0, 1.0, 5), np.array([0, 0.25, 0.5, 0.75, 1.0], F32)),
    ("lin_space_f64", lambda: sg.lin_space(np.float64(-1), np.float64(1), 3),
     np.array([-1.0, 0.0, 1.0], F64)),
    ("eye", lambda: sg.eye(3), np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], F32)),
    ("eye_rect", lambda: sg.eye(2, 3, dtype=sg.int32), np.array([[1, 0, 0], [0, 1, 0]], I32)),
    ("eye_batch", lambda: sg.eye(2, batch_shape=[3]),
     np.array([[[1, 0], [0, 1]]] * 3, F32)),
    ("constant", lambda: sg.constant([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], I32)),
    ("constant_shape", lambda: sg.constant(1.5, shape=[2, 2]), np.full((2, 2), 1.5, F32)),
    ("constant_scalar_f64", lambda: sg.constant(2.0, dtype=sg.float64), np.float64(2.0)),
]


@pytest.mark.parametrize("build, expected", [c[1:] for c in CREATORS],
                         ids=[c[0] for c in CREATORS])
def test_creation_ops(build, expected):
    g = sg.Graph()
    with g.as_default():
        t = build()
    check_result(t, sg.Session(graph=g).run(t), expected, out_dtype=np.asarray(expected).dtype)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 4)], ids=_shape_name)
@pytest.mark.parametrize("dtype", NUMERIC + (BOOL,), ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_zeros_like_ones_like(shape, dtype, mode):
    x = data(shape, dtype)
    for fn, ref in ((sg.zeros_like, np.zeros), (sg.ones_like, np.ones)):
        t, res = run_graph(fn, [x], mode)
        check_result(t, res, ref(shape, dtype), out_dtype=dtype, mode=mode)
        t, res = run_graph(lambda p, fn=fn: fn(p, dtype=sg.float64), [x], mode)
        check_result(t, res, ref(shape, F64), out_dtype=F64, mode=mode)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 4), (2, 1, 5)], ids=_shape_name)
@pytest.mark.parametrize("mode", ["static", "dynamic", "unknown_rank"])
def test_shape_size_rank(shape, mode):
    x = data(shape, F32)
    (ts, tz, tr, ts64), res = run_graph(
        lambda p: (sg.shape(p), sg.size(p), sg.rank(p), sg.shape(p, out_type=sg.int64)), [x], mode)
    check_result(ts, res[0], np.array(shape, dtype=I32).reshape(len(shape)), out_dtype=I32,
                 mode="static" if mode == "static" else "dynamic")
    check_result(tz, res[1], np.int32(int(np.prod(shape))), out_dtype=I32,
                 mode="static" if mode == "static" else "dynamic")
    check_result(tr, res[2], np.int32(len(shape)), out_dtype=I32,
                 mode="static" if mode != "unknown_rank" else "dynamic")
    check_result(ts64, res[3], np.array(shape, dtype=I64).reshape(len(shape)), out_dtype=I64,
                 mode="static" if mode == "static" else "dynamic")


def test_creation_from_dynamic_shape():
    x = data((3, 2), F32)
    (tz, tf, tr), res = run_graph(
        lambda p: (sg.zeros(sg.shape(p)), sg.fill(sg.shape(p), 2.0), sg.range(sg.size(p))),
        [x], "dynamic")
    check_result(tz, res[0], np.zeros((3, 2), F32), mode="dynamic")
    check_result(tf, res[1], np.full((3, 2), 2.0, F32), mode="dynamic")
    check_result(tr, res[2], np.arange(6, dtype=I32), mode="dynamic")
