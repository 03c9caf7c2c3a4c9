"""Elementwise math, comparisons, `where`, `cast`, `clip_by_value`, `add_n` and `matmul`
(ops/math_ops.py), and the Python operators bound to them (ops/__init__.py), against
NumPy written by hand. See helpers.py for what each case checks and the feeding modes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dynamic
from staticgrad.dynamic.nn import functional
from tests.ops.helpers import (
    BOOL,
    F32,
    F64,
    FLOATS,
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


def _np_sigmoid(x):
    x = x.astype(np.float64)
    return 1.0 / (1.0 + np.exp(-x))


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


# (name, sg function, reference, (low, high), dtypes)
UNARY = [
    ("negative", sg.negative, lambda x: -x, (-3, 3), NUMERIC),
    ("neg_operator", lambda x: -x, lambda x: -x, (-3, 3), NUMERIC),
    ("abs", sg.abs, np.abs, (-3, 3), NUMERIC),
    ("abs_operator", lambda x: abs(x), np.abs, (-3, 3), NUMERIC),
    ("sign", sg.sign, np.sign, (-3, 3), NUMERIC),
    ("square", sg.square, lambda x: x * x, (-3, 3), NUMERIC),
    ("sqrt", sg.sqrt, np.sqrt, (0.1, 4), FLOATS),
    ("rsqrt", sg.rsqrt, lambda x: 1.0 / np.sqrt(x.astype(np.float64)), (0.1, 4), FLOATS),
    ("reciprocal", sg.reciprocal, lambda x: 1.0 / x.astype(np.float64), (0.5, 4), FLOATS),
    ("exp", sg.exp, np.exp, (-3, 3), FLOATS),
    ("expm1", sg.expm1, lambda x: np.exp(x.astype(np.float64)) - 1, (-3, 3), FLOATS),
    ("log", sg.log, np.log, (0.1, 4), FLOATS),
    ("log1p", sg.log1p, lambda x: np.log(1 + x.astype(np.float64)), (-0.5, 3), FLOATS),
    ("sin", sg.sin, np.sin, (-3, 3), FLOATS),
    ("cos", sg.cos, np.cos, (-3, 3), FLOATS),
    ("tan", sg.tan, np.tan, (-1, 1), FLOATS),
    ("tanh", sg.tanh, np.tanh, (-3, 3), FLOATS),
    ("sigmoid", sg.sigmoid, _np_sigmoid, (-8, 8), FLOATS),
    ("nn.sigmoid", sg.nn.sigmoid, _np_sigmoid, (-8, 8), FLOATS),
    ("softplus", sg.softplus, lambda x: np.log(1 + np.exp(x.astype(np.float64))), (-8, 8), FLOATS),
    ("nn.softplus", sg.nn.softplus, lambda x: np.log(1 + np.exp(x.astype(np.float64))), (-8, 8),
     FLOATS),
    ("erf", sg.erf, _np_erf, (-2, 2), FLOATS),
    ("relu", sg.relu, lambda x: np.where(x > 0, x, 0), (-3, 3), NUMERIC),
    ("nn.relu", sg.nn.relu, lambda x: np.where(x > 0, x, 0), (-3, 3), NUMERIC),
    ("relu6", sg.nn.relu6, lambda x: np.where(x < 0, 0, np.where(x > 6, 6, x)), (-9, 9), NUMERIC),
    ("elu", sg.nn.elu, lambda x: np.where(x > 0, x, np.exp(x.astype(np.float64)) - 1), (-3, 3),
     FLOATS),
    ("leaky_relu", sg.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x.astype(np.float64)),
     (-3, 3), FLOATS),
    ("leaky_relu_a0.1", lambda x: sg.nn.leaky_relu(x, alpha=0.1),
     lambda x: np.where(x > 0, x, 0.1 * x.astype(np.float64)), (-3, 3), FLOATS),
    ("nn.tanh", sg.nn.tanh, np.tanh, (-3, 3), FLOATS),
    ("floor", sg.floor, np.floor, (-3, 3), FLOATS),
    ("identity", sg.identity, lambda x: x, (-3, 3), NUMERIC),
    ("stop_gradient", sg.stop_gradient, lambda x: x, (-3, 3), NUMERIC),
]


UNARY_SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0,), (0, 3)]


def _unary_cases():
    for name, fn, ref, dom, dtypes in UNARY:
        for dt in dtypes:
            for shape in UNARY_SHAPES:
                for mode in MODES:
                    yield pytest.param(fn, ref, dom, dt, shape, mode,
                                       id=f"{name}-{_shape_name(shape)}-{_dt_name(dt)}-{mode}")


@pytest.mark.parametrize("fn, ref, dom, dtype, shape, mode", list(_unary_cases()))
def test_unary(fn, ref, dom, dtype, shape, mode):
    x = data(shape, dtype, *dom)
    t, res = run_graph(fn, [x], mode)
    expected = np.asarray(ref(x))
    check_result(t, res, expected.astype(dtype), out_dtype=dtype, mode=mode)


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (0, 2)], ids=_shape_name)
def test_logical_not(shape):
    x = data(shape, BOOL)
    t, res = run_graph(sg.logical_not, [x])
    check_result(t, res, ~x, out_dtype=BOOL)


def _bits(a):
    """a's values as integers of its width: equal bits, NaN payloads and signed zeros too."""
    return a.view({2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize])


