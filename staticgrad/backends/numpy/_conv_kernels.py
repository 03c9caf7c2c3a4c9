"""The numba loops of conv_fast (imported by it only when numba is usable; see there why).

Each loop runs over the images of the batch it is given; conv_fast gives each of its threads
a part of the batch (nogil), so that no two threads write one element. Arrays are NHWC and
C-contiguous; the channel loop is innermost, where LLVM vectorizes it. Compiled on first use
for each dtype and cached on disk by numba (cache=True).

Padding is never materialized: a window position outside the input reads 0 (convolution,
average pooling) or -inf (max pooling), as runtime_conv's padded arrays do.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_OPTIONS = dict(nogil=True, cache=True, boundscheck=False)


@njit(**_OPTIONS)
def im2col(x, top, left, strides, dilations, cols):
    """cols[b, p, q, i, j, :] = x[b, p*sh + i*dh - top, q*sw + j*dw - left, :] (0 outside x):
    the window of every output position, cols of shape [N, OH, OW, kh, kw, C]. A window row
    wholly inside x with dilation 1 is kw*C consecutive elements of both: one plain copy
    (for a first layer's single channel, 5 elements rather than 5 copies of one), as a slice
    assignment from 32 elements on (lenet's second layer: 30% faster than the element loop,
    which is faster for a few elements)."""
    n, h, w, c = x.shape
    oh, ow, kh, kw = cols.shape[1], cols.shape[2], cols.shape[3], cols.shape[4]
    sh, sw = strides
    dh, dw = dilations
    flat_x = x.reshape(n, h * w * c)
    flat_cols = cols.reshape(n, oh * ow * kh * kw * c)
    row = kw * c
    for b in range(n):
        for p in range(oh):
            for q in range(ow):
                s0 = q * sw - left
                whole_row = dw == 1 and s0 >= 0 and s0 + kw <= w
                for i in range(kh):
                    r = p * sh + i * dh - top
                    at = ((p * ow + q) * kh + i) * row
                    if whole_row and 0 <= r < h:
                        start = (r * w + s0) * c
                        if row >= 32:
                            flat_cols[b, at:at + row] = flat_x[b, start:start + row]
                            continue
                        for t in range(row):
                            flat_cols[b, at + t] = flat_x[b, start + t]
                        continue
                    for j in range(kw):
                        s = s0 + j * dw
                        if 0 <= r < h and 0 <= s < w:
                            for k in range(c):
                                cols[b, p, q, i, j, k] = x[b, r, s, k]
                        else:
                            for k in range(c):
                                cols[b, p, q, i, j, k] = 0


@njit(**_OPTIONS)
def col2im(cols, top, left, strides, dilations, dx):
    """The transpose of im2col: dx[b, r, s, :] += cols[b, p, q, i, j, :] for every window
    position that reads (r, s); dx arrives zeroed. Whole window rows as in im2col."""
    n, h, w, c = dx.shape
    oh, ow, kh, kw = cols.shape[1], cols.shape[2], cols.shape[3], cols.shape[4]
    sh, sw = strides
    dh, dw = dilations
    flat_dx = dx.reshape(n, h * w * c)
    flat_cols = cols.reshape(n, oh * ow * kh * kw * c)
    row = kw * c
    for b in range(n):
        for p in range(oh):
            for q in range(ow):
                s0 = q * sw - left
                whole_row = dw == 1 and s0 >= 0 and s0 + kw <= w
                for i in range(kh):
                    r = p * sh + i * dh - top
                    if r < 0 or r >= h:
                        continue
                    if whole_row:
                        at = ((p * ow + q) * kh + i) * row
                        start = (r * w + s0) * c
                        for t in range(row):
                            flat_dx[b, start + t] += flat_cols[b, at + t]
                        continue
                    for j in range(kw):
                        s = s0 + j * dw
                        if 0 <= s < w:
                            for k in range(c):
                                dx[b, r, s, k] += cols[b, p, q, i, j, k]


@njit(**_OPTIONS)
def max_pool(x, ksize, strides, top, left, y):
    """y[b, p, q, :] = the maximum of each window (a NaN in it wins, as with np.maximum).
    Each channel's maximum is a select written back unconditionally, so that LLVM
    vectorizes the channel loop (about 10% faster than a conditional store)."""
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    kh, kw = ksize
    sh, sw = strides
    for b in range(n):
        for p in range(oh):
            for q in range(ow):
                out = y[b, p, q]
                out[:] = -np.inf
                for i in range(kh):
                    r = p * sh + i - top
                    if r < 0 or r >= h:
                        continue
                    for j in range(kw):
                        s = q * sw + j - left
                        if s < 0 or s >= w:
                            continue
                        row = x[b, r, s]
                        for k in range(c):
                            v, m = row[k], out[k]
                            out[k] = v if (v > m) | (v != v) else m


@njit(**_OPTIONS)
def max_pool_grad(x, y, dy, ksize, strides, top, left, dx):
    """dx[b, r, s, :] += dy[b, p, q, :] at the first position (r, s) of each window, in
    row-major order over the whole window (padding included, as -inf), where x equals y;
    dx arrives zeroed. Branch-free over the channels (`todo` marks those not yet routed),
    so that LLVM vectorizes them."""
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    kh, kw = ksize
    sh, sw = strides
    todo = np.empty(c, np.bool_)
    for b in range(n):
        for p in range(oh):
            for q in range(ow):
                todo[:] = True
                for i in range(kh):
                    r = p * sh + i - top
                    for j in range(kw):
                        s = q * sw + j - left
                        if 0 <= r < h and 0 <= s < w:
                            for k in range(c):
                                hit = todo[k] & (x[b, r, s, k] == y[b, p, q, k])
                                dx[b, r, s, k] += dy[b, p, q, k] if hit else 0
                                todo[k] &= not hit
                        else:  # padding: the first maximum only where the window's is -inf
                            for k in range(c):
                                todo[k] &= y[b, p, q, k] != -np.inf


@njit(**_OPTIONS)
def avg_pool(x, counts, ksize, strides, top, left, y):
    """y[b, p, q, :] = the sum of each window's elements inside x, in row-major order,
    divided by counts[p, q], how many there are (of x's dtype, so the division is x's)."""
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    kh, kw = ksize
    sh, sw = strides
    for b in range(n):
        for p in range(oh):
            r0 = p * sh - top
            for q in range(ow):
                s0 = q * sw - left
                for k in range(c):
                    y[b, p, q, k] = 0
                for r in range(max(r0, 0), min(r0 + kh, h)):
                    for s in range(max(s0, 0), min(s0 + kw, w)):
                        for k in range(c):
                            y[b, p, q, k] += x[b, r, s, k]
                for k in range(c):
                    y[b, p, q, k] /= counts[p, q]


@njit(**_OPTIONS)
def avg_pool_grad(dy, counts, ksize, strides, top, left, dx):
    """dx[b, r, s, :] += dy[b, p, q, :] / counts[p, q] (the window's count of elements inside
    dx), over every window that holds (r, s); dx arrives zeroed. Each window's share is
    divided once, not once per element it goes to."""
    n, h, w, c = dx.shape
    oh, ow = dy.shape[1], dy.shape[2]
    kh, kw = ksize
    sh, sw = strides
    share = np.empty(c, dy.dtype)
    for b in range(n):
        for p in range(oh):
            r0 = p * sh - top
            for q in range(ow):
                s0 = q * sw - left
                for k in range(c):
                    share[k] = dy[b, p, q, k] / counts[p, q]
                for r in range(max(r0, 0), min(r0 + kh, h)):
                    for s in range(max(s0, 0), min(s0 + kw, w)):
                        for k in range(c):
                            dx[b, r, s, k] += share[k]
