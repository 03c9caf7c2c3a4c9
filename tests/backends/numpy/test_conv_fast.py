"""conv_fast: runtime_conv's convolution and pooling kernels with numba's loops.

Each kernel is checked against runtime_conv's NumPy kernel (the same results: equal where
the terms are summed in the same order, to float rounding where overlapping windows add them
in another or the filter gradient sums the batch in blocks), against loops written out here
by hand, with the batch split between threads, on NaN and -inf, and through a session and an
export. Without numba the tests that need the loops skip; the fallback to runtime_conv is
checked either way.
"""

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import staticgrad as sg
from staticgrad import runtime_conv as ref
from staticgrad.backends.numpy import conv_blocked, conv_fast

needs_loops = pytest.mark.skipif(not conv_fast.available(),
                                 reason=f"conv_fast's loops unavailable: {conv_fast.why_not()}")
ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.usefixtures("loops_at_every_size")  # (conftest.py)

CONV_CASES = [  # (input shape, kernel, out channels, strides, padding, dilations)
    (shape, k, o, s, pad, d)
    for shape, k, o, s, pad, d in itertools.product(
        [(2, 7, 8, 1), (3, 6, 5, 4)], [1, 3, 5], [1, 6], [(1, 1), (2, 2), (1, 2)],
        ["SAME", "VALID", ((1, 2), (0, 3))], [(1, 1), (2, 1)])
    if (k - 1) * d[0] + 1 <= shape[1]]
POOL_CASES = list(itertools.product([(2, 7, 8, 3), (3, 6, 6, 1)], [(2, 2), (3, 3), (3, 2)],
                                    [(1, 1), (2, 2), (3, 2)], ["SAME", "VALID"]))


def _arrays(shape, dtype, *more, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in (shape, *more)]


def _close(got, want, dtype, what):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k,o,strides,padding,dilations", CONV_CASES)
def test_conv_matches_runtime_conv(shape, k, o, strides, padding, dilations, dtype):
    x, w = _arrays(shape, dtype, (k, k, shape[3], o))
    want = ref.conv2d(x, w, strides, padding, dilations)
    what = f"conv2d x{shape} w{w.shape} strides {strides} {padding} dilations {dilations}"
    np.testing.assert_array_equal(conv_fast.conv2d(x, w, strides, padding, dilations), want,
                                  err_msg=what)  # the same matrix product
    (dy,) = _arrays(want.shape, dtype, seed=1)
    _close(conv_fast.conv2d_backprop_input(shape, w, dy, strides, padding, dilations),
           ref.conv2d_backprop_input(shape, w, dy, strides, padding, dilations), dtype,
           f"input gradient of {what}")
    _close(conv_fast.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dilations),
           ref.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dilations), dtype,
           f"filter gradient of {what}")  # conv_blocked sums over the batch in blocks


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,ksize,strides,padding", POOL_CASES)
def test_pools_match_runtime_conv(shape, ksize, strides, padding, dtype):
    (x,) = _arrays(shape, dtype)
    what = f"x{shape} ksize {ksize} strides {strides} {padding}"
    y = ref.max_pool(x, ksize, strides, padding)
    np.testing.assert_array_equal(conv_fast.max_pool(x, ksize, strides, padding), y,
                                  err_msg=f"max_pool {what}")
    (dy,) = _arrays(y.shape, dtype, seed=1)
    _close(conv_fast.max_pool_grad(x, y, dy, ksize, strides, padding),
           ref.max_pool_grad(x, y, dy, ksize, strides, padding), dtype, f"max_pool_grad {what}")
    np.testing.assert_array_equal(conv_fast.avg_pool(x, ksize, strides, padding),
                                  ref.avg_pool(x, ksize, strides, padding),
                                  err_msg=f"avg_pool {what}")
    _close(conv_fast.avg_pool_grad(x.shape, dy, ksize, strides, padding),
           ref.avg_pool_grad(x.shape, dy, ksize, strides, padding), dtype,
           f"avg_pool_grad {what}")


