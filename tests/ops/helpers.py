"""How tests/ops/ checks an op: built on fed placeholders, run through `Session.run`, and
compared with NumPy written by hand.

`check_result` checks the values, and that the result's dtype and shape are what the
graph's static dtype and shape say (rank-0 results come back as NumPy scalars).
`run_graph` builds a case in one of `MODES`: placeholders of fully known shape, placeholders
whose dims are all unknown (so the session specializes the graph to the fed shapes),
placeholders of unknown rank, or constants and no feeds (build-time folding)."""

from __future__ import annotations

import math

import numpy as np

import staticgrad as sg

RNG = np.random.default_rng(1234)


F32, F64, I32, I64, BOOL = np.float32, np.float64, np.int32, np.int64, np.bool_


FLOATS = (F32, F64)


NUMERIC = (F32, F64, I32)


def _dt_name(dt):
    return np.dtype(dt).name


def _shape_name(shape):
    return "x".join(str(d) for d in shape) if shape else "scalar"


def data(shape, dtype, low=-3.0, high=3.0, nonzero=False):
    """Random test data of `shape` and `dtype` in [low, high)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        a = RNG.integers(int(math.floor(low)), int(math.ceil(high)) + 1, size=shape)
        if nonzero:
            a = np.where(a == 0, 1, a)
        return np.asarray(a, dtype=dtype)
    a = RNG.uniform(low, high, size=shape)
    if nonzero:
        a = np.where(np.abs(a) < 0.1, 0.5, a)
    return np.asarray(a, dtype=dtype)


def tol(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return {"rtol": 2e-5, "atol": 2e-6}
    if dtype == np.float16:
        return {"rtol": 1e-3, "atol": 1e-3}
    if dtype.kind == "f":
        return {"rtol": 1e-11, "atol": 1e-12}
    return {"rtol": 0, "atol": 0}


def placeholder_for(a, mode):
    a = np.asarray(a)
    if mode == "static":
        shape = a.shape
    elif mode == "dynamic":
        shape = [None] * a.ndim
    else:  # unknown rank
        shape = None
    return sg.placeholder(sg.as_dtype(a.dtype), shape)


def run_graph(build, arrays, mode="static"):
    """Build `build(*placeholders)` in a fresh graph, feed `arrays`, return (outputs, results)."""
    g = sg.Graph()
    with g.as_default():
        if mode == "const":  # no feeds: exercises build-time folding and inlined constants
            phs = [sg.constant(np.asarray(a)) for a in arrays]
            out = build(*phs)
            return out, sg.Session(graph=g).run(out)
        phs = [placeholder_for(a, mode) for a in arrays]
        out = build(*phs)
    sess = sg.Session(graph=g)
    res = sess.run(out, feed_dict={p: a for p, a in zip(phs, arrays)})
    return out, res


def check_result(t, res, expected, out_dtype=None, mode="static", **tolerance):
    """`res` (a fetched value of tensor `t`) equals `expected`, with the dtype and shape that
    `t` says statically."""
    expected = np.asarray(expected)
    assert isinstance(t, sg.Tensor)
    if out_dtype is not None:
        assert t.dtype == sg.as_dtype(out_dtype), f"static dtype {t.dtype}, wanted {out_dtype}"
    assert np.dtype(res.dtype) == t.dtype.np, f"result dtype {res.dtype} != static {t.dtype}"
    if t.shape.ndims == 0 or (t.shape.ndims is None and expected.ndim == 0):
        assert isinstance(res, np.generic), f"rank-0 result is a {type(res).__name__}"
    else:
        assert isinstance(res, np.ndarray), f"result is a {type(res).__name__}"
    assert res.shape == expected.shape, f"result shape {res.shape}, expected {expected.shape}"
    assert t.shape.is_compatible_with(res.shape), f"static {t.shape} vs result {res.shape}"
    if mode in ("static", "const"):
        assert t.shape.is_fully_defined(), f"static shape {t.shape} not fully known"
        assert tuple(t.shape.as_list()) == res.shape
    kw = tol(res.dtype)
    kw.update(tolerance)
    if res.dtype == BOOL or res.dtype.kind in "iu":
        np.testing.assert_array_equal(res, expected)
    else:
        np.testing.assert_allclose(res, expected, **kw)


MODES = ["static", "dynamic", "const", "unknown_rank"]
