"""Convolution and pooling for the generated code (`rt.conv2d`...): runtime_conv's kernels,
with their loops compiled by numba where the `[fast]` extra is installed.

The matrix products stay NumPy's (OpenBLAS); numba does what NumPy does badly around them.
Where threadpoolctl can hold the BLAS to one thread, convolutions go to conv_blocked: the
batch in blocks whose im2col slab stays in the cache, one product per block, on every core
(see there); without it, the whole batch's im2col matrix and one product, as below.

- im2col: the windows of the input, written once into one contiguous [N*OH*OW, kh*kw*C]
  matrix, padding included as zeros, without making a padded copy of the input first;
- col2im: the input gradient's scatter-add, one pass over the GEMM's result (runtime_conv
  adds one strided slice per kernel offset: kh*kw passes over the padded gradient);
- pooling and its gradients: one pass per call (runtime_conv folds NumPy calls over the
  kernel offsets; MaxPoolGrad makes several passes per offset).

Each loop splits the batch between NUMBA_NUM_THREADS threads (the number of CPUs unless set):
the caller's and a small pool's, which wait on a lock when idle; from a size of its own for
each kind of loop (below). numba's own threads (`prange`, OpenMP) spin after each loop, and
on two cores they slowed the OpenBLAS product that follows (benchmarks/README.md,
"Convolution").

The results are runtime_conv's: the same matrix products on the same matrices; sums of the
same terms in the same order, except the gradients where windows overlap (col2im, the pooling
gradients), whose terms are added in another order and may differ in the last bits. The max
pooling gradient goes to the first maximum of each window, as TF's and runtime_conv's. Arrays
of other dtypes than float32 and float64, and empty ones, go to runtime_conv.

Used where numba imports with its JIT on and the environment variable STATICGRAD_FAST is
not 0, false, no or off (as runtime_fast); `why_not()` says why not. Only for calls from a
size (LOOPS_MIN_MACS, LOOPS_MIN_ELEMENTS): smaller ones stay with runtime_conv, so that a
program of small layers never pays for loading numba. The loops compile on
first use for each dtype (a few seconds; numba caches them on disk). An export carries
runtime_conv's kernels (NumPy only), not these.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from ... import runtime_conv as ref
from ...runtime_conv import resolve_pads
from . import conv_blocked

_state: dict = {}  # "kernels" (the module) or "why" (a str), once _load() has run; "pool"
_loading = threading.Lock()
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def available() -> bool:
    """Are the numba loops usable here?"""
    return _load() is not None


def why_not() -> str | None:
    """Why the numba loops are not used here, or None when they are."""
    _load()
    return _state.get("why")


def _load():
    if "kernels" in _state or "why" in _state:
        return _state.get("kernels")
    with _loading:
        if "kernels" not in _state and "why" not in _state:
            if os.environ.get("STATICGRAD_FAST", "").strip().lower() in ("0", "false", "no",
                                                                         "off"):
                _state["why"] = f"switched off by STATICGRAD_FAST={os.environ['STATICGRAD_FAST']}"
                return None
            try:
                import numba
            except ImportError as e:
                _state["why"] = f"numba is not installed (pip install 'staticgrad[fast]'): {e}"
                return None
            if numba.config.DISABLE_JIT:
                _state["why"] = "numba's JIT is off (NUMBA_DISABLE_JIT)"
                return None
            try:
                from . import _conv_kernels
            except Exception as e:  # noqa: BLE001 -- e.g. no place numba may write its cache
                _state["why"] = f"loading the loops failed: {type(e).__name__}: {e}"
                return None
            _state["threads"] = max(1, int(numba.config.NUMBA_NUM_THREADS))
            _state["kernels"] = _conv_kernels
    return _state.get("kernels")


# Calls under these sizes stay with runtime_conv's NumPy kernels (the epilogues with NumPy's
# steps), numba's loops unloaded: loading them (numba's import and its type system, on the
# first call of a loop) takes about 0.7 s, while on small arrays runtime_conv's kernels are
# about as fast as the loops, or slower by tens of microseconds a call (pools). So a program
# whose every call is small (the digits examples: batches of 32 and 450 8x8 images) never
# loads numba. Convolutions by multiply-adds: at 29M (cnn3's first layer at batch 128)
# runtime_conv's forward and filter gradient took 0.8-0.9x of the loops' time, at 462M
# 1.5-1.7x. Pools and epilogues by elements: runtime_conv's pools are 2-4x slower from 0.5M
# elements (0.32 against 0.10 ms at 461K). benchmarks/README.md, "Small programs without
# numba".
LOOPS_MIN_MACS = 1 << 26
LOOPS_MIN_ELEMENTS = 1 << 19


def _loops_for(size: int, least: int):
    """numba's loops for a call of `size` (multiply-adds or elements), or None: under
    `least`, or where the loops are not available."""
    if size < least:
        return None
    return _state.get("kernels") or _load()


def conv_macs(positions: tuple, filter_shape: tuple) -> int:
    """The multiply-adds of a convolution or either of its gradients: the output's (or dy's)
    leading dims [N, OH, OW] times the filter's size."""
    return math.prod(positions[:3]) * math.prod(filter_shape)  # (Python ints: no overflow)


