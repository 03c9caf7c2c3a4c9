"""Convolution in blocks of the batch: conv_fast's forward pass and both gradients as many
small products, each on an im2col slab that stays in the cache, on every core at once.

conv_fast's first lowering wrote the whole batch's im2col matrix (lenet's second layer:
[25088, 800] float32, 80 MB) and handed it to one OpenBLAS product on OpenBLAS's own
threads. Here each thread takes a part of the batch and walks it in blocks of images whose
slab is at most SLAB_BYTES:

- forward: im2col of the block into the slab, then slab @ W straight into the block's rows
  of the output;
- input gradient: dy_block @ W^T into the slab, then col2im from the slab into the block of
  dx (the slab is read back while it is still in the cache);
- filter gradient: im2col of the block, then slab^T @ dy_block added into the thread's own
  [kh*kw*C, O] sum; the threads' sums are added at the end.

The products run on the caller's threads with OpenBLAS (or whichever BLAS NumPy has) held
to one thread of its own: two threads each calling a two-threaded OpenBLAS took 4-10x
longer than one, and OpenBLAS's own two threads on one big product reached only 1.0-1.2x
of one thread where two threads with one product each reach 1.6-1.8x (benchmarks/README.md,
"Convolution"). Holding it needs threadpoolctl (part of the `[fast]` extra); without it
conv_fast keeps the whole-batch lowering.

Slabs are allocated per call (one per thread, and with one input channel a zero-bordered
copy of a block beside each: `_Windows`), so the memory plan has no workspace to count.
"""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

from ...runtime_conv import offset_copies

SLAB_BYTES = 1 << 20  # an im2col slab's size: a block holds as many images as fit, at least 1

_blas: dict = {}
_blas_lock = threading.Lock()
_held_here = threading.local()  # `count`: how many of the holds are this thread's


def _blas_controller():
    """threadpoolctl's controller of the BLAS libraries loaded in this process, or None."""
    if "controller" not in _blas:
        with _blas_lock:
            if "controller" not in _blas:
                _blas["users"] = 0
                _blas["controller"] = _find_blas()
    return _blas["controller"]


def _find_blas():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    controller = ThreadpoolController().select(user_api="blas")
    return controller if controller.lib_controllers else None


def available() -> bool:
    """Can the BLAS be held to one thread here (threadpoolctl present, a BLAS it knows)?"""
    return _blas_controller() is not None


def _set_threads(lib, threads) -> None:
    """lib.set_num_threads(threads), on whichever thread calls it. threadpoolctl's own (3.8
    here) lets only one Python thread set a pthreads OpenBLAS's threads, the first that did,
    for as long as it lives, and does nothing on any other: a call on another thread ran its
    products on every OpenBLAS thread, a second session's last one out could not restore the
    count (OpenBLAS then stayed on one thread for good), and a call that went first on a
    thread that lives on made the user's own threadpool_limits on every other thread do
    nothing. So the setter behind that guard (private to threadpoolctl; versions without the
    guard have none, and their set_num_threads acts on any thread); the counting in
    _OneBlasThread keeps staticgrad's own threads from undoing each other's setting."""
    getattr(lib, "_real_set_num_threads", lib.set_num_threads)(threads)


class _OneBlasThread:
    """The BLAS on one thread while any caller is inside; the first one in saves each
    library's setting, the last one out restores it (so that two sessions running at once do
    not undo each other's). Through each library's own controller: threadpoolctl's `limit()`
    context cost about 20 us a call, this about 4."""

    def __enter__(self):
        with _blas_lock:
            if _blas["users"] == 0:
                libs = _blas["controller"].lib_controllers
                if "saved" not in _blas:  # else a restore cut short (Ctrl-C): still the count
                    _blas["saved"] = [lib.get_num_threads() for lib in libs]
                for lib in libs:
                    _set_threads(lib, 1)
            _blas["users"] += 1
            _held_here.count = getattr(_held_here, "count", 0) + 1

    def __exit__(self, *exc):
        with _blas_lock:
            _held_here.count -= 1
            _blas["users"] -= 1
            if _blas["users"] == 0:
                for lib, threads in zip(_blas["controller"].lib_controllers, _blas["saved"]):
                    _set_threads(lib, threads)
                del _blas["saved"]  # only once all are back (see __enter__)


