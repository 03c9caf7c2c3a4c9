"""Convolution and pooling against deliberately naive references: Python loops over every output
position and kernel offset, with TF's padding rule restated here (not the im2col kernels).

Gradient correctness against finite differences is in test_gradients.py; here the backprop ops
and pool gradients are checked against loop references in float32 and float64, with the shapes
and dtypes that the graph promises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.ops import conv_ops
from tests.conftest import numeric_grad

RNG = np.random.default_rng(7)
FLOATS = (np.float32, np.float64)


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


# -- naive references ----------------------------------------------------------------------------

def ref_axis(size, k, stride, dilation, padding):
    """(padding before, output size) along one axis, as TF documents them."""
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return 0, (size - span) // stride + 1
    if padding == "SAME":
        out = math.ceil(size / stride)
        return max((out - 1) * stride + span - size, 0) // 2, out
    before, after = padding
    return before, (size + before + after - span) // stride + 1


def ref_taps(x_shape, k_hw, strides, padding, dilations=(1, 1)):
    """Every (batch, output row, output col, kernel row, kernel col, input row, input col) whose
    input position lies inside the (unpadded) input, and the output height and width."""
    n, h, w, _ = x_shape
    per_axis = (padding, padding) if isinstance(padding, str) else padding
    top, oh = ref_axis(h, k_hw[0], strides[0], dilations[0], per_axis[0])
    left, ow = ref_axis(w, k_hw[1], strides[1], dilations[1], per_axis[1])
    taps = []
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for di in range(k_hw[0]):
                    for dj in range(k_hw[1]):
                        r = i * strides[0] - top + di * dilations[0]
                        c = j * strides[1] - left + dj * dilations[1]
                        if 0 <= r < h and 0 <= c < w:
                            taps.append((b, i, j, di, dj, r, c))
    return taps, oh, ow


def ref_conv2d(x, w, strides, padding, dilations):
    taps, oh, ow = ref_taps(x.shape, w.shape[:2], strides, padding, dilations)
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for b, i, j, di, dj, r, c in taps:
        out[b, i, j] += x[b, r, c].astype(np.float64) @ w[di, dj]
    return out


def ref_conv2d_backprop_input(x_shape, w, dy, strides, padding, dilations):
    taps, _, _ = ref_taps(x_shape, w.shape[:2], strides, padding, dilations)
    dx = np.zeros(x_shape)
    for b, i, j, di, dj, r, c in taps:
        dx[b, r, c] += w[di, dj].astype(np.float64) @ dy[b, i, j]
    return dx


def ref_conv2d_backprop_filter(x, w_shape, dy, strides, padding, dilations):
    taps, _, _ = ref_taps(x.shape, w_shape[:2], strides, padding, dilations)
    dw = np.zeros(w_shape)
    for b, i, j, di, dj, r, c in taps:
        dw[di, dj] += np.outer(x[b, r, c], dy[b, i, j])
    return dw


def ref_windows(x_shape, ksize, strides, padding):
    """{(batch, out row, out col): [(input row, input col), ...] in row-major window order}."""
    taps, oh, ow = ref_taps(x_shape, ksize, strides, padding)
    windows = {}
    for b, i, j, _, _, r, c in taps:
        windows.setdefault((b, i, j), []).append((r, c))
    return windows, oh, ow


def ref_pool(x, ksize, strides, padding, reduce):
    windows, oh, ow = ref_windows(x.shape, ksize, strides, padding)
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for (b, i, j), cells in windows.items():
        out[b, i, j] = reduce(np.array([x[b, r, c] for r, c in cells]), axis=0)
    return out


def ref_argmax_cells(x, ksize, strides, padding):
    """{(b, i, j, channel): (r, c) of the window's first maximum}."""
    windows, _, _ = ref_windows(x.shape, ksize, strides, padding)
    first = {}
    for (b, i, j), cells in windows.items():
        for ch in range(x.shape[3]):
            best = None
            for r, c in cells:
                if best is None or x[b, r, c, ch] > x[b, best[0], best[1], ch]:
                    best = (r, c)
            first[b, i, j, ch] = best
    return first


def ref_max_pool_grad(x, dy, ksize, strides, padding):
    dx = np.zeros(x.shape)
    for (b, i, j, ch), (r, c) in ref_argmax_cells(x, ksize, strides, padding).items():
        dx[b, r, c, ch] += dy[b, i, j, ch]
    return dx


def ref_max_pool_grad_grad(x, g, ksize, strides, padding):
    windows, oh, ow = ref_windows(x.shape, ksize, strides, padding)
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for (b, i, j, ch), (r, c) in ref_argmax_cells(x, ksize, strides, padding).items():
        out[b, i, j, ch] = g[b, r, c, ch]
    return out


def ref_avg_pool_grad(x_shape, dy, ksize, strides, padding):
    windows, _, _ = ref_windows(x_shape, ksize, strides, padding)
    dx = np.zeros(x_shape)
    for (b, i, j), cells in windows.items():
        for r, c in cells:
            dx[b, r, c] += dy[b, i, j] / len(cells)
    return dx


# -- running graphs ------------------------------------------------------------------------------

def run(build, arrays, shapes=None):
    """Build `build(*placeholders)` in a fresh graph and run it on `arrays`: (outputs, values)."""
    g = sg.Graph()
    with g.as_default():
        phs = [sg.placeholder(sg.as_dtype(a.dtype), a.shape if shapes is None else s)
               for a, s in zip(arrays, shapes or arrays)]
        out = build(*phs)
        return out, sg.Session(graph=g).run(out, dict(zip(phs, arrays)))


def check(t, got, want, dtype):
    assert got.dtype == dtype, f"result dtype {got.dtype}, wanted {np.dtype(dtype)}"
    assert t.dtype.np == dtype
    assert got.shape == want.shape, f"result shape {got.shape}, wanted {want.shape}"
    assert t.shape.is_compatible_with(got.shape), f"static {t.shape} vs result {got.shape}"
    np.testing.assert_allclose(got, want, **tol(dtype))


def nhwc(pair):
    return [1, *pair, 1]


def tf_padding(padding):
    return padding if isinstance(padding, str) else [[0, 0], *map(list, padding), [0, 0]]


# -- convolution ---------------------------------------------------------------------------------

# (input shape, filter shape, strides, padding, dilations)
CONV_CASES = [
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 6, 7, 2), (3, 3, 2, 3), (2, 2), "SAME", (1, 1)),
    ((1, 7, 6, 2), (2, 2, 2, 3), (2, 2), "SAME", (1, 1)),  # even kernel: extra pad after
    ((3, 5, 6, 1), (3, 2, 1, 2), (1, 1), "VALID", (1, 1)),
    ((2, 7, 8, 2), (3, 3, 2, 2), (2, 2), "VALID", (1, 1)),  # last input row never read
    ((2, 8, 7, 2), (3, 3, 2, 3), (1, 1), "SAME", (2, 2)),
    ((1, 9, 8, 2), (2, 3, 2, 2), (1, 1), "VALID", (2, 2)),
    ((2, 9, 7, 3), (3, 3, 3, 2), (2, 1), "SAME", (2, 1)),  # stride and dilation per axis
    ((2, 5, 6, 2), (3, 3, 2, 2), (1, 2), ((1, 0), (2, 1)), (1, 1)),  # explicit padding
    ((2, 4, 4, 3), (1, 1, 3, 5), (1, 1), "VALID", (1, 1)),  # 1x1: a matmul over channels
    # stride 1, a pad wider than the window's reach: the input gradient cannot be a
    # convolution of dy with the turned filter (negative padding), so col2im's slice-adds
    ((2, 4, 5, 2), (3, 3, 2, 3), (1, 1), ((3, 0), (1, 2)), (1, 1)),
]


