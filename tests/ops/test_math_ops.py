"""Every public op, run through `Session.run` with fed placeholders, against NumPy written by hand.

Each case checks the values, and that the result's dtype and shape are what the graph's static
dtype and shape say (rank-0 results come back as NumPy scalars). Cases run twice: with
placeholders of fully known shape, and with placeholders whose dims are all unknown (so the
session specializes the graph to the fed shapes).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.dynamic as dynamic
from staticgrad.dynamic.nn import functional

RNG = np.random.default_rng(1234)

F32, F64, I32, I64, BOOL = np.float32, np.float64, np.int32, np.int64, np.bool_
FLOATS = (F32, F64)
NUMERIC = (F32, F64, I32)


# -- helpers --------------------------------------------------------------------------------------

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


# -- unary elementwise ----------------------------------------------------------------------------

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


# -- binary elementwise ---------------------------------------------------------------------------

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


# -- where, cast, clip_by_value, add_n ------------------------------------------------------------

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


# -- matmul ---------------------------------------------------------------------------------------

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


# -- reductions -----------------------------------------------------------------------------------

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


# -- shape ops ------------------------------------------------------------------------------------

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
                           match=rf"GatherV2 op \"picked\".*test_math_ops.py.*indices\[1\] = {bad} "
                                 r"is not in \[0, 3\)"):
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


# -- creation ops and shape queries ---------------------------------------------------------------

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


# -- __getitem__ ----------------------------------------------------------------------------------

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


# -- nn -------------------------------------------------------------------------------------------

def _np_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True, initial=-np.inf)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def _np_log_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore"):  # log(0) only along an empty axis
        return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


SOFTMAX = [((5,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((0, 3), None),
           ((1, 1), None), ((3, 0), None), ((0,), None)]


@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, axis", SOFTMAX,
                         ids=[f"{_shape_name(s)}-axis{a}" for s, a in SOFTMAX])
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_softmax(which, shape, axis, dtype, mode):
    x = data(shape, dtype, -5, 5)
    fn = getattr(sg.nn, which)
    t, res = run_graph(lambda p: fn(p) if axis is None else fn(p, axis=axis), [x], mode)
    ref = _np_softmax if which == "softmax" else _np_log_softmax
    check_result(t, res, ref(x, -1 if axis is None else axis).astype(dtype), out_dtype=dtype,
                 mode=mode)


@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_softmax_is_stable_for_huge_logits(which):
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -1000.0]], F32)
    t, res = run_graph(getattr(sg.nn, which), [x])
    assert np.all(np.isfinite(res))
    ref = _np_softmax if which == "softmax" else _np_log_softmax
    check_result(t, res, ref(x, -1).astype(F32), out_dtype=F32)


@pytest.mark.parametrize("vshape", [(3,), (2, 3), (2, 4, 3), (0, 3)], ids=_shape_name)
@pytest.mark.parametrize("dtype", NUMERIC, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_bias_add(vshape, dtype, mode):
    v, b = data(vshape, dtype), data((3,), dtype)
    t, res = run_graph(sg.nn.bias_add, [v, b], mode)
    check_result(t, res, (v + b).astype(dtype), out_dtype=dtype, mode=mode)


def test_bias_add_mismatch():
    g = sg.Graph()
    with g.as_default():
        with pytest.raises(ValueError):
            sg.nn.bias_add(sg.placeholder(sg.float32, [2, 3]), sg.placeholder(sg.float32, [4]))


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (0, 2)], ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_l2_loss(shape, dtype, mode):
    x = data(shape, dtype)
    t, res = run_graph(sg.nn.l2_loss, [x], mode)
    expected = (x.astype(np.float64) ** 2).sum() / 2
    check_result(t, res, np.asarray(expected, dtype), out_dtype=dtype, mode=mode)


def _np_xent(labels, logits, axis=-1):
    return -(labels.astype(np.float64) * _np_log_softmax(logits, axis)).sum(axis=axis)


XENT_SHAPES = [(4, 3), (5,), (2, 3, 4), (0, 3), (1, 1), (3, 0)]


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("shape", XENT_SHAPES, ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_softmax_cross_entropy(version, shape, dtype, mode):
    logits = data(shape, dtype, -4, 4)
    labels = _np_softmax(data(shape, dtype, -2, 2), -1).astype(dtype)
    fn = sg.nn.softmax_cross_entropy_with_logits if version == "v1" else \
        sg.nn.softmax_cross_entropy_with_logits_v2
    t, res = run_graph(lambda la, lo: fn(labels=la, logits=lo), [labels, logits], mode)
    check_result(t, res, _np_xent(labels, logits).astype(dtype), out_dtype=dtype, mode=mode)


def test_softmax_cross_entropy_axis():
    logits = data((3, 4), F64)
    labels = _np_softmax(data((3, 4), F64), 0)
    t, res = run_graph(
        lambda la, lo: sg.nn.softmax_cross_entropy_with_logits_v2(labels=la, logits=lo, axis=0),
        [labels, logits])
    check_result(t, res, _np_xent(labels, logits, axis=0), out_dtype=F64)


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
def test_softmax_cross_entropy_stable_for_huge_logits(version, dtype):
    logits = np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 1000.0],
                       [-1000.0, -1000.0, -1000.0]], dtype)
    labels = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.0, 1.0, 0.0]], dtype)
    fn = sg.nn.softmax_cross_entropy_with_logits if version == "v1" else \
        sg.nn.softmax_cross_entropy_with_logits_v2
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        t, res = run_graph(lambda la, lo: fn(labels=la, logits=lo), [labels, logits])
    assert np.all(np.isfinite(res))
    check_result(t, res, np.array([0.0, np.log(2.0), np.log(3.0)], dtype), out_dtype=dtype,
                 atol=1e-5)


@pytest.mark.parametrize("lshape", [(4,), (2, 3), (), (0,)], ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("itype", [I32, I64], ids=_dt_name)
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_sparse_softmax_cross_entropy(lshape, dtype, itype, mode):
    classes = 5
    logits = data(lshape + (classes,), dtype, -4, 4)
    labels = RNG.integers(0, classes, size=lshape).astype(itype)
    g = sg.Graph()
    with g.as_default():
        pl = sg.placeholder(sg.as_dtype(itype),
                            lshape if mode == "static" else [None] * len(lshape))
        po = sg.placeholder(sg.as_dtype(dtype), lshape + (classes,) if mode == "static"
                            else [None] * len(lshape) + [classes])
        t = sg.nn.sparse_softmax_cross_entropy_with_logits(labels=pl, logits=po)
    res = sg.Session(graph=g).run(t, {pl: labels, po: logits})
    lsm = _np_log_softmax(logits, -1)
    expected = np.empty(lshape, np.float64)
    for pos in np.ndindex(*lshape):
        expected[pos] = -lsm[pos + (int(labels[pos]),)]
    check_result(t, res, expected.astype(dtype), out_dtype=dtype, mode=mode)


def test_sparse_softmax_cross_entropy_stable_for_huge_logits():
    logits = np.array([[1000.0, -1000.0], [-1000.0, 1000.0], [1000.0, 1000.0]], F32)
    labels = np.array([0, 0, 1], I32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        t, res = run_graph(
            lambda la, lo: sg.nn.sparse_softmax_cross_entropy_with_logits(labels=la, logits=lo),
            [labels, logits])
    assert np.all(np.isfinite(res))
    check_result(t, res, np.array([0.0, 2000.0, np.log(2.0)], F32), out_dtype=F32)


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (0, 2)], ids=_shape_name)
@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
@pytest.mark.parametrize("mode", MODES)
def test_sigmoid_cross_entropy(shape, dtype, mode):
    logits = data(shape, dtype, -6, 6)
    labels = data(shape, dtype, 0, 1)
    t, res = run_graph(
        lambda la, lo: sg.nn.sigmoid_cross_entropy_with_logits(labels=la, logits=lo),
        [labels, logits], mode)
    x, z = logits.astype(np.float64), labels.astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    expected = -(z * np.log(p) + (1 - z) * np.log(1 - p))
    check_result(t, res, expected.astype(dtype), out_dtype=dtype, mode=mode, rtol=1e-4,
                 atol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS, ids=_dt_name)
def test_sigmoid_cross_entropy_stable_for_huge_logits(dtype):
    logits = np.array([1000.0, -1000.0, 1000.0, -1000.0], dtype)
    labels = np.array([1.0, 0.0, 0.0, 1.0], dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        t, res = run_graph(
            lambda la, lo: sg.nn.sigmoid_cross_entropy_with_logits(labels=la, logits=lo),
            [labels, logits])
    assert np.all(np.isfinite(res))
    check_result(t, res, np.array([0.0, 0.0, 1000.0, 1000.0], dtype), out_dtype=dtype)


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


# -- random ops -----------------------------------------------------------------------------------

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


# -- the rest: reflected operators, where(cond), placeholder_with_default, tuple, range of tensors

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


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 2, 2), (0, 3), ()], ids=_shape_name)
def test_where_coordinates(shape):
    c = data(shape, BOOL)
    t, res = run_graph(lambda p: sg.where(p), [c])
    assert t.shape.as_list() == [None, len(shape)]
    coords = [pos for pos in np.ndindex(*shape) if c[pos]]
    expected = np.array(coords, dtype=I64).reshape(len(coords), len(shape))
    check_result(t, res, expected, out_dtype=I64, mode="dynamic")


def test_placeholder_with_default():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder_with_default(sg.constant([1.0, 2.0]), [None])
        y = p * 2.0
    sess = sg.Session(graph=g)
    np.testing.assert_array_equal(sess.run(y), [2.0, 4.0])
    np.testing.assert_array_equal(sess.run(y, {p: [5.0, 6.0, 7.0]}), [10.0, 12.0, 14.0])
    assert p.shape.as_list() == [None]


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


def test_range_of_tensors():
    n = np.int32(4)
    t, res = run_graph(lambda p: sg.range(p), [n], "static")
    check_result(t, res, np.arange(4, dtype=I32), out_dtype=I32, mode="dynamic")
    t, res = run_graph(lambda a, b: sg.range(a, b, 0.5), [np.float32(1), np.float32(3)])
    check_result(t, res, np.array([1, 1.5, 2, 2.5], F32), out_dtype=F32, mode="dynamic")


def test_unstack_and_split_with_unknown_dims():
    x = data((3, 4), F32)
    ts, res = run_graph(lambda p: sg.unstack(p, num=3), [x], "dynamic")
    for i, (t, r) in enumerate(zip(ts, res)):
        check_result(t, r, x[i], out_dtype=F32, mode="dynamic")
    ts, res = run_graph(lambda p: sg.unstack(p, num=4, axis=1), [x], "dynamic")
    for i, (t, r) in enumerate(zip(ts, res)):
        check_result(t, r, x[:, i], out_dtype=F32, mode="dynamic")


def test_reduce_with_axis_tensor():
    x = data((2, 3), F32)
    t, res = run_graph(lambda p: sg.reduce_sum(p, axis=sg.constant([1])), [x])
    check_result(t, res, x.astype(np.float64).sum(axis=1).astype(F32), out_dtype=F32)


def test_large_constants_and_folded_values():
    big = data((40, 40), F64)  # larger than the build-time fold limit
    g = sg.Graph()
    with g.as_default():
        c = sg.constant(big)
        folded = sg.constant([1.0, 2.0]) * 3.0 + 1.0
        y = sg.reduce_sum(c * 2.0, axis=0)
    sess = sg.Session(graph=g)
    r_c, r_f, r_y = sess.run([c, folded, y])
    np.testing.assert_array_equal(r_c, big)
    np.testing.assert_array_equal(r_f, np.array([4.0, 7.0], F32))
    np.testing.assert_allclose(r_y, (big * 2).sum(axis=0), rtol=1e-12)
    r_c[:] = 0  # a fetched constant is a copy
    np.testing.assert_array_equal(sess.run(c), big)


SHAPE_LISTS = [
    ("reshape", lambda p: sg.reshape(p, [sg.shape(p)[0], -1]), lambda x: x.reshape(x.shape[0], -1)),
    ("fill", lambda p: sg.fill([sg.shape(p)[0], 2], 1.5), lambda x: np.full((x.shape[0], 2), 1.5)),
    ("zeros", lambda p: sg.zeros([sg.shape(p)[0], 3]), lambda x: np.zeros((x.shape[0], 3))),
    ("ones", lambda p: sg.ones((2, sg.shape(p)[1])), lambda x: np.ones((2, x.shape[1]))),
    ("broadcast_to", lambda p: sg.broadcast_to(p[:, :1, :], [sg.shape(p)[0], 2, 3]),
     lambda x: np.broadcast_to(x[:, :1, :], x.shape)),
    ("slice", lambda p: sg.slice(p, [0, 0, 1], [sg.shape(p)[0], -1, 2]), lambda x: x[:, :, 1:3]),
    ("convert_to_tensor", lambda p: sg.convert_to_tensor([sg.reduce_sum(p), 1.0]),
     lambda x: np.array([x.astype(np.float64).sum(), 1.0])),
]


@pytest.mark.parametrize("build, ref", [r[1:] for r in SHAPE_LISTS],
                         ids=[f"list_with_tensors-{r[0]}" for r in SHAPE_LISTS])
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_shape_lists_mixing_ints_and_tensors(build, ref, mode):
    x = data((4, 2, 3), F32)
    t, res = run_graph(build, [x], mode)
    check_result(t, res, np.asarray(ref(x)).astype(F32), out_dtype=F32, mode="dynamic")
    assert t.shape.ndims == res.ndim  # the rank is known statically


def test_random_with_shape_list_of_tensors():
    g = sg.Graph()
    with g.as_default():
        p = sg.placeholder(sg.float32, [None, 3])
        r = sg.random_uniform([sg.shape(p)[0], 5])
    assert r.shape.ndims == 2
    assert sg.Session(graph=g).run(r, {p: np.zeros((4, 3))}).shape == (4, 5)