MIN_SPLIT = 1 << 18  # elements a call reads or writes, under which one thread does it all
# the same for the pooling loops, by the input's elements. Measured on this project's two
# cores, each loop alone on a quiet machine (benchmarks/README.md, "Pooling and the
# epilogues on both threads"): at batch 128 of 28x28x32 (3.2M elements) a second thread
# took max pooling from 1.33 to 0.91 ms, average pooling from 1.39 to 0.54, its gradient
# from 2.45 to 1.08; at 1.6M elements no forward pool was faster. The max pooling gradient
# compares as well as it moves: two threads took it from 1.66 to 1.03 ms at 1.6M elements,
# 0.62 to 0.46 at 0.8M, 0.22 to 0.20 at 0.26M.
POOL_MIN_SPLIT = 1 << 21
MAX_POOL_GRAD_MIN_SPLIT = 1 << 19
# the bias add with its ReLU, by rows: at batch 128 of 28x28x32 (3.2M elements) two threads
# took it from 1.39 to 1.03 ms, at 14x14x64 (1.6M) from 0.47 to 0.38; at 0.8M and under
# the hand-off made it slower (0.12 to 0.20 ms). (The ReLU's gradient with the bias
# gradient's sum stays on one thread: split by channels, to keep each sum's order, it took
# twice as long at every size measured, both threads streaming through every row.)
EPILOGUE_MIN_SPLIT = 1 << 20


def _pool() -> ThreadPoolExecutor:
    """This process's pool of helper threads (a child forked after the pool was made has
    none of its threads: it makes its own)."""
    pid = os.getpid()
    if _state.get("pool_pid") != pid:
        with _loading:
            if _state.get("pool_pid") != pid:
                _state["pool"] = ThreadPoolExecutor(_state["threads"] - 1, "staticgrad-conv")
                _state["pool_pid"] = pid
    return _state["pool"]