def _conv_id(case):
    x, w, s, p, d = case
    pad = p if isinstance(p, str) else "explicit"
    return f"x{'x'.join(map(str, x))}-w{'x'.join(map(str, w))}-s{s[0]}{s[1]}-{pad}-d{d[0]}{d[1]}"


def _conv_data(case, dtype):
    x_shape, w_shape, strides, padding, dilations = case
    x = RNG.uniform(-2, 2, x_shape).astype(dtype)
    w = RNG.uniform(-1, 1, w_shape).astype(dtype)
    kw = dict(strides=nhwc(strides), padding=tf_padding(padding), dilations=nhwc(dilations))
    return x, w, kw


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CONV_CASES, ids=_conv_id)
def test_conv2d(case, dtype):
    x, w, kw = _conv_data(case, dtype)
    t, got = run(lambda a, b: sg.nn.conv2d(a, b, **kw), [x, w])
    check(t, got, ref_conv2d(x, w, *case[2:]), dtype)
    assert t.shape.is_fully_defined()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CONV_CASES, ids=_conv_id)
def test_conv2d_backprops_and_gradients(case, dtype):
    x, w, kw = _conv_data(case, dtype)
    y_shape = ref_conv2d(x, w, *case[2:]).shape
    dy = RNG.uniform(-1, 1, y_shape).astype(dtype)
    want_dx = ref_conv2d_backprop_input(x.shape, w, dy, *case[2:])
    want_dw = ref_conv2d_backprop_filter(x, w.shape, dy, *case[2:])

    def build(a, b, g):
        dx = sg.nn.conv2d_backprop_input(list(x.shape), b, g, **kw)
        dw = sg.nn.conv2d_backprop_filter(a, list(w.shape), g, **kw)
        return [dx, dw, *sg.gradients(sg.nn.conv2d(a, b, **kw), [a, b], grad_ys=g)]

    ts, got = run(build, [x, w, dy])
    for t, v, want in zip(ts, got, [want_dx, want_dw, want_dx, want_dw]):
        check(t, v, want, dtype)