def _hand_conv(x, w, stride, pad):
    """conv2d written as its definition: a sum over the window for every output."""
    n, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, oh, ow, o))
    for b, p, q in itertools.product(range(n), range(oh), range(ow)):
        window = xp[b, p * stride:p * stride + kh, q * stride:q * stride + kw]
        out[b, p, q] = np.einsum("ijc,ijco->o", window, w)
    return out


@needs_loops
@pytest.mark.parametrize("stride", [1, 2])
def test_conv_and_its_gradients_against_hand_loops(stride):
    x, w = _arrays((2, 6, 7, 3), np.float64, (3, 3, 3, 4))
    pads = ((1, 1), (1, 1))
    y = conv_fast.conv2d(x, w, (stride, stride), pads, (1, 1))
    np.testing.assert_allclose(y, _hand_conv(x, w, stride, 1), rtol=1e-12)
    # both gradients of <dy, conv(x, w)>, by the chain rule done by hand: d/dx and d/dw of a
    # sum that is linear in each
    (dy,) = _arrays(y.shape, np.float64, seed=2)
    dx = conv_fast.conv2d_backprop_input(x.shape, w, dy, (stride, stride), pads, (1, 1))
    dw = conv_fast.conv2d_backprop_filter(x, w.shape, dy, (stride, stride), pads, (1, 1))
    eye_x = np.eye(x.size).reshape(x.size, *x.shape)
    want_dx = [np.sum(dy * _hand_conv(e, w, stride, 1)) for e in eye_x]
    np.testing.assert_allclose(dx.ravel(), want_dx, rtol=1e-10, atol=1e-12)
    eye_w = np.eye(w.size).reshape(w.size, *w.shape)
    want_dw = [np.sum(dy * _hand_conv(x, e, stride, 1)) for e in eye_w]
    np.testing.assert_allclose(dw.ravel(), want_dw, rtol=1e-10, atol=1e-12)


@needs_loops
def test_max_pool_gradient_goes_to_the_first_maximum():
    x = np.array([[3, 3, 1], [3, 0, 2], [5, 5, 5]], np.float32).reshape(1, 3, 3, 1)
    y = conv_fast.max_pool(x, (2, 2), (1, 1), "VALID")
    np.testing.assert_array_equal(y.ravel(), [3, 3, 5, 5])
    dx = conv_fast.max_pool_grad(x, y, np.array([1, 10, 100, 1000], np.float32)
                                 .reshape(1, 2, 2, 1), (2, 2), (1, 1), "VALID")
    # the first window's 3s tie: the first of them, row-major, takes its gradient
    np.testing.assert_array_equal(dx.reshape(3, 3), [[1, 10, 0], [0, 0, 0], [100, 1000, 0]])


@needs_loops
def test_nan_and_minus_inf_in_max_pooling():
    x = np.full((1, 3, 3, 2), -np.inf, np.float32)
    x[0, 1, 1, 0] = np.nan
    for padding in ("SAME", "VALID"):
        y = conv_fast.max_pool(x, (2, 2), (2, 2), padding)
        want = ref.max_pool(x, (2, 2), (2, 2), padding)
        np.testing.assert_array_equal(y, want)
        dy = np.ones_like(y)
        np.testing.assert_array_equal(conv_fast.max_pool_grad(x, want, dy, (2, 2), (2, 2),
                                                               padding),
                                      ref.max_pool_grad(x, want, dy, (2, 2), (2, 2), padding))


