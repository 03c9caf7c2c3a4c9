"""Joining and splitting (ops/join_ops.py: concat, stack, unstack, split, tile, pad)
against NumPy written by hand. See helpers.py for what each case checks and the feeding
modes."""

from __future__ import annotations

import numpy as np
import pytest

import staticgrad as sg
from tests.ops.helpers import (
    F32,
    MODES,
    NUMERIC,
    _dt_name,
    _shape_name,
    check_result,
    data,
    run_graph,
)

CONCATS = [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 5)], 1), ([(2, 3), (2, 1), (2, 2)], -1),
           ([(2, 3), (0, 3)], 0), ([(1,), (2,), (3,)], 0), ([(2, 3, 4), (2, 1, 4)], 1),
           ([(3,)], 0)]


@pytest.mark.parametrize("shapes, axis", CONCATS,
                         ids=[f"concat-{'+'.join(map(_shape_name, s))}-axis{a}"
                              for s, a in CONCATS])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_concat(shapes, axis, dtype, mode):
    xs = [data(s, dtype) for s in shapes]
    t, res = run_graph(lambda *ps: sg.concat(list(ps), axis), xs, mode)
    check_result(t, res, np.concatenate(xs, axis=axis), out_dtype=dtype, mode=mode)


def test_concat_mismatch_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [2, 3])
        b = sg.placeholder(sg.float32, [2, 4])
        with pytest.raises(ValueError, match="ConcatV2"):
            sg.concat([a, b], 0)


STACKS = [((3,), 2, 0), ((3,), 2, 1), ((3,), 2, -1), ((2, 3), 3, 1), ((2, 3), 3, -1), ((), 4, 0),
          ((0, 2), 2, 0), ((2, 3), 1, 0)]


@pytest.mark.parametrize("shape, n, axis", STACKS,
                         ids=[f"stack-{n}x{_shape_name(s)}-axis{a}" for s, n, a in STACKS])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_stack(shape, n, axis, dtype, mode):
    xs = [data(shape, dtype) for _ in range(n)]
    t, res = run_graph(lambda *ps: sg.stack(list(ps), axis=axis), xs, mode)
    check_result(t, res, np.stack(xs, axis=axis), out_dtype=dtype, mode=mode)


def test_stack_mixed_tensors_and_numbers():
    x = np.float32(2.5)
    t, res = run_graph(lambda p: sg.stack([p, 1.0, 3]), [x])
    check_result(t, res, np.array([2.5, 1.0, 3.0], F32), out_dtype=F32)


UNSTACKS = [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1), ((1, 2), 0), ((4,), 0),
            ((2, 0), 0)]


@pytest.mark.parametrize("shape, axis", UNSTACKS,
                         ids=[f"unstack-{_shape_name(s)}-axis{a}" for s, a in UNSTACKS])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
def test_unstack(shape, axis, dtype):
    x = data(shape, dtype)
    ts, res = run_graph(lambda p: sg.unstack(p, axis=axis), [x])
    assert isinstance(res, list) and len(res) == shape[axis]
    for i, (t, r) in enumerate(zip(ts, res)):
        check_result(t, r, np.take(x, i, axis=axis), out_dtype=dtype)


SPLITS = [((6, 4), 2, 0), ((6, 4), 3, 0), ((6, 4), 4, 1), ((6, 4), 1, 0), ((6, 4), [1, 2, 3], 0),
          ((6, 4), [3, 1], -1), ((6, 4), [2, -1], 1), ((6, 4), [0, 6], 0), ((2, 3, 6), 3, -1),
          ((0, 4), 2, 1)]


@pytest.mark.parametrize("shape, spec, axis", SPLITS,
                         ids=[f"split-{_shape_name(s)}-{n}-axis{a}" for s, n, a in SPLITS])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_split(shape, spec, axis, dtype, mode):
    x = data(shape, dtype)
    ts, res = run_graph(lambda p: sg.split(p, spec, axis=axis), [x], mode)
    ax = axis % len(shape)
    if isinstance(spec, int):
        sizes = [shape[ax] // spec] * spec
    else:
        sizes = list(spec)
        if -1 in sizes:
            sizes[sizes.index(-1)] = shape[ax] - (sum(sizes) + 1)
    bounds = np.cumsum(sizes)[:-1]
    expected = np.split(x, bounds, axis=ax)
    assert len(res) == len(expected)
    for t, r, e in zip(ts, res, expected):
        check_result(t, r, e, out_dtype=dtype, mode=mode)


def test_split_uneven_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [5])
        with pytest.raises(ValueError):
            sg.split(p, 2)
        with pytest.raises(ValueError, match="Split"):
            sg.split(p, [2, 2])