def test_conv2d_transpose_is_backprop_input():
    w = RNG.uniform(-1, 1, (3, 3, 2, 4))
    v = RNG.uniform(-1, 1, (2, 3, 3, 4))
    t, got = run(lambda b, a: sg.nn.conv2d_transpose(a, b, [2, 6, 5, 2], [1, 2, 2, 1]), [w, v])
    check(t, got, ref_conv2d_backprop_input((2, 6, 5, 2), w, v, (2, 2), "SAME", (1, 1)),
          np.float64)


def test_conv2d_argument_forms():
    """strides and dilations as an int or a pair (tf.nn.conv2d v2); filters=; lower-case padding."""
    x = RNG.uniform(-1, 1, (1, 6, 6, 2)).astype(np.float32)
    w = RNG.uniform(-1, 1, (3, 3, 2, 2)).astype(np.float32)
    want = ref_conv2d(x, w, (2, 2), "SAME", (1, 1))
    for build in (lambda a, b: sg.nn.conv2d(a, filters=b, strides=2, padding="SAME"),
                  lambda a, b: sg.nn.conv2d(a, b, [2, 2], "same", dilations=1),
                  lambda a, b: sg.nn.conv2d(a, b, (1, 2, 2, 1), "SAME", data_format="NHWC")):
        t, got = run(build, [x, w])
        check(t, got, want, np.float32)


def test_conv2d_with_constant_inputs_folds_to_the_same_values():
    x = RNG.uniform(-1, 1, (1, 4, 4, 2))
    w = RNG.uniform(-1, 1, (2, 2, 2, 3))
    with sg.Graph().as_default():
        y = sg.nn.conv2d(sg.constant(x), sg.constant(w), [1, 1, 1, 1], "SAME")
        got = sg.Session().run(y)
    check(y, got, ref_conv2d(x, w, (1, 1), "SAME", (1, 1)), np.float64)


@pytest.mark.parametrize("shape", [[None, 6, 5, 2], [None, None, None, None]],
                         ids=["unknown-batch", "unknown-dims"])