@pytest.mark.parametrize("alpha", [0.2, 1.0, 1e-30, 0.0, 1.5, 1e6, -0.5, np.inf, np.nan])
@pytest.mark.parametrize("dtype", [np.float16, F32, F64])
def test_leaky_relu_is_np_where_bit_for_bit(alpha, dtype):
    """LeakyRelu is computed as max(alpha x, x) (min for alpha > 1, a select for alpha <= 0):
    the same bits as np.where(x > 0, x, x * alpha) for signed zeros, infinities, NaN,
    subnormals and the largest values, in both modes."""
    info = np.finfo(dtype)
    x = np.concatenate([[0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, info.tiny / 4,
                         -info.tiny / 4, info.max, -info.max, info.eps, -info.eps, 0, 0],
                        RNG.standard_normal(200) * 10]).astype(dtype)
    bits = _bits(x)  # two signalling NaNs: +inf's bits plus one (np.where's product quiets it)
    bits[12] = bits[13] = bits[2] + 1
    bits[13] |= -(1 << (8 * x.itemsize - 1))  # the second one negative
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.as_dtype(dtype), [len(x)], name="a")
        y = sg.nn.leaky_relu(a, alpha)
    with np.errstate(all="ignore"), sg.Session(graph=g) as sess:
        want = np.where(x > 0, x, x * alpha)
        got = sess.run(y, {a: x})
        source = sess.source(y, {a: x})  # (inside: the block closes the session)
        eager = functional.leaky_relu(dynamic.tensor(x), alpha).numpy()
    with np.errstate(over="ignore"):
        rounded = np.array(alpha).astype(dtype)  # as x * alpha reads it (1e6: inf in float16)
    form = "np.maximum(" if 0 < rounded <= 1 else "np.minimum(" if rounded > 1 else "rt.select("
    assert form in source
    assert got.dtype == eager.dtype == dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))
    np.testing.assert_array_equal(_bits(eager), _bits(want))


def _np_floordiv(x, y):
    return np.floor_divide(x, y)


def _np_floormod(x, y):
    return x - np.floor_divide(x, y) * y