def _hand_pools(x, ksize, strides, pads):
    """max_pool, avg_pool and a matrix `share` (avg_pool's value as share @ x) written as
    their definitions over the windows' elements inside x, in float64 for the averages."""
    n, h, w, c = x.shape
    (kh, kw), (sh, sw), ((top, bottom), (left, right)) = ksize, strides, pads
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    biggest, mean = np.empty((n, oh, ow, c), x.dtype), np.empty((n, oh, ow, c))
    share = np.zeros((oh * ow, h * w))  # share[out position, in position]
    for p, q in itertools.product(range(oh), range(ow)):
        rows = range(max(p * sh - top, 0), min(p * sh - top + kh, h))
        cols = range(max(q * sw - left, 0), min(q * sw - left + kw, w))
        inside = x[:, rows.start:rows.stop, cols.start:cols.stop].reshape(n, -1, c)
        biggest[:, p, q] = inside.max(axis=1)
        mean[:, p, q] = inside.astype(np.float64).mean(axis=1)
        for r, s in itertools.product(rows, cols):
            share[p * ow + q, r * w + s] = 1 / (len(rows) * len(cols))
    return biggest, mean, share


HAND_POOL_CASES = [  # (shape, ksize, strides, padding): the 2x2 windows' own loops (wholly
    # inside, cut by SAME's padding at odd sizes, stride 1 and 2), the others', gaps
    ((2, 6, 6, 1), (2, 2), (2, 2), "SAME"), ((3, 7, 5, 128), (2, 2), (2, 2), "SAME"),
    ((2, 7, 5, 3), (2, 2), (2, 2), "VALID"), ((2, 5, 6, 2), (2, 2), (1, 1), "SAME"),
    ((1, 7, 8, 5), (2, 2), (3, 3), "SAME"), ((2, 6, 7, 1), (3, 3), (2, 2), "SAME"),
    ((1, 5, 5, 128), (3, 2), (3, 2), "VALID"), ((2, 8, 8, 4), (2, 2), (2, 2), ((1, 1), (0, 1)))]


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,ksize,strides,padding", HAND_POOL_CASES)
def test_pools_against_hand_loops(shape, ksize, strides, padding, dtype):
    """The forward passes against their definitions; average pooling's gradient against the
    derivative of <dy, avg_pool(x)> (linear in x: `share` from the definition), and exactly
    against runtime_conv's where no two windows overlap (one term per element)."""
    (x,) = _arrays(shape, dtype)
    pads = ref.resolve_pads(padding, shape[1:3], ksize, strides)
    what = f"x{shape} {dtype.__name__} ksize {ksize} strides {strides} {padding}"
    biggest, mean, share = _hand_pools(x, ksize, strides, pads)
    np.testing.assert_array_equal(conv_fast.max_pool(x, ksize, strides, padding), biggest,
                                  err_msg=f"max_pool {what}")
    got = conv_fast.avg_pool(x, ksize, strides, padding)
    assert got.dtype == x.dtype, what
    _close(got, mean.astype(dtype), dtype, f"avg_pool {what}")
    np.testing.assert_array_equal(got, ref.avg_pool(x, ksize, strides, padding),
                                  err_msg=f"avg_pool {what}")  # the same sums, same order
    (dy,) = _arrays(got.shape, dtype, seed=1)
    dx = conv_fast.avg_pool_grad(shape, dy, ksize, strides, padding)
    n, oh, ow, c = dy.shape
    want = np.einsum("ok,nol->nkl", share, dy.reshape(n, oh * ow, c)).reshape(shape)
    _close(dx, want.astype(dtype), dtype, f"avg_pool_grad {what}")
    if strides[0] >= ksize[0] and strides[1] >= ksize[1]:
        np.testing.assert_array_equal(dx, ref.avg_pool_grad(shape, dy, ksize, strides, padding),
                                      err_msg=f"avg_pool_grad {what}")


