"""Reductions and argmax/argmin (ops/reduction_ops.py) against NumPy written by hand.
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


def _np_reduce(kind, x, axis, keepdims):
    ax = None if axis is None else tuple(a % x.ndim for a in np.atleast_1d(axis)) \
        if x.ndim else None
    if kind == "sum":
        r = np.add.reduce(x.astype(np.float64 if x.dtype.kind == "f" else np.int64), axis=ax,
                          keepdims=keepdims)
    elif kind == "prod":
        r = np.multiply.reduce(x.astype(np.float64 if x.dtype.kind == "f" else np.int64),
                               axis=ax, keepdims=keepdims)
    elif kind == "max":
        r = np.maximum.reduce(x, axis=ax, keepdims=keepdims)
    elif kind == "min":
        r = np.minimum.reduce(x, axis=ax, keepdims=keepdims)
    elif kind == "any":
        r = np.logical_or.reduce(x, axis=ax, keepdims=keepdims)
    elif kind == "all":
        r = np.logical_and.reduce(x, axis=ax, keepdims=keepdims)
    elif kind == "mean":
        s = np.add.reduce(x.astype(np.float64), axis=ax, keepdims=keepdims)
        n = x.size // max(np.asarray(s).size, 1) if x.size else 1
        r = s / n
        if x.dtype.kind in "iu":
            r = np.trunc(r)
    return np.asarray(r).astype(x.dtype)


REDUCERS = {"sum": sg.reduce_sum, "mean": sg.reduce_mean, "max": sg.reduce_max,
            "min": sg.reduce_min, "prod": sg.reduce_prod, "any": sg.reduce_any,
            "all": sg.reduce_all}


REDUCE_AXES = [((2, 3, 4), None), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
               ((2, 3, 4), (0, 2)), ((2, 3, 4), [1, -1]), ((2, 3, 4), (0, 1, 2)), ((5,), 0),
               ((5,), None), ((), None), ((0, 3), 1), ((0, 3), 0), ((3, 0), 0), ((0, 3), None)]


def _reduce_cases():
    for kind, fn in REDUCERS.items():
        dtypes = (BOOL,) if kind in ("any", "all") else NUMERIC
        for dt in dtypes:
            for shape, axis in REDUCE_AXES:
                x_empty_reduced = 0 in shape and (axis is None or any(
                    shape[a] == 0 for a in np.atleast_1d(axis)))
                if kind in ("max", "min", "mean") and x_empty_reduced:
                    continue  # no identity element (max/min) or 0/0 (mean)
                for keepdims in (False, True):
                    for mode in MODES:
                        yield pytest.param(
                            kind, fn, dt, shape, axis, keepdims, mode,
                            id=f"reduce_{kind}-{_shape_name(shape)}-axis{axis}-"
                               f"keep{int(keepdims)}-{_dt_name(dt)}-{mode}")


@pytest.mark.parametrize("kind, fn, dtype, shape, axis, keepdims, mode", list(_reduce_cases()))
def test_reduce(kind, fn, dtype, shape, axis, keepdims, mode):
    x = data(shape, dtype, -3, 3) if kind != "prod" else data(shape, dtype, -2, 2)
    t, res = run_graph(lambda p: fn(p, axis=axis, keepdims=keepdims), [x], mode)
    check_result(t, res, _np_reduce(kind, x, axis, keepdims), out_dtype=dtype, mode=mode,
                 rtol=2e-5 if dtype == F32 else 1e-11)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "prod"])
def test_reduce_tf1_aliases(kind):
    x = data((2, 3, 4), F64)
    fn = REDUCERS[kind]
    t, res = run_graph(lambda p: fn(p, reduction_indices=[1], keep_dims=True), [x])
    check_result(t, res, _np_reduce(kind, x, 1, True), out_dtype=F64)
    t, res = run_graph(lambda p: fn(p, reduction_indices=2), [x])
    check_result(t, res, _np_reduce(kind, x, 2, False), out_dtype=F64)


def test_reduce_mean_int_truncates_toward_zero():
    x = np.array([[-3, -4], [3, 4]], dtype=I32)
    t, res = run_graph(lambda p: sg.reduce_mean(p, axis=1), [x])
    check_result(t, res, np.array([-3, 3], dtype=I32), out_dtype=I32)


def test_reduce_axis_out_of_range():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [2, 3])
        with pytest.raises(ValueError, match="Sum"):
            sg.reduce_sum(p, axis=2)


ARG_CASES = [((5,), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1),
             ((2, 3, 4), None), ((0, 3), 1)]


@pytest.mark.parametrize("which", ["argmax", "argmin"])
@pytest.mark.parametrize("shape, axis", ARG_CASES,
                         ids=[f"{_shape_name(s)}-axis{a}" for s, a in ARG_CASES])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("output_type", [I64, I32], ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_argmax_argmin(which, shape, axis, dtype, output_type, mode):
    x = data(shape, dtype, -100, 100)
    fn = getattr(sg, which)
    t, res = run_graph(lambda p: fn(p, axis=axis, output_type=sg.as_dtype(output_type)), [x],
                       mode)
    ax = 0 if axis is None else axis % len(shape)
    # by hand: the first index of the extreme value along ax
    moved = np.moveaxis(x, ax, -1)
    best = moved.max(axis=-1, keepdims=True) if which == "argmax" and moved.shape[-1] else \
        moved.min(axis=-1, keepdims=True) if moved.shape[-1] else None
    if best is None:
        expected = np.zeros(moved.shape[:-1], dtype=output_type)
    else:
        hits = moved == best
        expected = np.array([np.nonzero(row)[0][0] for row in hits.reshape(-1, hits.shape[-1])],
                            dtype=output_type).reshape(moved.shape[:-1])
    check_result(t, res, expected, out_dtype=output_type, mode=mode)


def test_arg_max_tf1_names():
    x = data((3, 4), F32)
    t, res = run_graph(lambda p: sg.arg_max(p, dimension=1), [x])
    check_result(t, res, np.argmax(x, axis=1).astype(I64), out_dtype=I64)
    t, res = run_graph(lambda p: sg.arg_min(p, 0), [x])
    check_result(t, res, np.argmin(x, axis=0).astype(I64), out_dtype=I64)


def test_reduce_with_axis_tensor():
    x = data((2, 3), F32)
    t, res = run_graph(lambda p: sg.reduce_sum(p, axis=sg.constant([1])), [x])
    check_result(t, res, x.astype(np.float64).sum(axis=1).astype(F32), out_dtype=F32)