TILES = [((2, 3), (1, 1)), ((2, 3), (2, 1)), ((2, 3), (2, 3)), ((3,), (4,)), ((2, 1, 3), (1, 2, 2)),
         ((0, 3), (2, 2)), ((2, 3), (0, 1))]


@pytest.mark.parametrize("shape, mult", TILES,
                         ids=[f"tile-{_shape_name(s)}-{m}" for s, m in TILES])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_tile(shape, mult, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(lambda p: sg.tile(p, list(mult)), [x], mode)
    # by hand: index arithmetic
    out_shape = tuple(d * m for d, m in zip(shape, mult))
    idx = np.indices(out_shape) if out_shape else ()
    expected = x[tuple(i % d for i, d in zip(idx, shape))] if all(out_shape) else \
        np.zeros(out_shape, dtype)
    check_result(t, res, expected, out_dtype=dtype, mode=mode)


PADS = [((2, 3), [[1, 0], [0, 2]], "CONSTANT", 0), ((2, 3), [[1, 1], [2, 2]], "CONSTANT", 5),
        ((4,), [[0, 0]], "CONSTANT", 0), ((3, 4), [[1, 2], [2, 1]], "REFLECT", 0),
        ((3, 4), [[1, 2], [3, 1]], "SYMMETRIC", 0), ((0, 2), [[1, 1], [0, 0]], "CONSTANT", 0),
        ((2, 2, 2), [[0, 1], [1, 0], [1, 1]], "constant", 0)]


def _np_pad(x, pads, mode, c):
    """Padding by hand: build the padded index for each axis."""
    out = x
    for ax, (before, after) in enumerate(pads):
        n = out.shape[ax]
        if mode == "CONSTANT":
            shape_b = list(out.shape)
            shape_b[ax] = before
            shape_a = list(out.shape)
            shape_a[ax] = after
            out = np.concatenate([np.full(shape_b, c, x.dtype), out, np.full(shape_a, c, x.dtype)],
                                 axis=ax)
            continue
        if mode == "REFLECT":
            left = [before - i for i in range(before)]            # x[before], ..., x[1]
            right = [n - 2 - i for i in range(after)]              # x[n-2], x[n-3], ...
        else:  # SYMMETRIC
            left = [before - 1 - i for i in range(before)]         # x[before-1], ..., x[0]
            right = [n - 1 - i for i in range(after)]              # x[n-1], x[n-2], ...
        index = left + list(range(n)) + right
        out = np.take(out, index, axis=ax)
    return out


@pytest.mark.parametrize("shape, pads, mode, c", PADS,
                         ids=[f"pad-{_shape_name(s)}-{m}-{p}-c{c}" for s, p, m, c in PADS])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("feed_mode", MODES)
def test_pad(shape, pads, mode, c, dtype, feed_mode):
    x = data(shape, dtype)
    t, res = run_graph(lambda p: sg.pad(p, pads, mode=mode, constant_values=c), [x], feed_mode)
    check_result(t, res, _np_pad(x, pads, mode.upper(), c), out_dtype=dtype, mode=feed_mode)


def test_unstack_and_split_with_unknown_dims():
    x = data((3, 4), F32)
    ts, res = run_graph(lambda p: sg.unstack(p, num=3), [x], "dynamic")
    for i, (t, r) in enumerate(zip(ts, res)):
        check_result(t, r, x[i], out_dtype=F32, mode="dynamic")
    ts, res = run_graph(lambda p: sg.unstack(p, num=4, axis=1), [x], "dynamic")
    for i, (t, r) in enumerate(zip(ts, res)):
        check_result(t, r, x[:, i], out_dtype=F32, mode="dynamic")