def test_conv2d_with_dims_known_only_at_run_time(shape):
    w = RNG.uniform(-1, 1, (3, 3, 2, 4)).astype(np.float32)
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, shape)
        y = sg.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
        dx = sg.gradients(sg.reduce_sum(y * y), x)[0]
        if shape[1] is not None:
            assert y.shape.as_list() == [None, 3, 3, 4]
            assert dx.shape.as_list() == [None, 6, 5, 2]
        sess = sg.Session()
        for batch in (3, 1):
            xv = RNG.uniform(-1, 1, (batch, 6, 5, 2)).astype(np.float32)
            got_y, got_dx = sess.run([y, dx], {x: xv})
            want_y = ref_conv2d(xv, w, (2, 2), "SAME", (1, 1))
            check(y, got_y, want_y, np.float32)
            want_dx = ref_conv2d_backprop_input(xv.shape, w, 2 * want_y, (2, 2), "SAME", (1, 1))
            check(dx, got_dx, want_dx, np.float32)


def test_generated_code_has_one_readable_line_with_resolved_padding():
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, 28, 28, 1], name="x")
        w = sg.placeholder(sg.float32, [5, 5, 1, 32], name="w")
        y = sg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv1")
        source = sg.Session().source(y, {x: np.zeros((4, 28, 28, 1), np.float32),
                                         w: np.zeros((5, 5, 1, 32), np.float32)})
    assert "conv1 = rt.conv2d(x, w, (1, 1), ((2, 2), (2, 2)), (1, 1))" in source


# -- pooling -------------------------------------------------------------------------------------

# (input shape, ksize, strides, padding)
POOL_CASES = [
    ((2, 4, 4, 3), (2, 2), (2, 2), "VALID"),
    ((2, 5, 5, 2), (2, 2), (2, 2), "SAME"),  # odd size: a padded last row and column
    ((1, 6, 7, 2), (3, 3), (2, 2), "SAME"),  # overlapping windows, padding on both sides
    ((2, 5, 6, 1), (3, 2), (1, 1), "SAME"),
    ((1, 7, 7, 2), (3, 3), (2, 2), "VALID"),
    ((2, 4, 5, 2), (1, 1), (2, 2), "SAME"),
]


def _pool_id(case):
    x, k, s, p = case
    return f"x{'x'.join(map(str, x))}-k{k[0]}{k[1]}-s{s[0]}{s[1]}-{p}"


def _pool_kw(case):
    return dict(ksize=nhwc(case[1]), strides=nhwc(case[2]), padding=case[3])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", POOL_CASES, ids=_pool_id)