def _hand_max_pool_grad(x, y, dy, ksize, strides, pads):
    """Each dy to the first element of its window, row-major, that equals the maximum."""
    (kh, kw), (sh, sw), ((top, _), (left, _)) = ksize, strides, pads
    dx = np.zeros(x.shape, dy.dtype)
    n, oh, ow, c = y.shape
    for b, p, q, k in itertools.product(range(n), range(oh), range(ow), range(c)):
        window = [(p * sh - top + i, q * sw - left + j) for i in range(kh) for j in range(kw)]
        for r, s in window:
            if 0 <= r < x.shape[1] and 0 <= s < x.shape[2] and x[b, r, s, k] == y[b, p, q, k]:
                dx[b, r, s, k] += dy[b, p, q, k]
                break
    return dx


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,ksize,strides,padding", HAND_POOL_CASES)
def test_max_pool_gradient_against_hand_loops(shape, ksize, strides, padding, dtype):
    """With many ties (inputs rounded to whole numbers): the first maximum of each window
    takes its gradient; exactly runtime_conv's where no two windows overlap."""
    (x,) = _arrays(shape, dtype)
    x = np.round(x)
    pads = ref.resolve_pads(padding, shape[1:3], ksize, strides)
    what = f"x{shape} {dtype.__name__} ksize {ksize} strides {strides} {padding}"
    y = conv_fast.max_pool(x, ksize, strides, padding)
    (dy,) = _arrays(y.shape, dtype, seed=1)
    dx = conv_fast.max_pool_grad(x, y, dy, ksize, strides, padding)
    np.testing.assert_allclose(dx, _hand_max_pool_grad(x, y, dy, ksize, strides, pads),
                               rtol=1e-6, err_msg=f"max_pool_grad {what}")
    if strides[0] >= ksize[0] and strides[1] >= ksize[1]:
        np.testing.assert_array_equal(dx, ref.max_pool_grad(x, y, dy, ksize, strides, padding),
                                      err_msg=f"max_pool_grad {what}")


@needs_loops
@pytest.mark.parametrize("ksize,strides", [((2, 2), (2, 2)), ((3, 3), (2, 2)), ((2, 2), (3, 3))])
def test_average_pooling_gradient_by_finite_differences(ksize, strides):
    x, = _arrays((2, 7, 6, 3), np.float64)
    dy, = _arrays(ref.avg_pool(x, ksize, strides, "SAME").shape, np.float64, seed=1)
    dx = conv_fast.avg_pool_grad(x.shape, dy, ksize, strides, "SAME")
    eps, numeric = 1e-6, np.empty(x.size)
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        numeric[i] = np.sum(dy * (conv_fast.avg_pool(x + step, ksize, strides, "SAME")
                                  - conv_fast.avg_pool(x - step, ksize, strides, "SAME")))
    np.testing.assert_allclose(dx.ravel(), numeric / (2 * eps), rtol=1e-6, atol=1e-8,
                               err_msg=f"avg_pool_grad ksize {ksize} strides {strides}")


@needs_loops
def test_pooling_gradients_leave_no_stale_memory():
    """Where the windows tile the input, dx is not zeroed first: every element is written.
    Memory freed full of NaN, then the gradient allocated: no NaN may show through."""
    x = np.zeros((4, 8, 8, 16), np.float32)
    for _ in range(3):  # a few rounds, so that the allocator hands back what was just freed
        junk = np.full(x.shape, np.nan, np.float32)
        del junk
        dx = conv_fast.avg_pool_grad(x.shape, np.ones((4, 4, 4, 16), np.float32), (2, 2),
                                     (2, 2), "SAME")
        np.testing.assert_array_equal(dx, np.full(dx.shape, 0.25, np.float32))
        junk = np.full(x.shape, np.nan, np.float32)
        del junk
        dx = conv_fast.max_pool_grad(x, np.zeros((4, 4, 4, 16), np.float32),
                                     np.ones((4, 4, 4, 16), np.float32), (2, 2), (2, 2), "SAME")
        np.testing.assert_array_equal(dx[:, ::2, ::2], 1)  # all tie: the first takes it
        assert np.sum(dx) == 4 * 4 * 4 * 16