# (name, sg function, reference, domain of x, domain of y, dtypes, out dtype or None = same)
BINARY = [
    ("add", sg.add, lambda x, y: x + y, (-3, 3), (-3, 3), NUMERIC, None),
    ("add_op", lambda x, y: x + y, lambda x, y: x + y, (-3, 3), (-3, 3), NUMERIC, None),
    ("subtract", sg.subtract, lambda x, y: x - y, (-3, 3), (-3, 3), NUMERIC, None),
    ("sub_op", lambda x, y: x - y, lambda x, y: x - y, (-3, 3), (-3, 3), NUMERIC, None),
    ("multiply", sg.multiply, lambda x, y: x * y, (-3, 3), (-3, 3), NUMERIC, None),
    ("mul_op", lambda x, y: x * y, lambda x, y: x * y, (-3, 3), (-3, 3), NUMERIC, None),
    ("truediv", sg.truediv, lambda x, y: x / y, (-3, 3), (0.5, 3), FLOATS, None),
    ("divide", sg.divide, lambda x, y: x / y, (-3, 3), (0.5, 3), FLOATS, None),
    ("div_op", lambda x, y: x / y, lambda x, y: x / y, (-3, 3), (0.5, 3), FLOATS, None),
    ("truediv_int", sg.truediv,
     lambda x, y: x.astype(np.float64) / y.astype(np.float64), (-5, 5), (1, 4), (I32,), F64),
    ("floordiv", sg.floordiv, _np_floordiv, (-7, 7), (1, 3), NUMERIC, None),
    ("floordiv_neg", sg.floordiv, _np_floordiv, (-7, 7), (-3, -1), NUMERIC, None),
    ("floordiv_op", lambda x, y: x // y, _np_floordiv, (-7, 7), (1, 3), NUMERIC, None),
    ("mod", sg.mod, _np_floormod, (-7, 7), (1, 3), NUMERIC, None),
    ("mod_neg", sg.floormod, _np_floormod, (-7, 7), (-3, -1), NUMERIC, None),
    ("mod_op", lambda x, y: x % y, _np_floormod, (-7, 7), (1, 3), NUMERIC, None),
    ("pow", sg.pow, lambda x, y: np.power(x.astype(np.float64), y), (0.5, 3), (-2, 2), FLOATS,
     None),
    ("pow_int", sg.pow, lambda x, y: np.power(x.astype(np.int64), y.astype(np.int64)),
     (-3, 3), (0, 3), (I32,), None),
    ("pow_op", lambda x, y: x ** y, lambda x, y: np.power(x.astype(np.float64), y),
     (0.5, 3), (-2, 2), FLOATS, None),
    ("maximum", sg.maximum, lambda x, y: np.where(x >= y, x, y), (-3, 3), (-3, 3), NUMERIC, None),
    ("minimum", sg.minimum, lambda x, y: np.where(x <= y, x, y), (-3, 3), (-3, 3), NUMERIC, None),
    ("equal", sg.equal, lambda x, y: x == y, (-2, 2), (-2, 2), (I32,), BOOL),
    ("equal_f", sg.equal, lambda x, y: x == y, (-2, 2), (-2, 2), FLOATS, BOOL),
    ("not_equal", sg.not_equal, lambda x, y: x != y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("less", sg.less, lambda x, y: x < y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("less_op", lambda x, y: x < y, lambda x, y: x < y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("less_equal", sg.less_equal, lambda x, y: x <= y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("le_op", lambda x, y: x <= y, lambda x, y: x <= y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("greater", sg.greater, lambda x, y: x > y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("gt_op", lambda x, y: x > y, lambda x, y: x > y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("greater_equal", sg.greater_equal, lambda x, y: x >= y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("ge_op", lambda x, y: x >= y, lambda x, y: x >= y, (-2, 2), (-2, 2), NUMERIC, BOOL),
    ("logical_and", sg.logical_and, lambda x, y: x & y, None, None, (BOOL,), BOOL),
    ("logical_or", sg.logical_or, lambda x, y: x | y, None, None, (BOOL,), BOOL),
]


BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((2, 1, 4), (3, 1)),
                 ((), (3,)), ((3,), ()), ((), ()), ((0, 3), (3,)), ((0, 3), (1, 3)),
                 ((2, 0), (2, 1))]


def _binary_cases():
    for name, fn, ref, dx, dy, dtypes, out in BINARY:
        for dt in dtypes:
            for sx, sy in BINARY_SHAPES:
                for mode in MODES:
                    yield pytest.param(
                        fn, ref, dx, dy, dt, out, sx, sy, mode,
                        id=f"{name}-{_shape_name(sx)}-{_shape_name(sy)}-{_dt_name(dt)}-{mode}")


@pytest.mark.parametrize("fn, ref, dx, dy, dtype, out, sx, sy, mode", list(_binary_cases()))
def test_binary(fn, ref, dx, dy, dtype, out, sx, sy, mode):
    x = data(sx, dtype, *(dx or (0, 1)))
    y = data(sy, dtype, *(dy or (0, 1)), nonzero=name_needs_nonzero(fn))
    t, res = run_graph(fn, [x, y], mode)
    out = out or dtype
    expected = np.asarray(ref(x, y)).astype(out)
    check_result(t, res, expected, out_dtype=out, mode=mode)


def name_needs_nonzero(fn):
    return fn in (sg.floordiv, sg.mod, sg.floormod, sg.truediv, sg.divide)


@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
def test_binary_with_python_scalars_keeps_tensor_dtype(dtype):
    x = data((3,), dtype, 1, 4)

    def build(p):
        return [p + 1, 2 * p, p - 1, 10 - p, p * 3, -p + 2]
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.as_dtype(dtype), [3])
        outs = build(p)
    res = sg.Session(graph=g).run(outs, {p: x})
    for t, r, e in zip(outs, res, [x + 1, 2 * x, x - 1, 10 - x, x * 3, -x + 2]):
        check_result(t, r, np.asarray(e, dtype=dtype), out_dtype=dtype)


def test_binary_with_numpy_array_on_the_left():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [2, 3])
        t = np.ones((2, 3), dtype=np.float32) * 2 - p
    x = data((2, 3), F32)
    check_result(t, sg.Session(graph=g).run(t, {p: x}), 2 - x, out_dtype=F32)


@pytest.mark.parametrize("fn", [sg.floordiv, sg.mod], ids=["floordiv", "floormod"])
@pytest.mark.parametrize("dtype", [sg.int32, sg.int64], ids=["int32", "int64"])
def test_integer_division_by_a_fed_zero_is_an_error_not_zero(fn, dtype):
    """TF1 raises `Integer division by zero`; NumPy gives 0 with a warning."""
    with sg.Graph().as_default() as g:
        x = sg.placeholder(dtype, [None], name="x")
        y = sg.placeholder(dtype, [None], name="y")
        z = fn(x, y)
    with sg.Session(graph=g) as sess:
        assert sess.run(z, {x: [7, -7], y: [2, 2]}).tolist() == \
            ([3, -4] if fn is sg.floordiv else [1, 1])
        with pytest.raises(sg.errors.InvalidArgumentError,
                           match=r"Floor(Div|Mod) op .*test_math_ops.py.*integer division by zero"):
            sess.run(z, {x: [7, 7], y: [2, 0]})
    with pytest.raises(sg.errors.InvalidArgumentError, match="integer division by zero"):
        kind = dtype.as_numpy_dtype
        dynamic.tensor([7], dtype=kind) // dynamic.tensor([0], dtype=kind)


def test_float_floordiv_by_zero_stays_ieee():
    with sg.Graph().as_default() as g:
        x = sg.placeholder(sg.float32, [2], name="x")
        z = sg.floordiv(x, sg.zeros_like(x))
    with sg.Session(graph=g) as sess, np.errstate(divide="ignore", invalid="ignore"):
        out = sess.run(z, {x: [1.0, 0.0]})
    assert out[0] == np.inf and np.isnan(out[1])


def test_binary_dtype_mismatch_is_a_type_error():
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [2])
        b = sg.placeholder(sg.int32, [2])
        with pytest.raises(TypeError):
            sg.add(a, b)
        with pytest.raises(TypeError):
            sg.logical_and(a, a)


@pytest.mark.parametrize("sc, sx, sy", [((3, 4), (3, 4), (3, 4)), ((3, 1), (3, 4), (4,)),
                                        ((), (2, 3), (2, 3)), ((4,), (), ()),
                                        ((0, 2), (0, 2), (2,))],
                         ids=lambda s: _shape_name(s))
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_where(sc, sx, sy, dtype, mode):
    c = data(sc, BOOL)
    x, y = data(sx, dtype), data(sy, dtype)
    t, res = run_graph(lambda c_, x_, y_: sg.where(c_, x_, y_), [c, x, y], mode)
    check_result(t, res, np.where(c, x, y), out_dtype=dtype, mode=mode)


@pytest.mark.parametrize("sc, sx, sy", [((64, 300), (64, 300), (64, 300)),
                                        ((64, 300), (64, 1), ()), ((300,), (64, 300), (300,))],
                         ids=lambda s: _shape_name(s))
def test_where_of_large_arrays_is_np_where_bit_for_bit(sc, sx, sy):
    """Large selects are computed on the bits (rt.select): NaNs with their payloads and signed
    zeros come out as np.where gives them, in both modes, gradients included."""
    c = RNG.random(sc) < 0.5
    x = RNG.standard_normal(sx).astype(F32)
    y = RNG.standard_normal(sy).astype(F32)
    x.ravel()[:3] = [-np.nan, -0.0, 0.0]
    x.view(np.int32).ravel()[-1] = -1  # a NaN with every bit set
    g = sg.Graph()
    with g.as_default():
        cp, xp, yp = (sg.placeholder(sg.as_dtype(a.dtype), a.shape, name=n)
                      for a, n in ((c, "c"), (x, "x"), (y, "y")))
        out = sg.where(cp, xp, yp)
        dx, dy = sg.gradients(sg.reduce_sum(out * 2.0), [xp, yp])
    with sg.Session(graph=g) as sess:
        got, gx, gy = sess.run([out, dx, dy], {cp: c, xp: x, yp: y})
    want = np.where(c, x, y)
    eager = dynamic.where(dynamic.tensor(c), dynamic.tensor(x), dynamic.tensor(y)).numpy()
    for result in (got, eager):
        np.testing.assert_array_equal(result.view(np.int32), want.view(np.int32))
    picked = np.broadcast_to(c, want.shape)
    for grad, shape, mask in ((gx, sx, picked), (gy, sy, ~picked)):
        full = np.where(mask, np.float32(2), np.float32(0))  # summed back to the input's shape
        full = full.sum(axis=tuple(range(full.ndim - len(shape))))
        axes = tuple(i for i, d in enumerate(shape) if d == 1 and full.shape[i] != 1)
        np.testing.assert_array_equal(grad, full.sum(axis=axes, keepdims=True).reshape(shape))


CASTS = [(F32, I32, lambda x: np.trunc(x)), (F64, I32, lambda x: np.trunc(x)),
         (I32, F32, lambda x: x), (I32, F64, lambda x: x), (F32, F64, lambda x: x),
         (F64, F32, lambda x: x), (BOOL, F32, lambda x: np.where(x, 1.0, 0.0)),
         (F32, BOOL, lambda x: x != 0), (I32, BOOL, lambda x: x != 0), (I32, I64, lambda x: x),
         (BOOL, I32, lambda x: np.where(x, 1, 0))]


@pytest.mark.parametrize("src, dst, ref", CASTS,
                         ids=[f"cast-{_dt_name(a)}-to-{_dt_name(b)}" for a, b, _ in CASTS])
@pytest.mark.parametrize("shape", [(), (7,), (2, 3), (0,)], ids=_shape_name)
def test_cast(src, dst, ref, shape):
    x = data(shape, src, -4.9, 4.9)
    if src in FLOATS and dst is BOOL:
        x = np.where(RNG.random(shape) < 0.3, 0, x).astype(src)
    t, res = run_graph(lambda p: sg.cast(p, sg.as_dtype(dst)), [x])
    check_result(t, res, np.asarray(ref(x)).astype(dst), out_dtype=dst)


def test_cast_to_same_dtype_and_to_float():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.int32, [3])
        same = sg.cast(p, sg.int32)
        f = sg.to_float(p)
    r = sg.Session(graph=g).run([same, f], {p: [1, -2, 3]})
    check_result(same, r[0], np.array([1, -2, 3], I32), out_dtype=I32)
    check_result(f, r[1], np.array([1, -2, 3], F32), out_dtype=F32)


@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("shape", [(), (10,), (3, 4), (0, 2)], ids=_shape_name)
@pytest.mark.parametrize("mode", MODES)
def test_clip_by_value_scalar_bounds(dtype, shape, mode):
    x = data(shape, dtype, -5, 5)
    t, res = run_graph(lambda p: sg.clip_by_value(p, -1, 2), [x], mode)
    check_result(t, res, np.where(x < -1, -1, np.where(x > 2, 2, x)).astype(dtype),
                 out_dtype=dtype, mode=mode)


def test_clip_by_value_tensor_bounds():
    x = data((3, 4), F32, -5, 5)
    lo = data((4,), F32, -2, 0)
    hi = data((3, 1), F32, 0, 2)
    t, res = run_graph(lambda p, a, b: sg.clip_by_value(p, a, b), [x, lo, hi])
    check_result(t, res, np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(F32), out_dtype=F32)


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 3)], ids=_shape_name)
@pytest.mark.parametrize("mode", MODES)
def test_add_n(n, dtype, shape, mode):
    xs = [data(shape, dtype) for _ in range(n)]
    t, res = run_graph(lambda *ps: sg.add_n(list(ps)), xs, mode)
    expected = xs[0].copy()
    for a in xs[1:]:
        expected = expected + a
    check_result(t, res, expected.astype(dtype), out_dtype=dtype, mode=mode)


def test_add_n_shape_mismatch():
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [2])
        b = sg.placeholder(sg.float32, [3])
        with pytest.raises(ValueError, match="AddN"):
            sg.add_n([a, b])