def users_threads() -> int:
    """The most threads the BLAS may use as the user set it (OPENBLAS_NUM_THREADS, their own
    threadpoolctl limits): inside a hold, the count it saved; 1 where none can be read."""
    controller = _blas_controller()
    if controller is None:
        return 1
    with _blas_lock:
        counts = _blas.get("saved") if _blas.get("users") else None
        if counts is None:
            counts = [lib.get_num_threads() for lib in controller.lib_controllers]
    return max(counts, default=1)


def _after_fork_in_child():
    """A child forked while calls were inside on other threads has none of those threads: it
    lets go of their hold on the BLAS (the count they saved back in place), or it would keep
    OpenBLAS on one thread and count them inside for good, never holding or restoring again.
    The holds of the thread that forked are the child's own (a py_func forking inside the
    run of a plan that holds the BLAS throughout): they stay, and the child's thread lets go
    of them as it leaves. A fresh lock too: the parent's may have been held at the fork."""
    global _blas_lock
    _blas_lock = threading.Lock()
    mine = getattr(_held_here, "count", 0)
    if _blas.get("users", 0) > mine:
        _blas["users"] = mine
        if not mine:
            for lib, threads in zip(_blas["controller"].lib_controllers, _blas["saved"]):
                _set_threads(lib, threads)
            del _blas["saved"]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def one_blas_thread():
    """The BLAS on one thread for as long as the context lasts (`rt.one_blas_thread()` in
    the generated code, around the whole run of a plan with convolutions) where conv_fast's
    convolutions are this module's; nothing elsewhere (no numba: runtime_conv's whole-batch
    products, on OpenBLAS's own threads; no threadpoolctl: no way to hold it).

    Once a product has run on OpenBLAS's own threads, they spin, waiting for more, for about
    a tenth of a second: on two cores such a spinning thread takes the core the other half of
    a blocked convolution needs. A training step's dense-layer products, one before and two
    after the convolutions, made every convolution of the step 1.5-1.8x slower than alone
    (benchmarks/README.md, "Convolution"); with the BLAS held to one thread for the whole
    run, OpenBLAS's threads are never woken, and the large products are split between
    staticgrad's threads instead (products.py)."""
    return _OneBlasThread() if blocked() else contextlib.nullcontext()


def blocked() -> bool:
    """Are conv_fast's convolutions this module's (numba's loops and a BLAS that can be held
    to one thread)?"""
    from .conv_fast import available as loops  # (conv_fast imports this module)
    return available() and loops()


MIN_SPLIT_MACS = 1 << 22  # multiply-adds of a call under which one thread does it all