@needs_loops
def test_the_batch_split_between_threads(monkeypatch):
    monkeypatch.setattr(conv_fast, "MIN_SPLIT", 0)
    monkeypatch.setattr(conv_fast, "POOL_MIN_SPLIT", 0)
    monkeypatch.setattr(conv_fast, "MAX_POOL_GRAD_MIN_SPLIT", 0)
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)
    x, w = _arrays((5, 6, 6, 3), np.float32, (3, 3, 3, 4))
    pads = ref.resolve_pads("SAME", (6, 6), (3, 3), (1, 1))
    y = conv_fast.conv2d(x, w, (1, 1), pads, (1, 1))
    np.testing.assert_array_equal(y, ref.conv2d(x, w, (1, 1), pads, (1, 1)))
    _close(conv_fast.conv2d_backprop_input(x.shape, w, y, (1, 1), pads, (1, 1)),
           ref.conv2d_backprop_input(x.shape, w, y, (1, 1), pads, (1, 1)), np.float32,
           "input gradient")
    p = conv_fast.max_pool(x, (2, 2), (2, 2), "SAME")
    np.testing.assert_array_equal(p, ref.max_pool(x, (2, 2), (2, 2), "SAME"))
    _close(conv_fast.max_pool_grad(x, p, p, (2, 2), (2, 2), "SAME"),
           ref.max_pool_grad(x, p, p, (2, 2), (2, 2), "SAME"), np.float32, "max_pool_grad")
    for ksize, strides in (((2, 2), (2, 2)), ((3, 3), (1, 1))):  # avg: tiled and overlapping
        a = conv_fast.avg_pool(x, ksize, strides, "SAME")
        np.testing.assert_array_equal(a, ref.avg_pool(x, ksize, strides, "SAME"))
        _close(conv_fast.avg_pool_grad(x.shape, a, ksize, strides, "SAME"),
               ref.avg_pool_grad(x.shape, a, ksize, strides, "SAME"), np.float32,
               f"avg_pool_grad {ksize} {strides}")


@needs_loops
def test_pools_stay_on_one_thread_under_their_threshold(monkeypatch):
    calls, real_pool = [], conv_fast._pool
    monkeypatch.setattr(conv_fast, "_pool", lambda: calls.append("pool") or real_pool())
    x, = _arrays((16, 28, 28, 32), np.float32)  # over the split of im2col and col2im
    y = conv_fast.max_pool(x, (2, 2), (2, 2), "SAME")
    conv_fast.max_pool_grad(x, y, y, (2, 2), (2, 2), "SAME")
    conv_fast.avg_pool_grad(x.shape, conv_fast.avg_pool(x, (2, 2), (2, 2), "SAME"), (2, 2),
                            (2, 2), "SAME")
    assert x.size >= conv_fast.MIN_SPLIT and not calls


@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_other_dtypes_and_empty_arrays_go_to_runtime_conv(dtype):
    x = np.arange(2 * 4 * 4 * 2).reshape(2, 4, 4, 2).astype(dtype)
    w = np.ones((3, 3, 2, 1), dtype)
    np.testing.assert_array_equal(conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1)),
                                  ref.conv2d(x, w, (1, 1), "SAME", (1, 1)))
    np.testing.assert_array_equal(conv_fast.max_pool(x, (2, 2), (2, 2), "VALID"),
                                  ref.max_pool(x, (2, 2), (2, 2), "VALID"))
    empty = np.zeros((0, 4, 4, 2), np.float32)
    assert conv_fast.conv2d(empty, w.astype(np.float32), (1, 1), "SAME", (1, 1)).shape == \
        (0, 4, 4, 1)
    assert conv_fast.avg_pool_grad((0, 4, 4, 2), np.zeros((0, 2, 2, 2), np.float32), (2, 2),
                                   (2, 2), "VALID").shape == (0, 4, 4, 2)