def test_max_pool(case, dtype):
    x = RNG.uniform(-3, -0.5, case[0]).astype(dtype)  # all negative: padding must not win
    t, got = run(lambda a: sg.nn.max_pool(a, **_pool_kw(case)), [x])
    check(t, got, ref_pool(x, *case[1:], np.max), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", POOL_CASES, ids=_pool_id)
def test_avg_pool_divides_by_the_valid_elements(case, dtype):
    x = RNG.uniform(1, 3, case[0]).astype(dtype)
    t, got = run(lambda a: sg.nn.avg_pool(a, **_pool_kw(case)), [x])
    check(t, got, ref_pool(x, *case[1:], np.mean), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", POOL_CASES, ids=_pool_id)
def test_pool_gradients(case, dtype):
    x = RNG.integers(-3, 3, case[0]).astype(dtype)  # many ties: the first maximum wins
    kw = _pool_kw(case)
    y_shape = ref_pool(x, *case[1:], np.max).shape
    dy = RNG.uniform(-1, 1, y_shape).astype(dtype)
    g = RNG.uniform(-1, 1, x.shape).astype(dtype)

    def build(a, b, c):
        y = sg.nn.max_pool(a, **kw)
        return [*sg.gradients(y, a, grad_ys=b),
                *sg.gradients(sg.nn.avg_pool(a, **kw), a, grad_ys=b),
                conv_ops.max_pool_grad_grad(a, y, c, **kw)]

    ts, got = run(build, [x, dy, g])
    wants = [ref_max_pool_grad(x, dy, *case[1:]), ref_avg_pool_grad(x.shape, dy, *case[1:]),
             ref_max_pool_grad_grad(x, g, *case[1:])]
    for t, v, want in zip(ts, got, wants):
        check(t, v, want, dtype)


def test_max_pool_gradient_of_infinities_nans_and_signed_zeros():
    """Where the windows tile the input, runtime_conv multiplies dy by each offset's mask of
    first maxima, and inf * 0 is NaN: a dy holding inf, NaN or -0 must still go to its
    window's first maximum alone, with every other element +0."""
    x = RNG.integers(-2, 2, (2, 4, 4, 3)).astype(np.float32)  # ties: the first maximum wins
    kw = _pool_kw(((2, 4, 4, 3), (2, 2), (2, 2), "VALID"))
    for special in (np.inf, -np.inf, np.nan, -0.0):
        dy = RNG.uniform(-1, 1, (2, 2, 2, 3)).astype(np.float32)
        dy[0, 1, 0, 2] = dy[1, 0, 1, 0] = special
        _, (got,) = run(lambda a, b: sg.gradients(sg.nn.max_pool(a, **kw), a, grad_ys=b),
                        [x, dy])
        np.testing.assert_array_equal(got, ref_max_pool_grad(x, dy, (2, 2), (2, 2), "VALID"))
        assert not np.signbit(got[got == 0]).any(), f"a -0 in the gradient (dy with {special})"


def test_pool_aliases_and_unknown_batch():
    x = RNG.uniform(-1, 1, (3, 5, 5, 2)).astype(np.float32)
    t, got = run(lambda a: [sg.nn.max_pool2d(a, 2, 2, "SAME"), sg.nn.avg_pool2d(a, 3, 1, "VALID"),
                            sg.nn.max_pool(input=a, ksize=2, strides=2, padding="SAME")],
                 [x], shapes=[[None, 5, 5, 2]])
    assert [s.shape.as_list() for s in t] == [[None, 3, 3, 2], [None, 3, 3, 2], [None, 3, 3, 2]]
    check(t[0], got[0], ref_pool(x, (2, 2), (2, 2), "SAME", np.max), np.float32)
    check(t[1], got[1], ref_pool(x, (3, 3), (1, 1), "VALID", np.mean), np.float32)
    check(t[2], got[2], ref_pool(x, (2, 2), (2, 2), "SAME", np.max), np.float32)


# -- errors --------------------------------------------------------------------------------------

def _ph(shape, dtype=sg.float32):
    return sg.placeholder(dtype, shape)


@pytest.mark.parametrize("build, error, match", [
    (lambda: sg.nn.conv2d(_ph([2, 5, 5, 3]), _ph([3, 3, 2, 4]), [1, 1, 1, 1], "SAME"),
     ValueError, r"Conv2D.*\(2, 5, 5, 3\) has 3 channels but filter of shape \(3, 3, 2, 4\)"),
    (lambda: sg.nn.conv2d(_ph([1, 2, 2, 1]), _ph([3, 3, 1, 1]), [1, 1, 1, 1], "VALID"),
     ValueError, r"Conv2D.*window of 3 does not fit.*\(1, 2, 2, 1\)"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 1]), _ph([2, 2, 1, 1]), 1, "VALID", dilations=5),
     ValueError, r"Conv2D.*window of 6 does not fit"),
    (lambda: sg.nn.conv2d(_ph([5, 5, 3]), _ph([3, 3, 3, 4]), 1, "SAME"),
     ValueError, r"Conv2D: input must be 4-D, got shape \(5, 5, 3\)"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 3]), _ph([3, 3, 3, 4], sg.float64), 1, "SAME"),
     TypeError, r"Conv2D.*float32, float64"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 3]), _ph([3, 3, 3, 4]), 1, "SAME", data_format="NCHW"),
     ValueError, r"conv2d: only data_format 'NHWC'"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 3]), _ph([3, 3, 3, 4]), [2, 1, 1, 1], "SAME"),
     ValueError, r"conv2d: strides \[2, 1, 1, 1\] must be 1 in the batch and channel"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 3]), _ph([3, 3, 3, 4]), [1, 2, 2], "SAME"),
     ValueError, r"conv2d: strides must be an int or a list of 1, 2 or 4 ints"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 3]), _ph([3, 3, 3, 4]), 1, "FULL"),
     ValueError, r"conv2d: padding must be 'SAME' or 'VALID'"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 3]), _ph([3, 3, 3, 4]), 1, None),
     ValueError, r"conv2d: padding must be"),
    (lambda: sg.nn.conv2d(_ph([1, 5, 5, 3]), _ph([3, 3, 3, 4]), 1, "SAME",
                          filters=_ph([3, 3, 3, 4])),
     ValueError, r"conv2d: pass filter or filters, not both"),
    (lambda: sg.nn.conv2d_backprop_input([1, 6, 6, 3], _ph([3, 3, 3, 4]), _ph([1, 5, 5, 4]),
                                         [1, 1, 1, 1], "SAME"),
     ValueError, r"Conv2DBackpropInput: out_backprop has shape \(1, 5, 5, 4\), but the "
                 r"forward op gives shape \(1, 6, 6, 4\)"),
    (lambda: sg.nn.max_pool(_ph([1, 2, 2, 1]), [1, 3, 3, 1], [1, 1, 1, 1], "VALID"),
     ValueError, r"MaxPool.*window of 3 does not fit.*\(1, 2, 2, 1\)"),
    (lambda: sg.nn.avg_pool(_ph([1, 4, 4, 1], sg.int32), 2, 2, "VALID"),
     TypeError, r"AvgPool"),
    (lambda: sg.nn.max_pool(_ph([1, 4, 4, 1]), [1, 2, 2, 2], 2, "VALID"),
     ValueError, r"max_pool: ksize \[1, 2, 2, 2\] must be 1 in the batch and channel"),
])
def test_errors_at_graph_construction(build, error, match):
    with sg.Graph().as_default(), pytest.raises(error, match=match):
        build()