def images_per_block(n: int, image_bytes: int) -> int:
    """How many of n images, each `image_bytes` of slab, make a block of at most SLAB_BYTES
    (at least one)."""
    return max(1, min(n, SLAB_BYTES // max(image_bytes, 1)))


def _blocks(lo: int, hi: int, size: int):
    for start in range(lo, hi, size):
        yield start, min(start + size, hi)


class _Windows:
    """The im2col slab of a block of images: `windows(start, end)` fills `slab` with the
    windows of x[start:end] and returns the part it filled. numba's im2col copies a window
    row at a time; with one input channel a row is kw elements, too few to copy well
    (3.7 ns an element for a 3x3 window), so there the block is copied once into a buffer
    whose border stays 0 and each of the kh*kw window offsets is one strided NumPy copy of it,
    a long run of elements each (lenet's and cnn3's first layers, a block of 37 28x28 images:
    966 us with numba, 228 with NumPy for 3x3; 5x5: 679 against 358). From two channels on,
    numba's rows were as fast or faster; and numba's too where the bordered block would be
    larger than a slab (pads and strides far larger than the window). The same elements
    either way."""

    def __init__(self, kernels, x, slab, top_left, strides, dilations):
        self.kernels, self.x, self.slab = kernels, x, slab
        self.top_left, self.strides, self.dilations = top_left, strides, dilations
        self.padded = None
        if x.shape[3] == 1:
            (oh, ow, kh, kw), (top, left) = slab.shape[1:5], top_left
            rows = max(top + x.shape[1], (oh - 1) * strides[0] + (kh - 1) * dilations[0] + 1)
            cols = max(left + x.shape[2], (ow - 1) * strides[1] + (kw - 1) * dilations[1] + 1)
            # (not where the bordered block would outgrow a slab: pads of 600 and strides of
            # 200 around a 3x3 window made 350 MB for 64 images of 28x28)
            if len(slab) * rows * cols * x.itemsize <= max(slab.nbytes, SLAB_BYTES):
                self.padded = np.zeros((len(slab), rows, cols, 1), x.dtype)

    def __call__(self, start: int, end: int):
        part = self.slab[:end - start]
        if self.padded is None:
            self.kernels.im2col(self.x[start:end], *self.top_left, self.strides, self.dilations,
                                part)
            return part
        (top, left), padded = self.top_left, self.padded[:end - start]
        padded[:, top:top + self.x.shape[1], left:left + self.x.shape[2]] = self.x[start:end]
        return offset_copies(padded, self.strides, self.dilations, part)


def conv2d(kernels, parts, x, w, top_left, strides, dilations, out_hw):
    """x [N, H, W, C] (C-contiguous) cross-correlated with w [kh, kw, C, O]."""
    kh, kw, c, o = w.shape
    out = np.empty((x.shape[0], *out_hw, o), x.dtype)
    w2 = w.reshape(-1, o)
    k = kh * kw * c
    block = images_per_block(x.shape[0], out_hw[0] * out_hw[1] * k * x.itemsize)

    def run(lo, hi):
        slab = np.empty((block, *out_hw, kh, kw, c), x.dtype)
        windows = _Windows(kernels, x, slab, top_left, strides, dilations)
        for start, end in _blocks(lo, hi, block):
            part = windows(start, end)
            np.matmul(part.reshape(-1, k), w2, out=out[start:end].reshape(-1, o))

    with _OneBlasThread():
        parts(run, x.shape[0], out.size * k, MIN_SPLIT_MACS)
    return out


def conv2d_backprop_input(kernels, parts, input_shape, w, dy, top_left, strides, dilations):
    """The gradient of conv2d with respect to its input, of `input_shape`, given dy."""
    kh, kw, c, o = w.shape
    dx = np.zeros(input_shape, dy.dtype)
    w2t = w.reshape(-1, o).T
    out_hw = dy.shape[1:3]
    block = images_per_block(dy.shape[0], out_hw[0] * out_hw[1] * kh * kw * c * dy.itemsize)

    def run(lo, hi):
        slab = np.empty((block, *out_hw, kh, kw, c), dy.dtype)
        for start, end in _blocks(lo, hi, block):
            part = slab[:end - start]
            np.matmul(dy[start:end].reshape(-1, o), w2t, out=part.reshape(-1, kh * kw * c))
            kernels.col2im(part, *top_left, strides, dilations, dx[start:end])

    with _OneBlasThread():
        parts(run, dy.shape[0], dy.size * kh * kw * c, MIN_SPLIT_MACS)
    return dx


def conv2d_backprop_filter(kernels, parts, x, filter_shape, dy, top_left, strides,
                           dilations):
    """The gradient of conv2d with respect to its filter, of `filter_shape`, given dy."""
    kh, kw, c, o = filter_shape
    k = kh * kw * c
    out_hw = dy.shape[1:3]
    block = images_per_block(x.shape[0], out_hw[0] * out_hw[1] * k * x.itemsize)
    sums = {}  # the first image of each thread's part: that thread's sum

    # the product's order as runtime_conv.columns_t_dot's (per block, on one thread, both
    # orders take the same time), so that a call of one block on one thread gives its result
    transposed = k <= 128

    def run(lo, hi):
        slab = np.empty((block, *out_hw, kh, kw, c), x.dtype)
        windows = _Windows(kernels, x, slab, top_left, strides, dilations)
        total = np.zeros((k, o), x.dtype)
        product = np.empty((o, k) if transposed else (k, o), x.dtype)
        for start, end in _blocks(lo, hi, block):
            part = windows(start, end)
            cols, dy2d = part.reshape(-1, k), dy[start:end].reshape(-1, o)
            if transposed:
                total += np.matmul(dy2d.T, cols, out=product).T
            else:
                total += np.matmul(cols.T, dy2d, out=product)
        sums[lo] = total

    with _OneBlasThread():
        parts(run, x.shape[0], dy.size * k, MIN_SPLIT_MACS)
    totals = [sums[lo] for lo in sorted(sums)]  # added in one order, whichever ends first
    return sum(totals[1:], totals[0]).reshape(filter_shape)