def over_batch(run, n: int, size: int, min_split: int | None = None,
               most: int | None = None) -> None:
    """run(lo, hi) for parts of range(n), one per thread (at most `most` threads), the first
    on this one; `size` is the number of elements the call touches (or whatever `min_split`,
    MIN_SPLIT by default, counts). Every part computes under the caller's np.errstate (as
    blocks.py's), which the pool's threads do not inherit: a product's overflow raises under
    over="raise", and warns nothing under all="ignore", whichever thread's rows hold it."""
    # (one thread where the loops never loaded)
    threads = min(_state.get("threads", 1), n, n if most is None else most)
    if threads < 2 or size < (MIN_SPLIT if min_split is None else min_split):
        run(0, n)
        return
    bounds = [n * i // threads for i in range(threads + 1)]
    errors = dict(np.geterr(), call=np.geterrcall())

    def part(lo, hi):
        with np.errstate(**errors):
            run(lo, hi)

    pool = _pool()
    parts = [pool.submit(part, lo, hi) for lo, hi in zip(bounds[1:-1], bounds[2:])]
    try:
        run(0, bounds[1])
    finally:
        wait(parts)  # all ended before one's exception goes up: none runs on after the call
        for part in parts:
            part.result()


def _fits(*arrays) -> bool:
    """Non-empty 4-D arrays of one dtype, float32 or float64: what the loops take."""
    dtype = arrays[0].dtype
    return dtype in _DTYPES and all(a.dtype == dtype and a.ndim == 4 and a.size
                                    for a in arrays)


def _contiguous(a):
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _columns(kernels, x, k_hw, strides, pads, dilations, out_hw):
    """The im2col matrix of x: [N*OH*OW, kh*kw*C], in a new contiguous array."""
    cols = np.empty((x.shape[0], *out_hw, *k_hw, x.shape[3]), x.dtype)
    x, (top, left) = _contiguous(x), _corner(pads)
    strides, dilations = tuple(strides), tuple(dilations)
    over_batch(lambda lo, hi: kernels.im2col(x[lo:hi], top, left, strides, dilations,
                                              cols[lo:hi]), x.shape[0], cols.size)
    return cols.reshape(-1, k_hw[0] * k_hw[1] * x.shape[3])


def conv2d(x, w, strides, padding, dilations):
    """runtime_conv.conv2d: one im2col matrix times the filter as a matrix."""
    pads = resolve_pads(padding, x.shape[1:3], w.shape[:2], strides, dilations)
    out_hw = ref.output_hw(x.shape[1:3], w.shape[:2], strides, pads, dilations)
    kernels = _loops_for(conv_macs((x.shape[0], *out_hw), w.shape), LOOPS_MIN_MACS)
    if kernels is None or not _fits(x, w) or min(out_hw) < 1:
        return ref.conv2d(x, w, strides, padding, dilations)
    if conv_blocked.available():
        return conv_blocked.conv2d(kernels, over_batch, _contiguous(x), w, _corner(pads),
                                   tuple(strides), tuple(dilations), out_hw)
    cols = _columns(kernels, x, w.shape[:2], strides, pads, dilations, out_hw)
    out = np.empty((x.shape[0], *out_hw, w.shape[3]), x.dtype)
    np.matmul(cols, w.reshape(-1, w.shape[3]), out=out.reshape(-1, w.shape[3]))
    return out


def conv2d_backprop_input(input_shape, w, dy, strides, padding, dilations):
    """runtime_conv.conv2d_backprop_input: dy times the filter's transpose, then col2im."""
    kernels = _loops_for(conv_macs(dy.shape, w.shape), LOOPS_MIN_MACS)
    input_shape = tuple(int(d) for d in input_shape)
    if kernels is None or not _fits(w, dy) or 0 in input_shape:
        return ref.conv2d_backprop_input(input_shape, w, dy, strides, padding, dilations)
    pads = resolve_pads(padding, input_shape[1:3], w.shape[:2], strides, dilations)
    if conv_blocked.available():
        return conv_blocked.conv2d_backprop_input(kernels, over_batch, input_shape, w,
                                                  _contiguous(dy), _corner(pads),
                                                  tuple(strides), tuple(dilations))
    kh, kw, c, o = w.shape
    cols = np.empty((*dy.shape[:3], kh, kw, c), dy.dtype)
    np.matmul(dy.reshape(-1, o), w.reshape(-1, o).T, out=cols.reshape(-1, kh * kw * c))
    dx = np.zeros(input_shape, dy.dtype)
    (top, left), strides, dilations = _corner(pads), tuple(strides), tuple(dilations)
    over_batch(lambda lo, hi: kernels.col2im(cols[lo:hi], top, left, strides, dilations,
                                              dx[lo:hi]), dx.shape[0], cols.size)
    return dx


def conv2d_backprop_filter(x, filter_shape, dy, strides, padding, dilations):
    """runtime_conv.conv2d_backprop_filter: the im2col matrix's transpose times dy."""
    filter_shape = tuple(int(d) for d in filter_shape)
    kernels = _loops_for(conv_macs(dy.shape, filter_shape), LOOPS_MIN_MACS)
    if kernels is None or not _fits(x, dy) or 0 in filter_shape:
        return ref.conv2d_backprop_filter(x, filter_shape, dy, strides, padding, dilations)
    pads = resolve_pads(padding, x.shape[1:3], filter_shape[:2], strides, dilations)
    if conv_blocked.available():
        return conv_blocked.conv2d_backprop_filter(kernels, over_batch, _contiguous(x),
                                                   filter_shape, _contiguous(dy),
                                                   _corner(pads), tuple(strides),
                                                   tuple(dilations))
    cols = _columns(kernels, x, filter_shape[:2], strides, pads, dilations, dy.shape[1:3])
    return ref.columns_t_dot(cols, dy.reshape(-1, dy.shape[3])).reshape(filter_shape)


def _corner(pads) -> tuple[int, int]:
    """The padding above and to the left: where the windows start, relative to the input."""
    return pads[0][0], pads[1][0]


def _pool_setup(shape, ksize, strides, padding):
    pads = resolve_pads(padding, shape[1:3], ksize, strides)
    return pads, ref.output_hw(shape[1:3], ksize, strides, pads)


def _tiled(in_hw, ksize, strides, corner, out_hw) -> bool:
    """Do the windows hold every element of the input exactly once (each stride its kernel's
    size, no gap before the last window's end)?"""
    return all(k == s and n * s - before >= size
               for size, k, s, before, n in zip(in_hw, ksize, strides, corner, out_hw))


def max_pool(x, ksize, strides, padding):
    """runtime_conv.max_pool in one pass."""
    kernels = _loops_for(x.size, LOOPS_MIN_ELEMENTS)
    pads, out_hw = _pool_setup(x.shape, ksize, strides, padding)
    if kernels is None or not _fits(x) or min(out_hw) < 1:
        return ref.max_pool(x, ksize, strides, padding)
    y = np.empty((x.shape[0], *out_hw, x.shape[3]), x.dtype)
    x, ksize, strides, top, left = _contiguous(x), tuple(ksize), tuple(strides), *_corner(pads)
    over_batch(lambda lo, hi: kernels.max_pool(x[lo:hi], ksize, strides, top, left, y[lo:hi]),
                x.shape[0], x.size, POOL_MIN_SPLIT)
    return y


def max_pool_grad(x, y, dy, ksize, strides, padding):
    """runtime_conv.max_pool_grad in one pass; where the windows do not overlap, each
    element of the gradient written once, with no zeroing first where they tile the input."""
    kernels = _loops_for(x.size, LOOPS_MIN_ELEMENTS)
    if kernels is None or not _fits(x, y, dy):
        return ref.max_pool_grad(x, y, dy, ksize, strides, padding)
    pads = resolve_pads(padding, x.shape[1:3], ksize, strides)
    ksize, strides, corner = tuple(ksize), tuple(strides), _corner(pads)
    overlap = strides[0] < ksize[0] or strides[1] < ksize[1]
    tiled = not overlap and _tiled(x.shape[1:3], ksize, strides, corner, y.shape[1:3])
    dx = (np.empty if tiled else np.zeros)(x.shape, dy.dtype)
    x, y, dy = _contiguous(x), _contiguous(y), _contiguous(dy)
    over_batch(lambda lo, hi: kernels.max_pool_grad(x[lo:hi], y[lo:hi], dy[lo:hi], ksize,
                                                     strides, *corner, overlap, dx[lo:hi]),
                x.shape[0], x.size, MAX_POOL_GRAD_MIN_SPLIT)
    return dx


def _divisors(ksize, dtype):
    """0, 1, ... kh*kw in `dtype`: a window's count of elements is its index here, so that
    the average divides in the input's dtype, as runtime_conv's by its counts array."""
    return np.arange(ksize[0] * ksize[1] + 1, dtype=dtype)


def avg_pool(x, ksize, strides, padding):
    """runtime_conv.avg_pool in one pass."""
    kernels = _loops_for(x.size, LOOPS_MIN_ELEMENTS)
    pads, out_hw = _pool_setup(x.shape, ksize, strides, padding)
    if kernels is None or not _fits(x) or min(out_hw) < 1:
        return ref.avg_pool(x, ksize, strides, padding)
    divisors = _divisors(ksize, x.dtype)
    y = np.empty((x.shape[0], *out_hw, x.shape[3]), x.dtype)
    x, ksize, strides, top, left = _contiguous(x), tuple(ksize), tuple(strides), *_corner(pads)
    over_batch(lambda lo, hi: kernels.avg_pool(x[lo:hi], divisors, ksize, strides, top, left,
                                                y[lo:hi]), x.shape[0], x.size, POOL_MIN_SPLIT)
    return y


def avg_pool_grad(input_shape, dy, ksize, strides, padding):
    """runtime_conv.avg_pool_grad in one pass; where the windows do not overlap, each
    element of the gradient written once, with no zeroing first where they tile the input."""
    input_shape = tuple(int(d) for d in input_shape)
    kernels = _loops_for(math.prod(input_shape), LOOPS_MIN_ELEMENTS)
    if kernels is None or not _fits(dy) or 0 in input_shape:
        return ref.avg_pool_grad(input_shape, dy, ksize, strides, padding)
    pads = resolve_pads(padding, input_shape[1:3], ksize, strides)
    ksize, strides, corner = tuple(ksize), tuple(strides), _corner(pads)
    overlap = strides[0] < ksize[0] or strides[1] < ksize[1]
    tiled = not overlap and _tiled(input_shape[1:3], ksize, strides, corner, dy.shape[1:3])
    dx = (np.empty if tiled else np.zeros)(input_shape, dy.dtype)
    divisors = _divisors(ksize, dy.dtype)
    dy = _contiguous(dy)
    over_batch(lambda lo, hi: kernels.avg_pool_grad(dy[lo:hi], divisors, ksize, strides,
                                                     *corner, overlap, dx[lo:hi]),
                dx.shape[0], dx.size, POOL_MIN_SPLIT)
    return dx


# -- a layer's epilogue: the bias add and ReLU, and their gradients (backends/numpy/epilogues.py)

def bias_relu(x, b, out=None):
    """np.maximum(x + b, 0) for x of shape [..., C] and a bias b of shape [C], in one pass
    (NumPy makes two, the first slow where C is short); into `out` if given (x's buffer)."""
    kernels = _loops_for(x.size, LOOPS_MIN_ELEMENTS)
    if kernels is None or x.dtype not in _DTYPES or b.dtype != x.dtype or not x.size or \
            not (x if out is None else out).flags.c_contiguous or \
            (out is not None and out.dtype != x.dtype):
        # (NumPy's steps, and NumPy's choice of layout for a new array: a transpose's sum
        # is laid out as the transpose, which a later reduction's order follows)
        y = np.add(x, b, out=out)
        return np.maximum(y, 0, out=y)
    if out is None:
        out = np.empty(x.shape, x.dtype)
    c = x.shape[-1]
    rows, b, y = _contiguous(x).reshape(-1, c), _contiguous(b), out.reshape(-1, c)
    over_batch(lambda lo, hi: kernels.bias_relu(rows[lo:hi], b, y[lo:hi]), len(rows), x.size,
               EPILOGUE_MIN_SPLIT)
    return out


def relu_grad_bias_sum(dy, f, out=None):
    """(ReluGrad(dy, f), its sum over every axis but the last): a ReLU's gradient and the
    gradient of the bias added before it, in one pass (NumPy makes a mask array, the product
    and the sum); the gradient into `out` if given (dy's or f's buffer). The sum adds the
    rows in order, as np.sum over the leading axes does."""
    kernels = _loops_for(dy.size, LOOPS_MIN_ELEMENTS)
    c = dy.shape[-1]
    if kernels is None or dy.dtype not in _DTYPES or f.dtype != dy.dtype or not dy.size or \
            c == 1 or not (out.flags.c_contiguous if out is not None else
                           dy.flags.c_contiguous and f.flags.c_contiguous) or \
            (out is not None and out.dtype != dy.dtype):
        # (NumPy's steps where its sum would not add whole rows in order: a gradient laid
        # out as a transpose, or a last axis of 1, which np.sum adds pairwise)
        g = np.multiply(dy, np.greater(f, 0), out=out)
        return g, np.sum(g, axis=tuple(range(g.ndim - 1)))
    if out is None:
        out = np.empty(dy.shape, dy.dtype)
    db = np.zeros(c, dy.dtype)
    kernels.relu_grad_bias_sum(_contiguous(dy).reshape(-1, c), _contiguous(f).reshape(-1, c),
                               out.reshape(-1, c), db)
    return out, db