def _train_step(conv_loops: bool, monkeypatch):
    """A conv, max-pool, avg-pool network's loss and updated kernel after two SGD steps."""
    if not conv_loops:
        monkeypatch.setattr(conv_fast, "_state", {"why": "switched off by the test"})
    x, = _arrays((4, 9, 9, 2), np.float32)
    with sg.Graph().as_default():
        images = sg.placeholder(sg.float32, [None, 9, 9, 2])
        k1 = sg.Variable(_arrays((3, 3, 2, 5), np.float32, seed=3)[0] * 0.3)
        k2 = sg.Variable(_arrays((3, 3, 5, 4), np.float32, seed=4)[0] * 0.3)
        net = sg.nn.relu(sg.nn.conv2d(images, k1, [1, 1, 1, 1], "SAME"))
        net = sg.nn.max_pool(net, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        net = sg.nn.conv2d(net, k2, [1, 2, 2, 1], "VALID")
        net = sg.nn.avg_pool(net, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
        loss = sg.reduce_sum(net * net)
        train = sg.train.GradientDescentOptimizer(0.01).minimize(loss)
        with sg.Session() as sess:
            sess.run(sg.global_variables_initializer())
            for _ in range(2):
                sess.run(train, {images: x})
            return sess.run([loss, k1, k2], {images: x})


@needs_loops
def test_a_session_gives_runtime_conv_results(monkeypatch):
    fast = _train_step(True, monkeypatch)
    numpy_only = _train_step(False, monkeypatch)
    for got, want in zip(fast, numpy_only):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_export_carries_runtime_conv_not_the_loops(tmp_path):
    with sg.Graph().as_default():
        x = sg.placeholder(sg.float32, [2, 6, 6, 1])
        k = sg.constant(np.ones((3, 3, 1, 2), np.float32))
        y = sg.nn.max_pool(sg.nn.conv2d(x, k, [1, 1, 1, 1], "SAME"), [1, 2, 2, 1],
                           [1, 2, 2, 1], "VALID")
        with sg.Session() as sess:
            sg.export([y], [x], str(tmp_path / "conv.py"), session=sess)
    source = (tmp_path / "conv.py").read_text()
    assert "def conv2d(" in source and "def max_pool(" in source
    assert "numba" not in source and "_conv_kernels" not in source and "over_batch" not in source


def _entries():
    """(name, call, size) of each of conv_fast's entries on small float32 arrays: the size its
    threshold counts (multiply-adds for a convolution, elements for the rest)."""
    x, w, dy = _arrays((2, 6, 6, 3), np.float32, (3, 3, 3, 4), (2, 6, 6, 4))
    pool = ((2, 2), (2, 2), "VALID")
    y = ref.max_pool(x, *pool)
    (dy_pool,) = _arrays(y.shape, np.float32, seed=2)
    macs = 2 * 6 * 6 * 4 * (3 * 3 * 3)  # each output element: a 3x3x3 window
    assert conv_fast.conv_macs(dy.shape, w.shape) == macs
    conv = ((1, 1), "SAME", (1, 1))
    return [("conv2d", lambda: conv_fast.conv2d(x, w, *conv), macs),
            ("conv2d_backprop_input",
             lambda: conv_fast.conv2d_backprop_input(x.shape, w, dy, *conv), macs),
            ("conv2d_backprop_filter",
             lambda: conv_fast.conv2d_backprop_filter(x, w.shape, dy, *conv), macs),
            ("max_pool", lambda: conv_fast.max_pool(x, *pool), x.size),
            ("max_pool_grad", lambda: conv_fast.max_pool_grad(x, y, dy_pool, *pool), x.size),
            ("avg_pool", lambda: conv_fast.avg_pool(x, *pool), x.size),
            ("avg_pool_grad", lambda: conv_fast.avg_pool_grad(x.shape, dy_pool, *pool), x.size),
            ("bias_relu", lambda: conv_fast.bias_relu(dy, w[0, 0, 0]), dy.size),
            ("relu_grad_bias_sum", lambda: conv_fast.relu_grad_bias_sum(dy, dy), dy.size)]


@needs_loops
@pytest.mark.parametrize("entry", range(9), ids=lambda i: _entries()[i][0])
def test_each_entry_goes_to_the_loops_from_its_threshold(entry, monkeypatch):
    """A call of its threshold's size or more runs numba's loops, a smaller one
    runtime_conv's kernel (or NumPy's steps) alone: convolutions by multiply-adds
    (LOOPS_MIN_MACS), pools and epilogues by elements (LOOPS_MIN_ELEMENTS)."""
    kernels, loops_called = conv_fast._load(), []
    for name in ("im2col", "col2im", "max_pool", "max_pool_grad", "avg_pool", "avg_pool_grad",
                 "bias_relu", "relu_grad_bias_sum"):
        real = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *a, real=real, name=name:
                            loops_called.append(name) or real(*a))
    name, call, size = _entries()[entry]
    for least, on_loops in ((size + 1, False), (size, True)):
        monkeypatch.setattr(conv_fast, "LOOPS_MIN_MACS", least)
        monkeypatch.setattr(conv_fast, "LOOPS_MIN_ELEMENTS", least)
        loops_called.clear()
        call()
        assert bool(loops_called) == on_loops, (name, least, loops_called)


@needs_loops
def test_a_program_of_small_calls_never_loads_numba():
    """Under the thresholds every call stays with runtime_conv: the training steps of a small
    convolutional network (the digits LeNet's shapes, batches of 32 and a last one of 3) and
    its forward pass on 450 images never import numba, whose load (about 0.7 s) would cost a
    short program more than its loops save."""
    code = "\n".join([
        "import sys", "import numpy as np", "import staticgrad as sg",
        "x = sg.placeholder(sg.float32, [None, 8, 8, 1])",
        "net = sg.layers.conv2d(x, 16, 3, padding='same', activation=sg.nn.relu)",
        "net = sg.layers.max_pooling2d(net, 2, 2)",
        "net = sg.layers.conv2d(net, 32, 3, padding='same', activation=sg.nn.relu)",
        "net = sg.layers.average_pooling2d(net, 2, 2)",
        "loss = sg.reduce_mean(sg.square(net))",
        "train = sg.train.AdamOptimizer(0.01).minimize(loss)",
        "with sg.Session() as sess:",
        "    sess.run(sg.global_variables_initializer())",
        "    for batch in (32, 32, 3):",
        "        sess.run(train, {x: np.ones((batch, 8, 8, 1), np.float32)})",
        "    print(sess.run(loss, {x: np.ones((450, 8, 8, 1), np.float32)}) >= 0)",
        "print('numba' in sys.modules)"])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.split() == ["True", "False"]


def test_switched_off_by_the_environment():
    code = ("import numpy as np; from staticgrad.backends.numpy import conv_fast as c; "
            "x = np.ones((1, 4, 4, 1), np.float32); "
            "print(c.available(), c.why_not(), c.max_pool(x, (2, 2), (2, 2), 'VALID').sum())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, env={**os.environ, "STATICGRAD_FAST": "off"})
    assert out.stdout.split() == ["False", "switched", "off", "by", "STATICGRAD_FAST=off",
                                  "4.0"]


@needs_loops
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_makes_its_own_threads(monkeypatch):
    monkeypatch.setattr(conv_fast, "MIN_SPLIT", 0)
    monkeypatch.setattr(conv_blocked, "MIN_SPLIT_MACS", 0)
    x, w = _arrays((4, 5, 5, 2), np.float32, (3, 3, 2, 3))
    want = conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1))  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the split conv ran and agrees
        ok = np.array_equal(conv_fast.conv2d(x, w, (1, 1), "SAME", (1, 1)), want)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