def _np_matmul(a, b):
    """Matrix product by explicit sums (an independent reference), broadcasting batch dims."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    return (a[..., :, :, None] * b[..., None, :, :]).sum(axis=-2)


MATMUL = [((2, 3), (3, 4), False, False), ((3, 2), (3, 4), True, False),
          ((2, 3), (4, 3), False, True), ((3, 2), (4, 3), True, True),
          ((1, 1), (1, 1), False, False), ((0, 3), (3, 4), False, False),
          ((2, 0), (0, 4), False, False), ((2, 3), (3, 0), False, False),
          ((5, 2, 3), (5, 3, 4), False, False), ((5, 2, 3), (3, 4), False, False),
          ((2, 3), (5, 3, 4), False, False), ((1, 2, 3), (5, 3, 4), False, False),
          ((5, 3, 2), (5, 4, 3), True, True), ((5, 3, 2), (3, 4), True, False),
          ((2, 1, 2, 3), (3, 3, 4), False, False), ((4, 2, 3), (1, 4, 3), False, True)]


@pytest.mark.parametrize("sa, sb, ta, tb", MATMUL,
                         ids=[f"matmul-{_shape_name(a)}-{_shape_name(b)}-ta{int(ta)}-tb{int(tb)}"
                              for a, b, ta, tb in MATMUL])
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_matmul(sa, sb, ta, tb, dtype, mode):
    a, b = data(sa, dtype), data(sb, dtype)
    t, res = run_graph(lambda x, y: sg.matmul(x, y, transpose_a=ta, transpose_b=tb), [a, b], mode)
    ra = np.swapaxes(a, -1, -2) if ta else a
    rb = np.swapaxes(b, -1, -2) if tb else b
    expected = _np_matmul(ra, rb).astype(dtype)
    check_result(t, res, expected, out_dtype=dtype, mode=mode, rtol=1e-5, atol=1e-5)


def test_matmul_operator():
    a, b = data((2, 3), F32), data((3, 2), F32)
    t, res = run_graph(lambda x, y: x @ y, [a, b])
    check_result(t, res, _np_matmul(a, b).astype(F32), rtol=1e-5, atol=1e-5)


def test_matmul_rank1_is_a_value_error():
    g = sg.Graph()
    with g.as_default():
        a = sg.placeholder(sg.float32, [3])
        b = sg.placeholder(sg.float32, [3, 2])
        with pytest.raises(ValueError, match="MatMul"):
            sg.matmul(a, b)
        with pytest.raises(ValueError, match="MatMul"):
            sg.matmul(sg.placeholder(sg.float32, [2, 2, 3]), sg.placeholder(sg.float32, [3, 3, 4]))


@pytest.mark.parametrize("fn, ref", [
    (sg.nn.sigmoid, lambda x: np.where(x > 0, 1.0, 0.0)),
    (sg.nn.softplus, lambda x: np.where(x > 0, x, 0.0)),
    (sg.nn.elu, lambda x: np.where(x > 0, x, -1.0)),
    (sg.nn.tanh, np.sign),
], ids=["sigmoid", "softplus", "elu", "tanh"])
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
def test_activations_stable_for_huge_inputs(fn, ref, dtype):
    x = np.array([1000.0, -1000.0, 200.0, -200.0], dtype)
    with np.errstate(over="raise"):
        t, res = run_graph(fn, [x])
    assert np.all(np.isfinite(res))
    check_result(t, res, ref(x).astype(dtype), out_dtype=dtype)


REFLECTED = [("radd", lambda p: 2 + p, lambda x: 2 + x), ("rsub", lambda p: 2 - p, lambda x: 2 - x),
             ("rmul", lambda p: 3 * p, lambda x: 3 * x),
             ("rtruediv", lambda p: 6.0 / p, lambda x: 6.0 / x),
             ("rfloordiv", lambda p: 7 // p, lambda x: np.floor_divide(7, x)),
             ("rmod", lambda p: 7 % p, lambda x: 7 - np.floor_divide(7, x) * x),
             ("rpow", lambda p: 2 ** p, lambda x: np.power(2.0, x)),
             ("pow_scalar", lambda p: p ** 2, lambda x: x * x),
             ("floordiv_scalar", lambda p: p // 2, lambda x: np.floor_divide(x, 2)),
             ("mod_scalar", lambda p: p % 3, lambda x: x - np.floor_divide(x, 3) * 3)]


@pytest.mark.parametrize("build, ref", [r[1:] for r in REFLECTED], ids=[r[0] for r in REFLECTED])
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_reflected_operators(build, ref, dtype, mode):
    x = data((2, 3), dtype, 0.5, 4)
    t, res = run_graph(build, [x], mode)
    check_result(t, res, np.asarray(ref(x.astype(np.float64))).astype(dtype), out_dtype=dtype,
                 mode=mode)