def test_shape_error_with_fed_shapes_is_raised_at_run_time():
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [None, None, None, 3])
        y = sg.nn.conv2d(x, np.ones((3, 3, 3, 4), np.float32), 1, "VALID")
        with pytest.raises(sg.errors.InvalidArgumentError, match=r"Conv2D.*window of 3"):
            sg.Session().run(y, {x: np.ones((1, 2, 2, 3), np.float32)})


# -- conv1d: a conv2d of height one ---------------------------------------------------------
def _conv1d(x, w, stride, padding):
    width, k = x.shape[1], w.shape[0]
    if padding == "SAME":
        out_w = -(-width // stride)
        pad = max((out_w - 1) * stride + k - width, 0)
        x = np.pad(x, ((0, 0), (pad // 2, pad - pad // 2), (0, 0)))
    out_w = (x.shape[1] - k) // stride + 1
    return np.stack([np.einsum("bki,kio->bo", x[:, j * stride:j * stride + k], w)
                     for j in range(out_w)], axis=1)


@pytest.mark.parametrize("stride, padding", [(1, "VALID"), (2, "SAME"), (2, "VALID")])
def test_conv1d_is_a_conv2d_of_height_one(g, stride, padding):
    xv, wv = RNG.normal(size=(2, 7, 3)), RNG.normal(size=(3, 3, 4))
    x = sg.placeholder(sg.float64, xv.shape, name="x")
    w = sg.placeholder(sg.float64, wv.shape, name="w")
    y = sg.nn.conv1d(x, w, stride, padding)
    out_w = y.shape.as_list()[1]
    seed = RNG.normal(size=(2, out_w, 4))
    (dx,) = sg.gradients(sg.reduce_sum(y * seed), [x])
    got, grad = sg.Session().run([y, dx], {x: xv, w: wv})
    np.testing.assert_allclose(got, _conv1d(xv, wv, stride, padding), rtol=1e-10)
    want = numeric_grad(lambda v: (_conv1d(v, wv, stride, padding) * seed).sum(), xv)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-9)
